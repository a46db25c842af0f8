"""Per-device tuned render parameters: which tile/workgroup shape a variant uses on this adapter for this
shape class, read from tuning tables measured by `python -m app tune` (app/tuner.py). Pure Python.

A table (tuning/<vendor>-<architecture>[-<device>].json, shipped in the bundle) is keyed by the adapter's
vendor, architecture and device: it applies only when all three match the current adapter (is_fallback
too), otherwise every variant keeps its built-in defaults. Inside a table, entries are keyed by variant and
shape class (`shape_class`: rank and bucketed channel and output sizes), so a shape that was never tuned on
this adapter also keeps the defaults. A table's `choices` may also name, per shape class, the variant that
measured faster there than the rules' choice: the planner then takes it instead (`preferred_variant`).

A tunable variant's configure asks `choose(name, geom, caps, tunable)` for its params, `tunable` being the
variant's declared defaults and refusal (app/variants/base.py Tunable): a candidate its invariants or the
device's limits reject is never used (defaults instead), so a table cannot make a variant produce an invalid
launch. The tuner tests every candidate against the float64
reference before it can enter a table.
"""
from __future__ import annotations

import json
from contextlib import contextmanager

from .contract import ROOT

FORMAT = 1
TABLES = ROOT / "tuning"
_tables: list[dict] | None = None  # every table found under tuning/, loaded once
_forced: dict[str, dict] = {}  # variant -> params, while the tuner times a candidate
_generation = 0  # bumped whenever the tables in use change: cached launches of another generation are stale


def _bucket(n: int, edges: tuple[int, ...]) -> str:
    return next((f"le{e}" for e in edges if n <= e), f"gt{edges[-1]}")


def shape_class(geom) -> str:
    """rank, channels per group in and out, output elements per image: the sizes tiles are shaped by."""
    pixels = 1
    for o in geom.out_spatial:
        pixels *= o
    return (f"r{geom.rank}-cin{_bucket(geom.in_per_group, (8, 32, 128))}"
            f"-cout{_bucket(geom.out_per_group, (8, 32, 128))}-px{_bucket(geom.batch * pixels, (256, 1024, 4096, 16384, 65536))}")


def adapter_key(caps) -> dict:
    return {"vendor": caps.vendor, "architecture": caps.architecture, "device": caps.device,
            "is_fallback": caps.is_fallback}


def file_name(caps) -> str:
    parts = [caps.vendor or "unknown", caps.architecture or "unknown"] + ([caps.device] if caps.device else [])
    return "-".join("".join(c if c.isalnum() else "_" for c in p) for p in parts) + ".json"


def load_tables() -> list[dict]:
    global _tables
    if _tables is None:
        _tables = [json.loads(p.read_text()) for p in sorted(TABLES.glob("*.json"))] if TABLES.is_dir() else []
    return _tables


def use_table(table: dict) -> None:
    """Puts a table (for example one that tune() just measured) in front of the shipped ones."""
    global _generation
    load_tables().insert(0, table)
    _generation += 1


def planning_state() -> str:
    """What of this module's state a plan depends on (tables in use, forced params): part of a call's
    signature, so a launch cached under other tables or params is never reused."""
    return f"{_generation}:{sorted(_forced.items())!r}" if _forced else str(_generation)


def select(caps, tables: list[dict] | None = None) -> dict | None:
    """The first table measured on this adapter (vendor, architecture, device, is_fallback all equal), or None."""
    key = adapter_key(caps)
    for table in load_tables() if tables is None else tables:
        if table.get("format") == FORMAT and table.get("adapter") == key:
            return table
    return None


def lookup(name: str, geom, caps, tables: list[dict] | None = None) -> dict | None:
    table = select(caps, tables)
    if table is None:
        return None
    entry = table.get("variants", {}).get(name, {}).get(shape_class(geom))
    return dict(entry["params"]) if entry else None


def preferred_variant(geom, caps, planned: str, tables: list[dict] | None = None) -> str | None:
    """The variant this adapter's table measured faster than `planned` (the rules' choice) for the request's
    shape class (its `choices`), or None."""
    table = select(caps, tables)
    entry = (table or {}).get("choices", {}).get(shape_class(geom), {}).get(planned)
    return entry["variant"] if entry else None


def choose(name: str, geom, caps, tunable) -> dict:
    """The variant's render params for this request: forced (tuner) > the adapter's table > its defaults.
    Params the variant refuses for this request fall back to the defaults."""
    defaults = dict(tunable.defaults(geom, caps))
    override = _forced.get(name)
    if override is None:
        override = lookup(name, geom, caps)
    if not override:
        return defaults
    params = defaults | override
    return params if tunable.refusal(params, geom, caps) is None else defaults


@contextmanager
def ignoring_tables():
    """While the tuner measures: every variant and the planner behave as with no table (defaults, rules), so
    that a new table is measured against them, not against an older table of the same adapter."""
    global _tables, _generation
    saved, _tables = load_tables(), []
    _generation += 1
    try:
        yield
    finally:
        _tables = saved
        _generation += 1


@contextmanager
def forcing(name: str, params: dict):
    """While the tuner times one candidate: the variant uses these params (if it accepts them)."""
    _forced[name] = dict(params)
    try:
        yield
    finally:
        _forced.pop(name, None)
