"""numpy, imported on first use: in the browser a first call plans, renders and dispatches without it (its data
stays in JavaScript), so Python can start from a memory snapshot that holds no binary extension (Pyodide cannot
snapshot one: web/runtime/boot.mjs) and numpy loads once the first call has been planned. `np.anything`
imports numpy then."""
from __future__ import annotations

import importlib


class _LazyNumpy:
    __slots__ = ()

    def __getattr__(self, name: str):
        return getattr(importlib.import_module("numpy"), name)

    def __repr__(self) -> str:
        return "<numpy, imported on first use>"


np = _LazyNumpy()
