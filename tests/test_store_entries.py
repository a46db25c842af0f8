"""A stored autotune entry is untrusted text (app/store_entries.py): bounded in size and nesting before parsing,
checked against the schema before use, ignored with a warning otherwise; a caller's store that throws, hangs or
is not a store costs the stored choice (a warning), never the call (CPython)."""
import asyncio
import json
import warnings

import pytest

from app import autotune, store_entries, tuning_tables
from app.shapes import infer
from tests.async_helper import run_coroutine
from tools.wgsl.matrix import devices

CAPS = devices()["swiftshader"]
DCGAN = infer([1, 4, 8, 8], [4, 4, 3, 3], None, {"strides": [2, 2]}, {"x": "float32", "w": "float32"})


def _entry(**changes):
    return json.dumps({"format": autotune.FORMAT, "variant": "nchw2d_gather", "params": None,
                       "adapter": tuning_tables.adapter_key(CAPS), "revision": "r1"} | changes)


def _tiled(params):
    return _entry(variant="nchw2d_phase_gemm_tiled", params=params)


DEEP = "[" * 5000 + "]" * 5000
DEEP_IN_PARAMS = _entry(params={"a": json.loads("[" * 20 + "]" * 20)})


@pytest.mark.parametrize("text, why", [
    (DEEP, "nests 5000 levels deep"),
    ('{"format": 1, "x": ' + "[" * 100000 + "]" * 100000 + "}", "characters, past"),
    (DEEP_IN_PARAMS, "nests 22 levels"),
    ("null", "JSON NoneType, not an object"),
    ("5", "JSON int, not an object"),
    ("[]", "JSON list"),
    ('{"format": 1, "variant": "nchw2d_gather", "params": NaN}', "not JSON"),
    (_entry(format=True), "format is True"),
    (_entry(format=2), "format is 2"),
    (_entry(variant="no_such_variant"), "no known variant"),
    (_entry(variant=["nchw2d_gather"]), "no known variant"),
    (json.dumps({"format": 1, "variant": "nchw2d_gather"}), "has no params"),
    (_entry(params={"bogus": 5}), "takes no params"),
    (_tiled({"bogus": 5}), "not nchw2d_phase_gemm_tiled's"),
    (_tiled({"tile_m": "16"}), "must be an integer"),
    (_tiled({"tile_m": 16.0}), "must be an integer"),
    (_tiled({"tile_m": True}), "must be an integer"),
    (_tiled({"tile_m": 10 ** 30}), "out of range"),
    (_tiled([16]), "params are list"),
    (5, "is a int, not a JSON text"),
    (b"{}", "is a bytes"),
])
def test_a_hostile_entry_is_refused_with_a_reason_and_ignored_with_a_warning(text, why):
    with pytest.raises(store_entries.EntryError, match=why):
        store_entries.parse(text, autotune.FORMAT, autotune.planner.VARIANTS, DCGAN, CAPS)
    with pytest.warns(UserWarning, match="unreadable"):
        assert autotune.stored_choice(text, DCGAN, CAPS, "r1", None) is None


def test_nesting_counts_brackets_outside_strings_only():
    assert store_entries.nesting('{"a": "[[[[[[[[[[[[\\"[[[["}') == 1
    assert store_entries.nesting(DEEP) == 5000
    assert store_entries.nesting('[{"a": [1, {"b": []}]}]') == 5


def test_what_autotune_writes_passes_the_schema():
    entry = store_entries.parse(_tiled({"tile_m": 16}), autotune.FORMAT, autotune.planner.VARIANTS, DCGAN, CAPS)
    assert entry["params"] == {"tile_m": 16}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert autotune.stored_choice(_entry(), DCGAN, CAPS, "r1", None).variant == "nchw2d_gather"


class _Kernel:
    class device:
        caps = CAPS


class _Store:
    def __init__(self, get=None, set=None):
        self.items, self._get, self._set, self.sets = {}, get, set, 0

    async def get(self, k):
        if self._get:
            return await self._get()
        return self.items.get(k)

    async def set(self, k, text):
        self.sets += 1
        if self._set:
            await self._set()
        self.items[k] = text


async def _boom():
    raise OSError("disk on fire\nsecond line")


async def _never():
    await asyncio.sleep(3600)


def _choose(store, monkeypatch):
    async def search(kernel, geom, tables=None, budget_ms=0):
        return autotune.Choice("nchw2d_gather", None, "search", 1, 1.0, (("nchw2d_gather", None, 1.0),))

    monkeypatch.setattr(autotune, "search", search)
    return run_coroutine(autotune.Autotuner(store).choose(_Kernel(), DCGAN))


@pytest.mark.parametrize("store, warning", [
    (_Store(get=_boom), r"store's get \(_Store\) failed: OSError: second line; the search runs"),
    (_Store(set=_boom), r"store's set \(_Store\) failed: OSError: second line; the choice is kept for this session"),
    (_Store(get=_never), r"store's get \(_Store\) gave no answer in 0 s"),
    (object(), r"store's get \(object\) failed: AttributeError"),
])
def test_a_store_that_throws_hangs_or_is_not_a_store_costs_a_warning_not_the_call(store, warning, monkeypatch):
    monkeypatch.setattr(store_entries, "STORE_TIMEOUT_S", 0.05)
    with pytest.warns(UserWarning, match=warning):
        choice = _choose(store, monkeypatch)
    assert choice.variant == "nchw2d_gather" and choice.source == "search"


def test_a_sync_store_is_refused_by_name_and_the_call_goes_on(monkeypatch):
    class Sync:
        def get(self, k):
            return None

        def set(self, k, text):
            pass

    with pytest.warns(UserWarning, match=r"store's get \(Sync\) failed: TypeError"):
        assert _choose(Sync(), monkeypatch).source == "search"


def test_a_working_store_keeps_the_choice_and_gives_it_back(monkeypatch):
    store = _Store()
    assert _choose(store, monkeypatch).source == "search" and store.sets == 1
    monkeypatch.setattr(autotune, "stored_choice", lambda text, *a: autotune.Choice("x", None, "store") if text else None)
    assert _choose(store, monkeypatch).source == "store" and store.sets == 1
