"""The planner in CPython: which variants cover what, the order in which a choice is made (forced, measured,
predicted), launch geometry."""
import pytest

from app.caps import DeviceCaps
from app.errors import ConvTransposeError
from app.plan import grid
from app.planner import Candidate, candidates, plan, ranked
from app.shapes import infer
from app.variants import VARIANTS

SOFTWARE = DeviceCaps(vendor="google", architecture="swiftshader", is_fallback=True,
                      features=frozenset({"subgroups", "timestamp-query"}))


def _names(geom, caps=DeviceCaps()):
    return [c.variant for c, _ in candidates(geom, caps)]


@pytest.mark.parametrize("x, w, name", [
    ((1, 2, 5), (2, 3, 3), "ncl1d_gather"),
    ((1, 2, 5, 5), (2, 3, 3, 3), "nchw2d_gather"),
    ((1, 2, 3, 3, 3), (2, 3, 2, 2, 2), "ncdhw3d_gather"),
])
def test_general_kernel_per_rank_covers_and_no_seed_name_is_a_candidate(x, w, name):
    names = _names(infer(x, w))
    assert name in names and len(names) == len(set(names))
    assert not any(VARIANTS[n].tuned_as for n in names)


def test_candidates_are_exactly_the_variants_that_configure():
    geom = infer((1, 64, 16, 16), (64, 32, 4, 4), attributes={"strides": [2, 2], "pads": [1] * 4})
    covering = {n for n, v in VARIANTS.items() if not v.tuned_as and v.why_not(geom, DeviceCaps()) is None}
    assert set(_names(geom)) == covering
    for candidate, got in candidates(geom, DeviceCaps()):
        assert got.dispatches == plan(geom, DeviceCaps(), candidate.variant, candidate.params).dispatches


def test_an_empty_input_has_one_candidate_the_fill():
    geom = infer((1, 4, 0, 5), (4, 2, 3, 3))
    assert _names(geom) == ["empty_input_fill"]
    assert plan(geom, DeviceCaps()).reason == "the only covering variant"


def test_the_model_picks_the_fastest_prediction_and_says_so():
    geom = infer((1, 64, 16, 16), (64, 32, 4, 4), attributes={"strides": [2, 2], "pads": [1] * 4})
    order = ranked(geom, SOFTWARE)
    assert [ms for _, _, ms in order] == sorted(ms for _, _, ms in order) and order[0][2] > 0
    chosen = plan(geom, SOFTWARE, tables=[])
    assert chosen.variant == order[0][0].variant or VARIANTS[chosen.variant].tuned_as == order[0][0].variant
    assert chosen.reason.startswith(f"predicted fastest of {len(order)} covering variants by the cost model")


def test_a_table_choice_for_the_shape_class_comes_before_the_model_and_measured_before_both():
    from app import tuning_tables

    geom = infer((1, 64, 16, 16), (64, 32, 4, 4), attributes={"strides": [2, 2], "pads": [1] * 4})
    slowest = ranked(geom, SOFTWARE)[-1][0].variant
    table = {"format": tuning_tables.FORMAT, "adapter": tuning_tables.adapter_key(SOFTWARE), "variants": {},
             "choices": {tuning_tables.shape_class(geom): {"variant": slowest, "params": None}}}
    chosen = plan(geom, SOFTWARE, tables=[table])
    assert chosen.variant == slowest and chosen.reason.startswith("measured fastest for its shape class")
    other = next(c for c, _ in candidates(geom, SOFTWARE) if c.variant != slowest)
    stored = plan(geom, SOFTWARE, tables=[table], measured=(Candidate(other.variant, other.params), "autotuned"))
    assert (stored.variant, stored.reason) == (other.variant, "autotuned")
    # a choice for another shape class does not fire
    elsewhere = infer((1, 64, 3, 3), (64, 32, 4, 4), attributes={"strides": [2, 2], "pads": [1] * 4})
    assert not plan(elsewhere, SOFTWARE, tables=[table]).reason.startswith("measured")


def test_a_stored_choice_that_no_longer_covers_falls_through_to_the_model():
    geom = infer((1, 2, 5, 5), (2, 3, 3, 3))
    chosen = plan(geom, SOFTWARE, tables=[], measured=(Candidate("ncl1d_gather"), "autotuned"))
    assert chosen.variant != "ncl1d_gather" and chosen.reason != "autotuned"


def test_forced_variant_must_cover_the_request():
    geom = infer((1, 2, 5, 5), (2, 3, 3, 3))
    assert plan(geom, DeviceCaps(), "nchw2d_gather").reason == "forced by the caller"
    with pytest.raises(ConvTransposeError, match="spatial axes is one of \\[1\\]"):
        plan(geom, DeviceCaps(), "ncl1d_gather")
    with pytest.raises(ConvTransposeError, match="unknown variant") as unknown:
        plan(geom, DeviceCaps(), "no_such_variant")
    assert unknown.value.field == "variant"


@pytest.mark.parametrize("count, limit", [(1, 65535), (65535, 65535), (65536, 65535), (10**6, 1000), (4, 2), (3, 2)])
def test_grid_covers_every_workgroup_within_limits(count, limit):
    gx, gy, gz = grid(count, limit)
    assert gx <= limit and gy <= limit and gz == 1
    assert gx * gy >= count and gx * (gy - 1) < count


def test_grid_refuses_what_cannot_fit():
    with pytest.raises(ConvTransposeError, match="dispatch grid"):
        grid(5, 2)


def test_dispatch_uses_the_device_limit():
    geom = infer((1, 1, 300, 300), (1, 1, 3, 3), attributes={"strides": [2, 2]})  # k3 s2: phases of unequal taps
    small = DeviceCaps(limits={"maxComputeWorkgroupsPerDimension": 1000})
    d = plan(geom, small, "nchw2d_gather").dispatches[0]
    assert d.workgroups[0] <= 1000 and d.workgroups[0] * d.workgroups[1] * 64 >= geom.y_size


@pytest.mark.parametrize("x, w, attributes, name", [
    # 3D and 1D depthwise upsamplers: the gather kernels ran them before the rank-generic grouped variant
    ((1, 64, 32, 32, 32), (64, 1, 3, 3, 3),
     {"group": 64, "strides": [2, 2, 2], "pads": [1] * 6, "output_padding": [1, 1, 1]}, "ncdhw3d_grouped_stride_phase"),
    ((1, 1024, 128), (1024, 1, 3), {"group": 1024, "strides": [2], "pads": [1, 1], "output_padding": [1]},
     "ncl1d_grouped_stride_phase"),
    ((1, 256, 128, 128), (256, 1, 4, 4), {"group": 256, "strides": [2, 2], "pads": [1] * 4},
     "nchw2d_grouped_stride_phase"),
    # 16 channels per group: blocks of 4 per invocation, under the seed's name for them (app/variants/seed.py)
    ((1, 512, 64, 64), (512, 16, 3, 3), {"group": 32, "strides": [2, 2], "pads": [1] * 4, "output_padding": [1, 1]},
     "nchw2d_grouped_stride_phase_blocked"),
    # 1D grouped with enough channels per group keeps the tiled 1D kernel; dilated, it cannot
    ((1, 64, 128), (64, 8, 4), {"group": 4, "strides": [2], "pads": [1, 1]}, "ncl1d_phase_tiled"),
    ((1, 64, 128), (64, 8, 4), {"group": 4, "strides": [2], "dilations": [2]}, "ncl1d_grouped_stride_phase"),
    # 3D grouped with many in-channels per group: no columns to write for a few out-channels per group
    ((1, 64, 8, 8, 8), (64, 4, 2, 2, 2), {"group": 2, "strides": [2, 2, 2]}, "ncdhw3d_grouped_stride_phase"),
])
def test_grouped_strided_requests_are_covered_by_the_grouped_variant(x, w, attributes, name):
    assert plan(infer(x, w, attributes=attributes), DeviceCaps(), name).variant == name


def test_grouped_variant_needs_finite_data_and_a_stride():
    from dataclasses import replace

    geom = infer((1, 8, 16), (8, 1, 3), attributes={"group": 8, "strides": [2]})
    assert "ncl1d_grouped_stride_phase" in _names(geom)
    nonfinite = _names(replace(geom, finite_data=False))
    assert "ncl1d_grouped_stride_phase" not in nonfinite and "ncl1d_gather" in nonfinite
    stride1 = infer((1, 8, 4, 4, 4), (8, 1, 3, 3, 3), attributes={"group": 8})
    assert "ncdhw3d_grouped_stride_phase" not in _names(stride1)


def test_grouped_launch_stores_wide_only_where_rows_stay_aligned():
    aligned = infer((1, 4, 16, 16), (4, 1, 4, 4), attributes={"group": 4, "strides": [2, 2], "pads": [1] * 4})
    odd = infer((1, 4, 9, 7), (4, 1, 4, 4), attributes={"group": 4, "strides": [2, 2], "pads": [1] * 4})
    name = "nchw2d_grouped_stride_phase"
    wide, narrow = plan(aligned, DeviceCaps(), name), plan(odd, DeviceCaps(), name)
    assert wide.tiles["vec"] == 4 and ["y", "read_write", "array<vec4<T>>"] in wide.dispatches[0].render_params["bindings"]
    assert narrow.tiles["vec"] == 2 and narrow.tiles["outs"] % 2 == 0  # 14 outputs per row: pairs, not quads
    stride3 = infer((1, 4, 5, 5), (4, 1, 3, 3), attributes={"group": 4, "strides": [3, 3]})
    assert plan(stride3, DeviceCaps(), name).tiles["outs"] % 3 == 0  # every invocation starts at the same phase


def test_grouped_variant_refuses_bodies_too_long_to_unroll():
    huge = infer((1, 4, 8, 8, 8), (4, 1, 15, 15, 15), attributes={"group": 4, "strides": [2, 2, 2]})
    assert "unrolled body" in VARIANTS["ncdhw3d_grouped_stride_phase"].why_not(huge, DeviceCaps())
    assert "ncdhw3d_grouped_stride_phase" not in _names(huge) and "ncdhw3d_gather" in _names(huge)


def test_a_plan_carries_its_variants_finite_data_policy():
    # app/gpu.py reads the policy from the plan alone: which variants need finite data, and what to scan.
    grouped = infer((1, 4, 9, 9), (4, 1, 3, 3), attributes={"group": 4, "strides": [2, 2]})
    dense = infer((1, 8, 4, 4), (8, 8, 3, 3), attributes={"strides": [2, 2]})
    for geom, name, finite_only, scanned in [(grouped, "nchw2d_grouped_stride_phase", True, ("w",)),
                                             (dense, "nchw2d_phase_gemm_tiled", True, ("x", "w")),
                                             (dense, "nchw2d_gather", False, ())]:
        got = plan(geom, DeviceCaps(), name)
        assert (got.finite_only, got.scanned) == (finite_only, scanned), name
        assert got.finite_only == bool(VARIANTS[name].conditions.get("finite_data"))


@pytest.mark.parametrize("caps, ranking, moved", [
    (SOFTWARE, {"model": 3, "own": 10}, True),
    (SOFTWARE, None, False),
    (DeviceCaps(vendor="nvidia", architecture="hopper"), None, False)], ids=["own-measured-faster", "software", "h200"])
def test_adaptations_pool_offers_a_kernel_in_its_own_tiles_first_where_its_class_measured_them_faster(
        monkeypatch, caps, ranking, moved):
    """A model's `tile_ranking` that found a kernel's own tiles faster on more layers where it ranked other tiles
    ahead (10 of 13, as the software model's was before its kernels' overheads were fitted) moves each kernel's own
    tiles ahead of its grid tiles, into the kernel's place. The software table's own (2 and 2 since) and the H200's
    model, with no such measurement, keep the predicted order."""
    from app import planner, tuning_tables

    if ranking is not None:
        table_model = tuning_tables.cost_model
        monkeypatch.setattr(tuning_tables, "cost_model", lambda c: dict(table_model(c), tile_ranking=ranking))
    geom = infer((1, 384, 1, 1), (384, 192, 3, 3), attributes={"strides": [3, 3]})
    assert planner.own_tiles_first(caps) is moved
    rows = ranked(geom, caps, grid=planner.GRID)
    chosen = plan(geom, caps)
    alts = planner.alternatives(geom, caps, chosen, len(rows))
    kernels = [a["variant"] for a in alts]
    order = list(dict.fromkeys(kernels))
    # the kernels keep their order; the chosen one's own tiles are the first pick, not in the pool, so its other tiles
    # take a later place where its own moved first
    others = [v for v in order if v != chosen.variant]
    assert others == list(dict.fromkeys(c.variant for c, _, _ in rows if c.variant in others))
    firsts = {v: next(a for a in alts if a["variant"] == v) for v in order}
    if moved:
        own = [v for v in order if any(a["origin"] in ("defaults", "table") for a in alts if a["variant"] == v)]
        assert all(firsts[v]["origin"] in ("defaults", "table") for v in own)
        # here the model ranks a kernel's grid tiles ahead of its defaults: the case that moves
        assert any(c.origin == "grid" for c, _, _ in rows[:3])
    else:
        assert [a["predicted_ms"] for a in alts] == sorted(a["predicted_ms"] for a in alts)
