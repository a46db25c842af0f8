"""The one rule every writer of tuning-table entries applies (app/class_choice.py): the tuner's tiles and variant
choices and the fit tool's choices replace an incumbent by the same margin and criterion."""
import json

import pytest

from app import class_choice, tuner
from app.cost_model import Features
from tools import cost_model_fit


def test_a_candidate_replaces_the_incumbent_only_past_the_margin_on_every_layer():
    assert class_choice.replaces([0.5, 1 - class_choice.MARGIN - 0.01])
    assert not class_choice.replaces([0.5, 1 - class_choice.MARGIN])
    assert not class_choice.replaces([])


def test_the_geometric_mean_picks_among_several_and_incumbents_never_compete():
    layers = [{"class": "k", "incumbent": "p", "ms": {"p": 1.0, "a": 0.5, "b": 0.6}},
              {"class": "k", "incumbent": "a", "ms": {"p": 2.0, "a": 1.0, "b": 0.8}}]
    won = class_choice.best_per_class(layers)
    assert won["k"]["winner"] == "b" and won["k"]["relative_time"] == pytest.approx((0.6 * 0.8) ** 0.5, abs=1e-4)


def test_min_gain_counts_a_small_saving_as_none():
    layers = [{"class": "k", "incumbent": "p", "ms": {"p": 1.0, "a": 0.9}}]
    assert class_choice.best_per_class(layers)["k"]["winner"] == "a"
    assert class_choice.best_per_class(layers, min_gain_ms=0.2) == {}


def test_the_tuner_and_the_fit_tool_choose_alike(tmp_path):
    """The same measured times (the planner's or model's pick p, and a, b) make the same choice in both writers."""
    times = [{"p": 1.0, "a": 0.5, "b": 0.97}, {"p": 2.0, "a": 1.8, "b": 1.0}]
    by_tuner = tuner.best_variant_per_class([{"case": f"c{i}", "variant": "p", "class": "k", "variant_ms": t}
                                             for i, t in enumerate(times)])

    def record(layer, variant, ms):
        f = Features(variant, "float32", 1, 1, 1, 1, 1, 0, 1)
        return {"layer": layer, "tier": "full", "variant": variant, "class": "k", "tiles": {}, "features": f, "ms": ms}

    records = [record(f"c{i}", n, ms) for i, t in enumerate(times) for n, ms in t.items()]
    # a model under which p is every layer's predicted pick: its rate is the highest
    model = {"resident": 1, "launch_ms": 0.0, "bytes_per_ms": 1e12, "invocation_ms": 0.0,
             "rates": {"p/float32": 1e6, "a/float32": 1.0, "b/float32": 1.0}}
    table = tmp_path / "table.json"
    table.write_text(json.dumps({"cost_model": model}))
    cost_model_fit.choose(records, table)
    by_fit = json.loads(table.read_text())["choices"]
    assert {c: e["variant"] for c, e in by_fit.items()} == {c: e["variant"] for c, e in by_tuner.items()} == {"k": "a"}
    assert by_fit["k"]["relative_time"] == by_tuner["k"]["relative_time"]


def test_adaptation_replaces_its_first_pick_by_the_same_margin():
    """web/runtime/adapt.mjs decides in the page, without Python: its margin is held to the tables' one."""
    import subprocess

    from app.contract import ROOT

    script = (f"import({json.dumps((ROOT / 'web' / 'runtime' / 'adapt.mjs').as_uri())})"
              ".then((m) => console.log(m.ADAPT.margin))")
    margin = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True).stdout
    assert float(margin) == class_choice.MARGIN
