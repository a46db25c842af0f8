"""What a memory snapshot of the started interpreter holds (web/views/snapshot-make.mjs makes it at export,
web/runtime/boot.mjs starts from it): the package's modules a first call runs, imported, and every template
compiled, so that a first visit skips Python's start, the imports and template compiling. numpy is left out:
Pyodide cannot snapshot a binary extension, and a first call does not need it (app/lazy_numpy.py). Nor does a
first call need the package's files: web/runtime/boot.mjs unpacks them with numpy, after it."""
from __future__ import annotations

import importlib
import sys

# app.bridge imports the call path (kernel, planner, variants, render); app.device and app.gpu open the device
FIRST_CALL_MODULES = ("app.bridge", "app.device", "app.gpu", "app.autotune", "app.timing")


def prepare() -> dict:
    """Imports what a first call runs, compiles the templates and reads the files a first call reads (the contract,
    the tuning tables): a first call from the snapshot runs before the package's files are unpacked again. Says what
    the snapshot then holds."""
    from . import contract, render, tuning_tables

    for name in FIRST_CALL_MODULES:
        importlib.import_module(name)
    contract.manifest()
    tuning_tables.in_use()
    if "numpy" in sys.modules:
        raise RuntimeError("numpy was imported while preparing a snapshot: Pyodide cannot restore its extension")
    return {"modules": sorted(m for m in sys.modules if m == "app" or m.startswith("app.")),
            "templates": render.compile_templates()}
