"""Autotuning on first use: a kernel opened with `autotune=True` times, on the first call of each request
signature, the candidates the cost model ranks fastest (across variants and their measured tiles), keeps
the fastest for that signature on this adapter, and remembers it in a store, so that later kernels (and
later page loads) start from it. The planner (app/planner.py) takes a stored choice before its model.

Candidates (`nominees`) are the top MAX_NOMINEES of app/planner.py `ranked` with grid entries: every
covering variant with its table tiles or defaults, plus the tiles the tables measured best elsewhere, by
predicted time. They are tested variants only, so a result is exact whichever wins. Timing uses seeded
synthetic inputs of the request's shapes (times do not depend on the values), through the same GPU path
as the benchmarks (app/timing.py time_plan). The search stops once `budget_ms` of it has passed (the
model's first choice is always timed), so a first call costs at most about the budget more.

The store maps a key (the request's shapes, dtypes and attributes, as geometry) to a JSON text recording
the choice with the adapter and package revision it was measured on. Anything unreadable, from another
adapter or revision, or that no longer covers the request (a variant renamed, a param refused) is ignored
with a warning, and the search runs again. In the browser the store is IndexedDB, in Node a JSON file
(web/runtime/store.mjs); any object with async `get(key)` and `set(key, text)` will do.
"""
from __future__ import annotations

import json
import statistics
import time
import warnings
from dataclasses import dataclass

from . import planner, store_entries, tuning_tables
from .errors import ConvTransposeError
from .lazy_numpy import np
from .shapes import ConvGeometry
from .timing import time_plan

FORMAT = 1
BUDGET_MS = 2000.0  # per signature: what a first call may spend searching
MAX_NOMINEES = 4  # candidates timed, fastest predicted first (docs/decisions.md#autotune-nominees)
GRID_PER_VARIANT = 2  # measured tiles from other shape classes offered per tunable variant (same entry)
RUNS = 3
# On a real GPU each timed run is this many back-to-back submissions after untimed work (app/timing.py
# time_plan): timed between host round trips an H200 sat at a third of its clocks and ranked by luck.
GPU_REPEATS = 10


@dataclass(frozen=True)
class Choice:
    variant: str
    params: dict | None
    source: str  # "search" (timed now) or "store" (a valid stored choice)
    candidates: int = 0
    search_ms: float = 0.0
    times: tuple = ()  # (variant, params, median ms) per timed candidate

    def describe(self) -> str:
        if self.source == "store":
            return f"autotuned on this adapter (stored choice: {self.variant})"
        return (f"autotuned on this adapter: the fastest of {self.candidates} candidates, "
                f"{self.search_ms:.0f} ms of search on the signature's first call")

    def meta(self) -> dict:
        return {"source": self.source, "variant": self.variant, "params": self.params,
                "candidates": self.candidates, "search_ms": round(self.search_ms, 3),
                "times": [{"variant": v, "params": p, "ms": ms} for v, p, ms in self.times]}


def key(geom: ConvGeometry) -> str:
    """What identifies a signature in the store: the geometry that decides every plan."""
    return json.dumps({"x": list(geom.x_shape), "w": list(geom.w_shape), "bias": geom.has_bias,
                       "dtype": geom.dtype, "strides": list(geom.strides), "dilations": list(geom.dilations),
                       "pads": list(geom.pads_begin) + list(geom.pads_end), "group": geom.group,
                       "output_padding": list(geom.output_padding), "y": list(geom.y_shape),
                       "finite": geom.finite_data}, sort_keys=True)


def nominees(geom: ConvGeometry, caps, tables: list[dict] | None = None) -> list[tuple[str, dict | None]]:
    """(variant, params or None) candidates for the request, fastest predicted first."""
    return [(c.variant, c.params) for c, _, _ in planner.ranked(geom, caps, tables, GRID_PER_VARIANT)[:MAX_NOMINEES]]


def _inputs(geom: ConvGeometry) -> dict:
    rng = np.random.default_rng(0)
    shapes = {"x": geom.x_shape, "w": geom.w_shape} | ({"b": (geom.out_channels,)} if geom.has_bias else {})
    return {n: rng.uniform(-1, 1, size=s).astype(geom.dtype) for n, s in shapes.items()}


def entry_text(choice: Choice, geom: ConvGeometry, caps, revision: str) -> str:
    """The stored entry of a searched choice, its params those the variant takes (`Tunable.names`; none for a
    variant with no Tunable): a candidate carries its plan's tiles, which `col2im_gemm_vec4` reports with the splits
    it runs and a fixed-tile kernel (`ncl1d_col2im`) with its tiles; stored with them, the entry read back as not
    the variant's params and every later kernel searched again."""
    params, tunable = choice.params, planner.VARIANTS[choice.variant].tunable
    if params is not None:
        names = tunable.names(geom, caps) if tunable is not None else {}
        params = {k: v for k, v in params.items() if k in names} or None
    return json.dumps({"format": FORMAT, "variant": choice.variant, "params": params,
                       "adapter": tuning_tables.adapter_key(caps), "revision": revision,
                       "times": choice.meta()["times"]})


def stored_choice(text, geom: ConvGeometry, caps, revision: str, tables) -> Choice | None:
    """The stored choice when it is readable, from this adapter and revision, and still covers the request;
    else None, with a warning saying why it was ignored."""
    if text is None:
        return None
    try:  # bounded in size and depth before parsing, then checked against the entry's schema
        entry = store_entries.parse(text, FORMAT, planner.VARIANTS, geom, caps)
    except store_entries.EntryError as exc:
        warnings.warn(f"autotune: a stored choice is unreadable ({exc}); ignored, the planner decides", stacklevel=2)
        return None
    variant, params = entry["variant"], entry["params"]
    if entry.get("adapter") != tuning_tables.adapter_key(caps) or entry.get("revision") != revision:
        warnings.warn("autotune: the stored choice was measured on another adapter or package revision; ignored, "
                      "the planner decides", stacklevel=2)
        return None
    try:
        planner.plan(geom, caps, variant, params, tables)
        why = _params_refusal(variant, params, geom, caps, tables)
    except ConvTransposeError as exc:
        why = str(exc)
    if why:
        warnings.warn(f"autotune: the stored choice no longer covers this request ({why}); ignored, the planner "
                      "decides", stacklevel=2)
        return None
    return Choice(variant, params, "store")


def _params_refusal(name: str, params: dict | None, geom, caps, tables) -> str | None:
    """Why stored params would not be used as stored (the planner falls back to defaults where a variant
    refuses forced params: a stored choice must be what was measured)."""
    if params is None:
        return None
    variant = planner.VARIANTS[name]
    if variant.tunable is None:
        return f"{name} takes no params"
    base = variant.params(geom, caps, None, tuning_tables.lookup(variant.tuning_name, geom, caps, tables))
    return variant.tunable.refusal(base | params, geom, caps)


async def search(kernel, geom: ConvGeometry, tables=None, budget_ms: float = BUDGET_MS) -> Choice:
    """Times the nominees (the first always, the rest while the budget lasts) and returns the fastest."""
    started = time.perf_counter()
    arrays = _inputs(geom)
    times = []
    for variant, params in nominees(geom, kernel.device.caps, tables):
        if times and (time.perf_counter() - started) * 1000 >= budget_ms:
            break
        repeats = 1 if kernel.device.caps.is_software else GPU_REPEATS
        _, samples, _ = await time_plan(kernel, geom, arrays, variant, runs=RUNS, repeats=repeats, params=params,
                                        tables=tables)
        times.append((variant, params, statistics.median(gpu if gpu is not None else wall for wall, gpu in samples)))
    variant, params, _ = min(times, key=lambda t: t[2])
    return Choice(variant, params, "search", len(times), (time.perf_counter() - started) * 1000, tuple(times))


class Autotuner:
    """A kernel's autotuning: its store and budget, and the choices made in this session."""

    def __init__(self, store, budget_ms: float = BUDGET_MS):
        self.store = store
        self.budget_ms = float(budget_ms)
        self.choices: dict[str, Choice] = {}

    async def choose(self, kernel, geom: ConvGeometry, tables=None) -> Choice:
        from .metadata import recorded

        k = key(geom)
        if k in self.choices:
            return self.choices[k]
        caps, revision = kernel.device.caps, recorded()["revision"]
        try:  # the caller's store: its failure costs the stored choice, never the call
            text = await store_entries.store_call(self.store, "get", k)
        except store_entries.StoreFailed as exc:
            warnings.warn(f"autotune: {exc}; the search runs", stacklevel=2)
            text = None
        choice = stored_choice(text, geom, caps, revision, tables)
        if choice is None:
            choice = await search(kernel, geom, tables, self.budget_ms)
            entry = entry_text(choice, geom, caps, revision)
            try:
                await store_entries.store_call(self.store, "set", k, entry)
            except store_entries.StoreFailed as exc:
                warnings.warn(f"autotune: {exc}; the choice is kept for this session only", stacklevel=2)
        self.choices[k] = choice
        return choice

    async def pieces(self, kernel, geom: ConvGeometry, tables=None) -> list:
        """The request's pieces as the planner plans them with the signature's choice as its measurement, each
        plan's reason saying where the choice came from."""
        choice = await self.choose(kernel, geom, tables)
        measured = (planner.Candidate(choice.variant, choice.params, "autotune"), choice.describe())
        return kernel.pieces(geom, tables=tables, measured=measured)

    def meta(self, geom: ConvGeometry) -> dict | None:
        """What a call's meta says of the signature's choice (None before its first call)."""
        choice = self.choices.get(key(geom))
        return choice.meta() if choice is not None else None




class MemoryStore:
    """A store in a dict (CPython tests, or a caller that keeps choices for one session)."""

    def __init__(self):
        self.items: dict[str, str] = {}

    async def get(self, k: str):
        return self.items.get(k)

    async def set(self, k: str, text: str) -> None:
        self.items[k] = text
