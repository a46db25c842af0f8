"""Per-device tuned render parameters: which tile/workgroup shape a variant uses on this adapter for this
shape class, read from tuning tables measured by `python -m app tune` (app/tuner.py). Pure Python.

A table (tuning/<vendor>-<architecture>[-<device>].json, shipped in the bundle) is keyed by the adapter's
vendor, architecture and device: it applies only when all three match the current adapter (is_fallback
too), otherwise every variant keeps its built-in defaults. Inside a table, entries are keyed by variant and
shape class (`shape_class`: rank and bucketed channel and output sizes), so a shape that was never tuned on
this adapter also keeps the defaults. A table's `choices` may also name, per shape class, the variant that
measured faster there than the rules' choice: the planner then takes it instead (`preferred_variant`).

The planner (app/planner.py) is this module's only reader in a call: it looks up the entry for the
variant it configures (`lookup`) and hands it to Variant.configured, where params the variant's Tunable
refuses for the request fall back to its defaults (app/variants/base.py Variant.params), so a table cannot
make a variant produce an invalid plan. Which tables: the caller's list, or None for the tables in use
(`in_use`). The tuner tests every candidate against the float64 reference before it can enter a table.
"""
from __future__ import annotations

import hashlib
import json

from .contract import ROOT

FORMAT = 1
TABLES = ROOT / "tuning"
# The only state: the tables in use (loaded once) and their revision, which every call signature carries
# (app/kernel.py signature, and the JS launch key through the kernel's `planning`), so that a launch cached
# under other tables is never reused.
_tables: list[dict] | None = None
_revision = 0


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


def preferred_variant(geom, caps, planned: str, tables: list[dict] | None = None) -> str | None:
    """The variant this adapter's table measured faster than `planned` (the rules' choice) for the request's
    shape class (its `choices`), or None."""
    table = select(caps, tables)
    entry = (table or {}).get("choices", {}).get(shape_class(geom), {}).get(planned)
    return entry["variant"] if entry else None
