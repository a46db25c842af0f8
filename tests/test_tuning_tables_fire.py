"""Every entry of every shipped tuning table fires on the layer it was measured on: a measured choice is what the
planner takes for that layer (and says so), and a tile entry is what that variant plans with there. Tables are
keyed by shape class, never by the variant some rule happened to pick, so no entry can be orphaned silently."""
import json
from pathlib import Path

import pytest

from app import tuning_tables
from app.caps import DeviceCaps
from app.planner import plan
from app.shapes import infer
from tools.wgsl.matrix import devices

ROOT = Path(__file__).resolve().parents[1]
TABLES = sorted((ROOT / "tuning").glob("*.json"))
# the tuned tiers, and the layers kept to calibrate software adapters (tuning/runs: spent fresh seeds)
CASES = [c for f in ("bench.json", "tuning/runs/calibration.json") for c in json.loads((ROOT / f).read_text())["cases"]]


def _caps(table: dict) -> DeviceCaps:
    """A device of the shader matrix that is the table's adapter."""
    return next(caps for caps in devices().values() if tuning_tables.adapter_key(caps) == table["adapter"])


def _geom(layer: str, dtype: str = "float32"):
    """A layer named `tier/case[/dtype]` (as the tables record them) or `case` of the tuned tiers."""
    parts = layer.split("/")
    if len(parts) >= 2:
        tier, name = parts[0], parts[1]
        dtype = parts[2] if len(parts) > 2 else dtype
        case = next(c for c in CASES if c["tier"] == tier and c["name"] == name)
    else:
        case = next(c for c in CASES if c["name"] == parts[0] and c["tier"] in ("full", "small"))
    b = [case["w"][1] * case["attributes"].get("group", 1)] if case.get("bias") else None
    return infer(case["x"], case["w"], b, case["attributes"], {n: dtype for n in ("x", "w", "b")})


def _choices():
    for path in TABLES:
        table = json.loads(path.read_text())
        for cls, entry in table.get("choices", {}).items():
            for layer in entry["cases"]:
                yield pytest.param(table, cls, entry, layer, id=f"{path.stem}:{layer}")


def _tiles():
    for path in TABLES:
        table = json.loads(path.read_text())
        for variant, classes in table.get("variants", {}).items():
            for cls, entry in classes.items():
                for layer in entry["cases"]:
                    yield pytest.param(table, variant, cls, entry, layer, id=f"{path.stem}:{variant}:{layer}")


def test_there_are_tables_with_entries():
    assert TABLES and any(json.loads(p.read_text()).get("choices") for p in TABLES)


@pytest.mark.parametrize("table, cls, entry, layer", list(_choices()))
def test_every_measured_choice_fires_on_its_layer(table, cls, entry, layer):
    caps, geom = _caps(table), _geom(layer)
    assert tuning_tables.shape_class(geom) == cls
    chosen = plan(geom, caps)
    assert chosen.reason.startswith("measured fastest for its shape class"), chosen.reason
    assert entry["variant"] in (chosen.variant, tuning_tables_successor(chosen.variant))


def tuning_tables_successor(name: str) -> str:
    from app.variants import VARIANTS

    return VARIANTS[name].tuning_name


@pytest.mark.parametrize("table, variant, cls, entry, layer", list(_tiles()))
def test_every_tile_entry_fires_on_its_layer(table, variant, cls, entry, layer):
    caps, geom = _caps(table), _geom(layer)
    assert tuning_tables.shape_class(geom) == cls
    tiles = plan(geom, caps, variant).tiles
    assert {k: tiles[k] for k in entry["params"]} == entry["params"]


@pytest.mark.parametrize("path", TABLES, ids=[p.stem for p in TABLES])
def test_every_table_has_a_cost_model_calibrated_at_a_recorded_revision(path):
    model = json.loads(path.read_text())["cost_model"]
    assert {"resident", "launch_ms", "bytes_per_ms", "invocation_ms", "rates"} <= set(model)
    assert model["rates"] and all(r > 0 for r in model["rates"].values())
    assert len(model["calibrated_on"]["revision"]) == 40


def _runs_kept(path: Path) -> bool:
    model = json.loads(path.read_text())["cost_model"]
    runs = model["calibrated_on"]["runs"] + model.get("tile_ranking", {}).get("runs", [])
    return all((ROOT / f).exists() for run in runs for f in run.split(":"))


REFITTABLE = [p for p in TABLES if _runs_kept(p)]  # the H200's sweeps were measured before runs were kept


def test_the_software_table_keeps_the_runs_its_model_was_fitted_to():
    assert [p.stem for p in REFITTABLE] == ["google-swiftshader"]


@pytest.mark.parametrize("path", REFITTABLE, ids=lambda p: p.stem)
def test_a_cost_model_whose_runs_are_kept_is_their_fit(path):
    """A table's model is what tools/cost_model_fit.py fits to the runs it names, so that it can be refitted and
    extended, and no hand edit of a constant passes."""
    from tools.cost_model_fit import measured
    from app import cost_model

    table = json.loads(path.read_text())
    model = table["cost_model"]
    runs = [":".join(str(ROOT / f) for f in run.split(":")) for run in model["calibrated_on"]["runs"]]
    rows = measured(runs, _caps(table))
    assert len(rows) == model["calibrated_on"]["rows"]
    fitted = cost_model.fit([(r["features"], r["ms"]) for r in rows], simd=model["simd"])
    for name in cost_model.RANGES:
        assert fitted[name] == pytest.approx(model[name], rel=1e-9), name
    assert fitted["rates"] == pytest.approx(model["rates"], rel=1e-9)
    assert fitted["overheads"] == pytest.approx(model["overheads"], rel=1e-9)
    assert model["simd"] == _caps(table).subgroup_min_size  # the adapter's subgroup size, as the fit tool reads it


@pytest.mark.parametrize("path", [p for p in REFITTABLE if "tile_ranking" in json.loads(p.read_text())["cost_model"]],
                         ids=lambda p: p.stem)
def test_a_tile_ranking_is_what_its_runs_measure_of_the_model(path):
    """The counts adaptation's pool reads (app/planner.py own_tiles_first) are tools/cost_model_fit.py's tile_ranking
    of the runs the table names, under the table's model."""
    from tools.cost_model_fit import measured, tile_ranking

    table = json.loads(path.read_text())
    kept = table["cost_model"]["tile_ranking"]
    runs = [":".join(str(ROOT / f) for f in run.split(":")) for run in kept["runs"]]
    counts = tile_ranking(measured(runs, _caps(table)), table["cost_model"])
    assert counts == {"model": kept["model"], "own": kept["own"]}
