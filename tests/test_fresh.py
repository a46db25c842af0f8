"""The fresh tier (app/fresh.py): seeded, varied like real layers, inside a GPU bench's budget, valid, and never
tuned on."""
import json
import math

import pytest

from app import fresh, tuner
from app.bench import load
from app.shapes import infer
from app.variants.base import _group_kind
from tests.async_helper import run_coroutine


def _geoms(doc):
    for c in doc["cases"]:
        b = [c["w"][1] * c["attributes"].get("group", 1)] if c["bias"] else None
        yield c, infer(c["x"], c["w"], b, c["attributes"])


def test_the_same_seed_draws_the_same_layers_and_another_seed_others():
    assert fresh.bench_file(7) == fresh.bench_file(7)
    assert fresh.bench_file(7)["cases"] != fresh.bench_file(8)["cases"]


@pytest.mark.parametrize("seed", [1, 2026, 6421, 31337])
def test_layers_are_valid_varied_and_inside_the_budget(seed):
    doc = fresh.bench_file(seed, 64)
    names = [c["name"] for c in doc["cases"]]
    assert len(set(names)) == 64 and load(json.dumps(doc), fresh.TIER) and set(doc["tiers"]) == {fresh.TIER}
    kinds, ranks = set(), set()
    for case, geom in _geoms(doc):
        kinds.add(_group_kind(geom))
        ranks.add(geom.rank)
        assert 1 <= max(geom.kernel) <= 16 and 1 <= max(geom.strides) <= 8
        assert 1 <= geom.in_channels <= 2048 and 1 <= geom.out_channels <= 2048 and 1 <= geom.batch <= 64
        assert geom.multiply_adds() <= fresh.MAX_MADDS
        w_size = geom.in_channels * geom.out_channels // geom.group * math.prod(geom.kernel)
        assert max(geom.x_size, w_size, geom.y_size) <= fresh.MAX_ELEMENTS and geom.y_size > 0
    assert ranks == {1, 2, 3} and kinds == {"dense", "grouped", "depthwise"}


def test_the_tuner_refuses_the_fresh_tier():
    case = dict(fresh.bench_file(3, 1)["cases"][0], fill=fresh.bench_file(3, 1)["fill"])
    with pytest.raises(ValueError, match="never tuned on"):
        run_coroutine(tuner.tune(None, [case]))


def test_drawn_sizes_span_the_range():
    madds = [geom.multiply_adds() for _, geom in _geoms(fresh.bench_file(11, 64))]
    assert min(madds) < 1e7 and max(madds) > 1e9
