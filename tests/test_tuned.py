"""Tuning tables in CPython: which table applies to which adapter, what the planner then renders, fallbacks,
the tuner's candidate grids and its per-class choice."""
import json

import numpy as np
import pytest

from app import tuner, tuning_tables
from app.caps import DeviceCaps
from app.errors import ConvTransposeError
from app.kernel import signature
from app.planner import plan
from app.shapes import infer

SWIFTSHADER = DeviceCaps(features=frozenset({"timestamp-query", "subgroups"}), vendor="google",
                         architecture="swiftshader", is_fallback=True)
OTHER_GPU = DeviceCaps(features=frozenset({"timestamp-query"}), vendor="nvidia", architecture="hopper",
                       device="h200")
DCGAN = infer((1, 64, 4, 4), (64, 32, 4, 4), None, {"strides": [2, 2], "pads": [1, 1, 1, 1]})
TUNED_TILES = {"tile_m": 32, "tile_n": 16, "thread_m": 4, "thread_n": 4}


def table(caps, variant, geom, params):
    return {"format": tuning_tables.FORMAT, "adapter": tuning_tables.adapter_key(caps),
            "variants": {variant: {tuning_tables.shape_class(geom): {"params": params}}}}


@pytest.fixture
def tables(monkeypatch):
    """An isolated list of tables in use in place of the shipped ones (and their own revision)."""
    loaded: list[dict] = []
    monkeypatch.setattr(tuning_tables, "_tables", loaded)
    monkeypatch.setattr(tuning_tables, "_revision", 0)
    return loaded


def main_params(geom, caps, variant="nchw2d_phase_gemm_tiled"):
    """The main pass's render params of `variant`'s plan (forced: the table's tiles apply all the same)."""
    return plan(geom, caps, variant).dispatches[0].render_params


def test_a_matching_table_changes_the_rendered_tiles(tables):
    default = main_params(DCGAN, SWIFTSHADER)
    tables.append(table(SWIFTSHADER, "nchw2d_phase_gemm_tiled", DCGAN, TUNED_TILES))
    got = main_params(DCGAN, SWIFTSHADER)
    assert {k: got[k] for k in TUNED_TILES} == TUNED_TILES != {k: default[k] for k in TUNED_TILES}


def test_another_adapter_or_shape_class_keeps_the_defaults(tables):
    tables.append(table(SWIFTSHADER, "nchw2d_phase_gemm_tiled", DCGAN, TUNED_TILES))
    no_tables_other = tuner.defaults("nchw2d_phase_gemm_tiled", DCGAN, OTHER_GPU)
    assert {k: main_params(DCGAN, OTHER_GPU)[k] for k in TUNED_TILES} == {k: no_tables_other[k] for k in TUNED_TILES}
    bigger = infer((1, 512, 4, 4), (512, 256, 4, 4), None, {"strides": [2, 2], "pads": [1, 1, 1, 1]})
    assert tuning_tables.shape_class(bigger) != tuning_tables.shape_class(DCGAN)
    assert tuning_tables.lookup("nchw2d_phase_gemm_tiled", bigger, SWIFTSHADER) is None
    # Same vendor and architecture but a different fallback flag is a different adapter.
    assert tuning_tables.select(DeviceCaps(vendor="google", architecture="swiftshader")) is None


def test_params_the_variant_refuses_fall_back_to_the_defaults(tables):
    broken = {"tile_m": 16, "tile_n": 16, "thread_m": 8, "thread_n": 8}  # tile_n / thread_n = 2: not a multiple of 4
    assert tuner.refusal("nchw2d_phase_gemm_tiled", tuner.defaults("nchw2d_phase_gemm_tiled", DCGAN, SWIFTSHADER)
                         | broken, DCGAN, SWIFTSHADER)
    tables.append(table(SWIFTSHADER, "nchw2d_phase_gemm_tiled", DCGAN, broken))
    default = tuner.defaults("nchw2d_phase_gemm_tiled", DCGAN, SWIFTSHADER)
    assert {k: main_params(DCGAN, SWIFTSHADER)[k] for k in broken} == {k: default[k] for k in broken}


def test_a_table_of_another_format_is_ignored(tables):
    tables.append(table(SWIFTSHADER, "nchw2d_phase_gemm_tiled", DCGAN, TUNED_TILES) | {"format": 999})
    assert tuning_tables.select(SWIFTSHADER) is None


def test_forced_params_win_over_the_table_for_that_plan_only(tables):
    tables.append(table(SWIFTSHADER, "nchw2d_phase_gemm_tiled", DCGAN, TUNED_TILES))
    forced = {"tile_m": 16, "tile_n": 32, "thread_m": 8, "thread_n": 2}
    got = plan(DCGAN, SWIFTSHADER, "nchw2d_phase_gemm_tiled", forced).dispatches[0].render_params
    assert {k: got[k] for k in forced} == forced
    assert {k: main_params(DCGAN, SWIFTSHADER)[k] for k in TUNED_TILES} == TUNED_TILES
    with pytest.raises(ConvTransposeError, match="forced params need a forced variant"):
        plan(DCGAN, SWIFTSHADER, params=forced)


def test_explicit_tables_replace_the_ones_in_use(tables):
    tuned = [table(SWIFTSHADER, "nchw2d_phase_gemm_tiled", DCGAN, TUNED_TILES)]
    got = plan(DCGAN, SWIFTSHADER, "nchw2d_phase_gemm_tiled", tables=tuned).dispatches[0].render_params
    assert {k: got[k] for k in TUNED_TILES} == TUNED_TILES
    tables.extend(tuned)
    default = tuner.defaults("nchw2d_phase_gemm_tiled", DCGAN, SWIFTSHADER)
    got = plan(DCGAN, SWIFTSHADER, "nchw2d_phase_gemm_tiled", tables=[]).dispatches[0].render_params
    assert {k: got[k] for k in TUNED_TILES} == {k: default[k] for k in TUNED_TILES} != TUNED_TILES


def test_the_tables_revision_and_forced_params_key_the_call_signature(tables):
    arrays = {"x": np.zeros((1, 64, 4, 4), np.float32), "w": np.zeros((64, 32, 4, 4), np.float32)}
    key = lambda **kw: signature(arrays, {"strides": [2, 2]}, "nchw2d_phase_gemm_tiled", True, **kw)  # noqa: E731
    before = key()
    assert key() == before and key(tables=[]) != before
    assert key(params=TUNED_TILES) not in (before, key(params={"tile_m": 16}))
    tuning_tables.use_table(table(SWIFTSHADER, "nchw2d_phase_gemm_tiled", DCGAN, TUNED_TILES))
    assert key() != before and tuning_tables.revision() == "1"
    assert key(tables=[]) == signature(arrays, {"strides": [2, 2]}, "nchw2d_phase_gemm_tiled", True, tables=[])


@pytest.mark.parametrize("variant, x, w, attributes", [
    ("stride1_implicit_gemm", (1, 32, 8, 8), (32, 32, 3, 3), {"pads": [1, 1, 1, 1]}),
    ("conv1x1_gemm_tiled_reg", (1, 64, 8, 8), (64, 32, 1, 1), {}),
])
def test_other_tunable_variants_follow_their_table(tables, variant, x, w, attributes):
    geom = infer(x, w, None, attributes)
    grid = tuner.grids()[variant]
    options = tuner.candidates(variant, grid, geom, SWIFTSHADER)
    pick = options[-1]
    assert pick != options[0]
    tables.append(table(SWIFTSHADER, variant, geom, pick))
    got = main_params(geom, SWIFTSHADER, variant)
    assert {k: got[k] for k in pick} == pick


def test_every_grid_names_a_tunable_variant_and_candidates_respect_refusals():
    grids = tuner.grids()
    assert set(grids) <= set(tuner.tunable_variants())
    options = tuner.candidates("nchw2d_phase_gemm_tiled", grids["nchw2d_phase_gemm_tiled"], DCGAN, SWIFTSHADER)
    assert options[0] == tuner.defaults("nchw2d_phase_gemm_tiled", DCGAN, SWIFTSHADER)
    assert len({json.dumps(o, sort_keys=True) for o in options}) == len(options) > 4
    assert all(tuner.refusal("nchw2d_phase_gemm_tiled", o, DCGAN, SWIFTSHADER) is None for o in options)


D = json.dumps({"taps": 2, "phases": 8, "positions": 4, "t": 0})  # a case's defaults, as the tuner keys them


def result(case, cls, medians, variant="v"):
    return {"case": case, "variant": variant, "class": cls, "defaults": D, "medians": medians, "rejected": []}


def test_best_per_class_keeps_only_the_grid_params():
    best = json.dumps({"taps": 2, "phases": 8, "positions": 8})
    won = tuner.best_per_class([result("c1", "k", {D: 10.0, best: 4.0}) | {"keys": ["positions"]}])
    assert won["v"]["k"]["params"] == {"positions": 8}
    # a declared configuration's winner keeps what it changes from the defaults beyond the grid's keys
    declared = json.dumps({"taps": 2, "phases": 4, "positions": 8})
    won = tuner.best_per_class([result("c1", "k", {D: 10.0, declared: 4.0}) | {"keys": ["positions"]}])
    assert won["v"]["k"]["params"] == {"phases": 4, "positions": 8}


def test_best_per_class_needs_a_clear_win_over_the_defaults():
    a = json.dumps({"t": 1})
    won = tuner.best_per_class([result("c1", "k", {D: 10.0, a: 5.0}), result("c2", "k", {D: 4.0, a: 2.0})])
    assert won["v"]["k"]["params"] == {"t": 1} and won["v"]["k"]["relative_time"] == pytest.approx(0.5, abs=1e-4)
    # a tie on one case of the class: the defaults stay (the one rule of app/class_choice.py)
    assert tuner.best_per_class([result("c1", "k", {D: 10.0, a: 5.0}), result("c2", "k", {D: 4.0, a: 4.0})]) == {}
    assert tuner.best_per_class([result("c1", "k", {D: 10.0, a: 9.8})]) == {}  # within the margin: keep defaults
    assert tuner.best_per_class([result("c1", "k", {D: 10.0, a: 12.0})]) == {}


def choice_table(caps, geom, variant):
    return {"format": tuning_tables.FORMAT, "adapter": tuning_tables.adapter_key(caps), "variants": {},
            "choices": {tuning_tables.shape_class(geom): {"variant": variant, "params": None}}}


def test_a_table_choice_for_a_shape_class_applies_on_its_adapter_only(tables):
    tables.append(choice_table(OTHER_GPU, DCGAN, "nchw2d_col2im"))
    chosen = plan(DCGAN, OTHER_GPU)
    assert chosen.variant == "nchw2d_col2im" and chosen.reason.startswith("measured fastest for its shape class")
    assert not plan(DCGAN, SWIFTSHADER).reason.startswith("measured")  # another adapter: the cost model
    assert not plan(infer((1, 2, 5), (2, 3, 3)), OTHER_GPU).reason.startswith("measured")  # another class


def test_a_choice_that_does_not_cover_the_request_is_ignored(tables):
    tables.append(choice_table(OTHER_GPU, DCGAN, "ncdhw3d_col2im"))
    chosen = plan(DCGAN, OTHER_GPU)
    assert chosen.variant != "ncdhw3d_col2im" and not chosen.reason.startswith("measured")


def chosen(case, cls, times, planned="p"):
    return {"case": case, "variant": planned, "class": cls, "variant_ms": times}


def test_a_variant_must_win_on_every_case_of_its_class():
    wins = tuner.best_variant_per_class([chosen("c1", "k", {"p": 1.0, "a": 0.5, "b": 0.8}),
                                          chosen("c2", "k", {"p": 2.0, "a": 1.0, "b": 1.0})])
    assert wins["k"]["variant"] == "a" and wins["k"]["params"] is None
    assert wins["k"]["relative_time"] == pytest.approx(0.5)
    mixed = [chosen("c1", "k", {"p": 1.0, "a": 0.5}), chosen("c2", "k", {"p": 1.0, "a": 0.97})]
    assert tuner.best_variant_per_class(mixed) == {}  # within the margin on one case: the model stays


def test_a_class_choice_is_measured_against_each_cases_own_planner_choice():
    rs = [chosen("c1", "k", {"p": 1.0, "q": 0.5, "a": 0.1}), chosen("c2", "k", {"p": 2.0, "q": 1.0, "a": 0.5}, planned="q")]
    assert tuner.best_variant_per_class(rs)["k"]["variant"] == "a"
    assert tuner.best_variant_per_class(rs)["k"]["relative_time"] == pytest.approx((0.1 * 0.5) ** 0.5, abs=1e-4)


def test_the_tuner_measures_against_no_table(tables):
    tables.append(choice_table(OTHER_GPU, DCGAN, "nchw2d_col2im"))
    assert plan(DCGAN, OTHER_GPU).variant == "nchw2d_col2im"
    assert not plan(DCGAN, OTHER_GPU, tables=tuner.NO_TABLES).reason.startswith("measured")


def test_the_benchmarks_view_shows_a_table_with_tiles_and_a_variant_choice():
    """web/views/tune-rows.mjs on a table made by the tuner's own functions: one row per tile entry and per shape
    class's variant choice (a choice is class -> entry; the view once read it one level deeper and threw)."""
    import subprocess

    from app.contract import ROOT

    tiles = json.dumps({"t": 1})
    made = {"variants": tuner.best_per_class([result("c1", "k", {D: 10.0, tiles: 5.0})]),
            "choices": tuner.best_variant_per_class([chosen("c1", "k", {"p": 1.0, "a": 0.5})])}
    script = (f"import({json.dumps((ROOT / 'web' / 'views' / 'tune-rows.mjs').as_uri())})"
              f".then((m) => console.log(JSON.stringify([m.tuneRows({json.dumps(made)}), "
              f"m.tuneRows({{variants: {{}}, choices: {{}}}})])))")
    rows, empty = json.loads(subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True).stdout)
    assert rows == [["v", "k", '{"t":1}', "0.50x", "c1"], ["planner's choice", "k", "use a", "0.50x", "c1"]]
    assert len(empty) == 1 and "nothing beat them" in empty[0][2]
