"""Tuning tables: what was measured on one adapter, for the planner (app/planner.py) to read. Pure Python.

A table (tuning/<vendor>-<architecture>[-<device>].json, shipped in the bundle) applies only where its adapter
(vendor, architecture, device, is_fallback) is the current one. It holds, keyed by shape class (`shape_class`:
rank, grouping, dtype, bucketed channels, taps, stride phases and output size; never by the variant a rule
happened to pick):
- `variants`: per variant and class, tile params measured faster than the variant's defaults (`lookup`); the
  planner hands them to Variant.configured, where params the variant refuses fall back to its defaults, so a
  table cannot make a variant plan an invalid launch;
- `choices`: per class, the variant measured fastest there (`measured_choice`), which the planner takes before
  its cost model;
- `thresholds`: per variant, the thresholds its default rules read (`thresholds`): what those rules were measured
  at on this adapter; an adapter with no table takes its class's (docs/decisions.md#neutral-defaults), and a class
  with none each variant's declared neutral ones;
- `cost_model`: the adapter's calibrated cost-model constants with the runs and revision they came from
  (`cost_model`; app/cost_model.py), which also serve adapters of the same class that have no table.
Which tables: the caller's list, or None for the tables in use (`in_use`). The tuner tests every candidate
against the float64 reference before it can enter a table.
"""
from __future__ import annotations

import hashlib
import json

from .contract import ROOT

FORMAT = 2
TABLES = ROOT / "tuning"
# The only state: the tables in use (loaded once) and their revision, which every call signature carries
# (app/kernel.py signature, and the JS launch key through the kernel's `planning`), so that a launch cached
# under other tables is never reused.
_tables: list[dict] | None = None
_revision = 0


def _bucket(n: int, edges: tuple[int, ...]) -> str:
    return next((f"le{e}" for e in edges if n <= e), f"gt{edges[-1]}")


def shape_class(geom) -> str:
    """The key measured choices and tiles are filed under: rank, grouping, dtype, channels per group in and
    out, the deepest stride phase's taps, the stride phases, and output elements, batch included
    (docs/decisions.md#shape-class)."""
    from .variants.base import _group_kind, max_phase_taps

    pixels = 1
    for o in geom.out_spatial:
        pixels *= o
    phases = 1
    for s in geom.strides:
        phases *= s
    return (f"r{geom.rank}-{_group_kind(geom)}-{geom.dtype}"
            f"-cin{_bucket(geom.in_per_group, (8, 32, 128, 512))}-cout{_bucket(geom.out_per_group, (8, 32, 128, 512))}"
            f"-taps{_bucket(max_phase_taps(geom), (1, 2, 4, 8))}-ph{_bucket(phases, (1, 2, 4, 8, 16))}"
            f"-px{_bucket(geom.batch * pixels, (256, 1024, 4096, 16384, 65536, 262144))}")


def adapter_key(caps) -> dict:
    return {"vendor": caps.vendor, "architecture": caps.architecture, "device": caps.device,
            "is_fallback": caps.is_fallback}


def file_name(caps) -> str:
    parts = [caps.vendor or "unknown", caps.architecture or "unknown"] + ([caps.device] if caps.device else [])
    return "-".join("".join(c if c.isalnum() else "_" for c in p) for p in parts) + ".json"


def in_use() -> list[dict]:
    """The tables in use: every table found under tuning/, loaded once, and those use_table put in front."""
    global _tables
    if _tables is None:
        _tables = [json.loads(p.read_text()) for p in sorted(TABLES.glob("*.json"))] if TABLES.is_dir() else []
    return _tables


def use_table(table: dict) -> None:
    """Puts a table (for example one that tune() just measured) in front of the ones in use."""
    global _revision
    in_use().insert(0, table)
    _revision += 1


def revision(tables: list[dict] | None = None) -> str:
    """What of `tables` a plan depends on, as a cache key's part: None (the tables in use) gives their
    revision, which use_table advances; an explicit list gives "none" when empty, else its content's digest."""
    if tables is None:
        return str(_revision)
    if not tables:
        return "none"
    return "sha1:" + hashlib.sha1(json.dumps(tables, sort_keys=True).encode()).hexdigest()


def select(caps, tables: list[dict] | None = None) -> dict | None:
    """The first table measured on this adapter (vendor, architecture, device, is_fallback all equal), or None."""
    key = adapter_key(caps)
    for table in in_use() if tables is None else tables:
        if table.get("format") == FORMAT and table.get("adapter") == key:
            return table
    return None


def lookup(name: str, geom, caps, tables: list[dict] | None = None) -> dict | None:
    table = select(caps, tables)
    if table is None:
        return None
    entry = table.get("variants", {}).get(name, {}).get(shape_class(geom))
    return dict(entry["params"]) if entry else None


def measured_choice(geom, caps, tables: list[dict] | None = None) -> dict | None:
    """This adapter's measured choice for the request's shape class ({"variant", "params"}), or None."""
    table = select(caps, tables)
    entry = (table or {}).get("choices", {}).get(shape_class(geom))
    return {"variant": entry["variant"], "params": entry.get("params")} if entry else None


def thresholds(name: str, caps, neutral: dict) -> dict:
    """The thresholds variant `name`'s default rules read on this adapter: those its own table measured
    (`thresholds`), else its class's (the first table of an adapter as software or hardware as this one that has
    them, as `cost_model`), over the `neutral` ones its declaration gives where no table of the class has any. Read
    from the tables in use whatever tables a plan is asked with, as the cost model is: calibration of the defaults,
    not a tuned choice."""
    table = _own_or_class(caps, lambda t: name in t.get("thresholds", {}))
    return neutral | (table["thresholds"][name] if table else {})


def grid_params(name: str, caps, tables: list[dict] | None = None) -> list[dict]:
    """The tiles the tables measured best for variant `name` over all their shape classes (this adapter's
    table first), most often first: the grid entries a candidate list adds to a variant's defaults."""
    from collections import Counter

    ordered = sorted(in_use() if tables is None else tables, key=lambda t: t.get("adapter") != adapter_key(caps))
    counts = Counter()
    for table in ordered:
        for entry in table.get("variants", {}).get(name, {}).values():
            counts[json.dumps(entry["params"], sort_keys=True)] += 1
    return [json.loads(p) for p, _ in counts.most_common()]


def cost_model(caps) -> dict | None:
    """The cost model calibrated for this adapter (its own table's), else for its class (the first table of
    an adapter as software or hardware as this one that has one), else None. Read from the tables in use
    whatever tables a plan is asked with: the model is calibration, not a tuned choice."""
    table = _own_or_class(caps, lambda t: bool(t.get("cost_model")))
    return table["cost_model"] if table else None


def _own_or_class(caps, has) -> dict | None:
    """Where an adapter's calibration (`has(table)`: a cost model, a variant's thresholds) comes from: its own table
    where that has it, else the first table in use of an adapter as software or hardware as this one that has it."""
    own = select(caps)
    if own is not None and has(own):
        return own
    return next((t for t in in_use() if has(t) and t.get("adapter", {}).get("is_fallback") == caps.is_fallback), None)
