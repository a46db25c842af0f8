"""The seed package's contract names: its 15 templates exist with their current digests in metadata.json, each
missing one as a thin entry over the rank-generic template it became (the same WGSL), and its four variants
are listed and forceable, each its successor under the seed's name, reported by the planner where it applies."""
import hashlib
import json
import re

import pytest

from app.caps import DeviceCaps
from app.errors import ConvTransposeError
from app.metadata import METADATA_PATH
from app.planner import Candidate, candidates, plan
from app.render import TEMPLATES, render
from app.shapes import infer
from app.variants import VARIANTS
from tools.wgsl.matrix import devices

SEED_TEMPLATES = (
    "conv-1x1-gemm-tiled-reg", "conv-1x1-gemm-tiled", "conv-1x1-subgroup-matrix", "conv-transpose-empty-input",
    "conv-transpose1d-ncl", "conv-transpose1d-phase-tiled", "conv-transpose2d-col2im",
    "conv-transpose2d-grouped-stride-phase-blocked", "conv-transpose2d-grouped-stride-phase",
    "conv-transpose2d-nchw", "conv-transpose2d-phase-gemm-tiled", "conv-transpose2d-weight-reorder",
    "conv-transpose3d-col2im", "conv-transpose3d-ncdhw", "conv-transpose3d-weight-reorder")
# The seed's templates merged into rank-generic ones: the generic template and the params the entry fixes.
ENTRIES = {
    "conv-transpose2d-col2im": ("conv-transpose-col2im", {"rank": 2}),
    "conv-transpose3d-col2im": ("conv-transpose-col2im", {"rank": 3}),
    "conv-transpose2d-weight-reorder": ("conv-transpose-weight-reorder", {}),
    "conv-transpose3d-weight-reorder": ("conv-transpose-weight-reorder", {}),
    "conv-transpose2d-grouped-stride-phase": ("conv-transpose-grouped-stride-phase", {"rank": 2}),
    "conv-transpose2d-grouped-stride-phase-blocked": ("conv-transpose-grouped-stride-phase", {"rank": 2}),
    "conv-1x1-subgroup-matrix": ("conv-transpose-phase-gemm-sgmat", {"va": 1}),
}
# seed variant -> (successor, what the seed's metadata covered beyond it)
SEED_VARIANTS = {
    "ncdhw3d_implicit_sgmat": ("stride1_halo_sgmat", {"rank": [3], "bias": False}),
    "ncdhw3d_implicit_sgmat_bias": ("stride1_halo_sgmat", {"rank": [3], "bias": True}),
    "nchw2d_grouped_stride_phase_blocked": ("nchw2d_grouped_stride_phase", {"rank": [2], "bias": False}),
    "nchw2d_grouped_stride_phase_blocked_bias": ("nchw2d_grouped_stride_phase", {"rank": [2], "bias": True}),
}
F16 = {"x": "float16", "w": "float16", "b": "float16"}
# 3D stride-1 at 1M outputs with 256 channels: a shape the halo kernel won in session 11 (bench.json `large` stride1_3d,
# whose stride-phase GEMM fills the GPU with tall tiles, never did)
STRIDE1_3D = ((1, 256, 16, 16, 16), (256, 256, 3, 3, 3), {"pads": [1] * 6})
GROUPED_G32 = ((1, 512, 64, 64), (512, 16, 3, 3), {"group": 32, "strides": [2, 2], "pads": [1] * 4})  # no table choice
DEPTHWISE = ((1, 64, 32, 32), (64, 1, 4, 4), {"group": 64, "strides": [2, 2], "pads": [1] * 4})
# (request, bias) -> the seed variant that covers it, on the H200 (halo: float16 only there; autotuning's candidate)
COVERED = {
    "ncdhw3d_implicit_sgmat": (STRIDE1_3D, False),
    "ncdhw3d_implicit_sgmat_bias": (STRIDE1_3D, True),
    "nchw2d_grouped_stride_phase_blocked": (GROUPED_G32, False),
    "nchw2d_grouped_stride_phase_blocked_bias": (GROUPED_G32, True),
}


def _geom(request, bias, dtypes=F16):
    x, w, attrs = request
    return infer(x, w, (w[1] * attrs.get("group", 1),) if bias else None, attrs,
                 {n: d for n, d in dtypes.items() if bias or n != "b"})


def _sources(chosen):
    return [render(d.template, d.render_params) for d in chosen.weight_passes + chosen.dispatches]


def _metadata():
    return json.loads(METADATA_PATH.read_text())


def test_every_seed_template_is_present_with_its_current_digest():
    digests = {t["file"]: t["sha256"] for t in _metadata()["templates"]}
    for name in SEED_TEMPLATES:
        path = TEMPLATES / f"{name}.wgsl.jinja"
        assert path.is_file(), name
        assert digests[path.name] == hashlib.sha256(path.read_bytes()).hexdigest(), name


def test_every_seed_template_is_rendered_by_a_variant():
    listed = {t["file"] for v in _metadata()["variants"] for t in v["templates"]}
    assert {f"{name}.wgsl.jinja" for name in SEED_TEMPLATES} <= listed


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_each_seed_entry_says_what_it_covers_and_includes_its_generic_template(entry):
    generic, fixed = ENTRIES[entry]
    text = (TEMPLATES / f"{entry}.wgsl.jinja").read_text()
    assert text.startswith("{#- The seed's "), entry
    assert "Used by " in " ".join(text.split("-#}")[0].split()), entry
    included = re.fullmatch(r'.*\{%- include "([^"]+)" -%\}', text.strip(), re.S).group(1)
    if entry.endswith("-blocked"):  # the 2D entry fixes the rank
        assert included == "conv-transpose2d-grouped-stride-phase.wgsl.jinja"
    else:
        assert included == f"{generic}.wgsl.jinja"
        assert all(f"{{%- set {name} = {value} %}}" in text for name, value in fixed.items()), entry


# entry -> (request, bias, dtypes, device, variant) whose plan renders through it
THROUGH = {
    "conv-transpose2d-col2im": (((1, 4, 5, 5), (4, 3, 3, 3), {"strides": [2, 2]}), True, {}, "swiftshader",
                                "nchw2d_col2im"),
    "conv-transpose3d-col2im": (((1, 4, 3, 3, 3), (4, 3, 2, 2, 2), {}), True, {}, "swiftshader", "ncdhw3d_col2im"),
    "conv-transpose2d-grouped-stride-phase": (DEPTHWISE, False, F16, "h200", "nchw2d_grouped_stride_phase"),
    "conv-transpose2d-grouped-stride-phase-blocked": (GROUPED_G32, True, F16, "h200", "nchw2d_grouped_stride_phase"),
    # 60 out-channels: packed rows of 16-byte vectors (vs) do not divide them, so va's scalar-staged kernel runs
    "conv-1x1-subgroup-matrix": (((1, 64, 32, 32), (64, 60, 1, 1), {}), False, F16, "h200", "phase_gemm_sgmat"),
}
THROUGH["conv-transpose2d-weight-reorder"] = THROUGH["conv-transpose2d-col2im"]
THROUGH["conv-transpose3d-weight-reorder"] = THROUGH["conv-transpose3d-col2im"]


def _passes_through(entry):
    request, bias, dtypes, device, variant = THROUGH[entry]
    chosen = plan(_geom(request, bias, dtypes or {"x": "float32", "w": "float32", "b": "float32"}),
                  devices()[device], variant)
    return [d for d in chosen.weight_passes + chosen.dispatches if d.template == f"{entry}.wgsl.jinja"]


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_each_seed_entry_renders_the_generic_templates_wgsl_byte_for_byte(entry):
    generic, fixed = ENTRIES[entry]
    passes = _passes_through(entry)
    assert passes, f"no plan renders through {entry}"
    for d in passes:
        assert {k: d.render_params[k] for k in fixed} == fixed  # the variant renders the entry at the params it fixes
        assert render(d.template, d.render_params) == render(f"{generic}.wgsl.jinja", d.render_params)


def test_the_blocked_entry_refuses_one_channel_per_invocation():
    d = plan(_geom(DEPTHWISE, False), devices()["h200"], "nchw2d_grouped_stride_phase").dispatches[0]
    assert d.template == "conv-transpose2d-grouped-stride-phase.wgsl.jinja" and d.render_params["chans"] == 1
    with pytest.raises(Exception, match="channel_blocks_need_chans_of_2_or_more"):
        render("conv-transpose2d-grouped-stride-phase-blocked.wgsl.jinja", d.render_params)


@pytest.mark.parametrize("name", sorted(SEED_VARIANTS))
def test_each_seed_variant_is_listed_with_its_templates_and_requirements(name):
    successor, seed_conditions = SEED_VARIANTS[name]
    listed = {v["name"]: v for v in _metadata()["variants"]}
    assert listed[name]["templates"] == listed[successor]["templates"]
    shapes = listed[name]["requires"]["shapes"]
    theirs = listed[successor]["requires"]["shapes"]
    assert {k: shapes[k] for k in theirs} == theirs and {k: shapes[k] for k in seed_conditions} == seed_conditions
    assert listed[name]["requires"]["features"] == listed[successor]["requires"]["features"]


@pytest.mark.parametrize("name", sorted(SEED_VARIANTS))
def test_each_seed_variants_notes_say_what_it_covers(name):
    successor, conditions = SEED_VARIANTS[name]
    summary = VARIANTS[name].summary
    assert successor in summary, summary
    assert ("3D" if conditions["rank"] == [3] else "2D") in summary
    assert ("with bias" in summary or "bias fused" in summary) == conditions["bias"], summary
    if name.startswith("nchw2d_grouped_stride_phase_blocked"):
        assert "block" in summary and "output channels" in summary


@pytest.mark.parametrize("name", sorted(SEED_VARIANTS))
def test_each_seed_variant_is_forceable_and_renders_its_successors_wgsl(name):
    successor, _ = SEED_VARIANTS[name]
    request, bias = COVERED[name]
    geom, caps = _geom(request, bias), devices()["h200"]
    seed, theirs = plan(geom, caps, name), plan(geom, caps, successor)
    assert seed.variant == name and seed.reason == "forced by the caller"
    assert _sources(seed) == _sources(theirs)
    assert [d.template for d in seed.dispatches] == [d.template for d in theirs.dispatches]
    assert (seed.tiles, seed.scratch, seed.prepared) == (theirs.tiles, theirs.scratch, theirs.prepared)


@pytest.mark.parametrize("name", sorted(SEED_VARIANTS))
def test_a_seed_variant_refuses_what_the_seed_did_not_cover(name):
    request, bias = COVERED[name]
    with pytest.raises(ConvTransposeError, match="the request has a bias"):
        plan(_geom(request, not bias), devices()["h200"], name)


def test_forced_on_a_software_adapter_a_blocked_seed_variant_takes_the_smallest_block():
    geom, caps = _geom(GROUPED_G32, False, {}), devices()["swiftshader"]
    assert plan(geom, caps, "nchw2d_grouped_stride_phase").tiles["chans"] == 1  # the successor's software defaults
    seed = plan(geom, caps, "nchw2d_grouped_stride_phase_blocked")
    assert seed.tiles["chans"] == 2
    assert _sources(seed) == _sources(plan(geom, caps, "nchw2d_grouped_stride_phase", {"chans": 2}))


def test_the_blocked_seed_variants_refuse_plans_without_channel_blocks():
    with pytest.raises(ConvTransposeError, match="makes no channel blocks"):
        plan(_geom(DEPTHWISE, False), devices()["h200"], "nchw2d_grouped_stride_phase_blocked")


HALO_SEEDS = sorted(name for name, (successor, _) in SEED_VARIANTS.items() if successor == "stride1_halo_sgmat")


def _chosen(geom, caps, successor):
    """The planner's plan where its choice is the successor (as a stored measurement)."""
    return plan(geom, caps, tables=[], measured=(Candidate(successor), "measured"))


@pytest.mark.parametrize("name", sorted(SEED_VARIANTS))
def test_the_planner_reports_the_seed_name_where_it_applies(name):
    successor, _ = SEED_VARIANTS[name]
    request, bias = COVERED[name]
    geom, caps = _geom(request, bias), devices()["h200"]
    chosen = _chosen(geom, caps, successor)
    assert chosen.variant == name
    assert _sources(chosen) == _sources(plan(geom, caps, successor))


@pytest.mark.parametrize("request_, caps, name", [
    (DEPTHWISE, "h200", "nchw2d_grouped_stride_phase"),  # one channel per group: no blocks
    (GROUPED_G32, "swiftshader", "nchw2d_grouped_stride_phase"),  # software: one channel per invocation
])
def test_the_planner_keeps_the_successors_name_where_no_seed_name_applies(request_, caps, name):
    assert _chosen(_geom(request_, False), devices()[caps], name).variant == name


def test_the_halo_is_a_candidate_under_its_own_name_and_no_seed_name_is():
    request = ((1, 256, 64, 64), (256, 256, 3, 3), {"pads": [1] * 4})
    names = [c.variant for c, _ in candidates(_geom(request, False), devices()["h200"])]
    assert "stride1_halo_sgmat" in names and not set(SEED_VARIANTS) & set(names)


def test_a_table_choice_of_the_successor_applies_under_a_seed_name():
    from app import tuning_tables

    request = ((1, 64, 32, 32), (64, 16, 4, 4), {"group": 4, "strides": [2, 2], "pads": [1] * 4})
    geom, caps = _geom(request, False), devices()["h200"]
    table = {"format": tuning_tables.FORMAT, "adapter": tuning_tables.adapter_key(caps), "variants": {},
             "choices": {tuning_tables.shape_class(geom): {"variant": "nchw2d_grouped_stride_phase", "params": None}}}
    chosen = plan(geom, caps, tables=[table])
    assert chosen.variant == "nchw2d_grouped_stride_phase_blocked" and chosen.tiles["chans"] > 1
    assert chosen.reason.startswith("measured fastest for its shape class")


def test_swiftshader_caps_are_software():
    assert devices()["swiftshader"].is_software and not DeviceCaps().is_software
