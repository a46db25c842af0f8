"""Renders the WGSL templates in templates/ with jinja2; identical output in CPython and Pyodide."""
from __future__ import annotations

import hashlib
from functools import lru_cache

import jinja2

from .contract import ROOT

TEMPLATES = ROOT / "templates"
# Templates every launch may use besides its variant's own (name -> what for; published in metadata.json).
NONFINITE_CHECK = "nonfinite-check.wgsl.jinja"
BINDINGS_PRELUDE = "_bindings.wgsl.jinja"
SHARED_TEMPLATES = {NONFINITE_CHECK: "flags NaN/Inf in CPU-uploaded x or w on the GPU, for variants exact only on "
                                    "finite data (the call reruns on an exact variant when set)",
                    BINDINGS_PRELUDE: "included by every template: the Params struct and every @binding, generated "
                                      "from the pass's declaration (app/plan.py dispatch)",
                    "_prologue.wgsl.jinja": "included by most templates: enable f16 where the dtype is float16, the "
                                            "storage type T and the bindings prelude",
                    "_elementwise.wgsl.jinja": "included by the elementwise passes: the prologue and an entry point "
                                               "of one invocation per item",
                    "_split-index.wgsl.jinja": "the weight-layout passes' split of a packed index into coordinates",
                    "_tiles.wgsl.jinja": "macros: the entry point and tile decode of the tiled GEMMs",
                    "_subgroup-matrix.wgsl.jinja": "macros: what the subgroup-matrix GEMMs write alike (opening, "
                                                   "multiplies, right-matrix loads, results through workgroup memory)"}

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(TEMPLATES)),
    undefined=jinja2.StrictUndefined,  # a missing render parameter is a bug, never an empty string
    keep_trailing_newline=True,
    autoescape=False,
    # templates are package data that never change under a running interpreter; a memory snapshot's compiled
    # templates stay valid once their files are unpacked again (with new times)
    auto_reload=False,
)


def compile_templates() -> int:
    """Compiles every template into the environment's cache (a memory snapshot then holds them); how many."""
    names = _env.list_templates(filter_func=lambda name: name.endswith(".jinja"))
    for name in names:
        _env.get_template(name)
    return len(names)


class _FrozenDict(dict):
    """A mapping render parameter (a table a template looks values up in), hashable for the render cache."""

    def __hash__(self):
        return hash(tuple(sorted(self.items())))


def _freeze(value):
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return _FrozenDict((k, _freeze(v)) for k, v in value.items())
    return value


@lru_cache(maxsize=256)
def _render(template: str, frozen: tuple) -> str:
    return _env.get_template(template).render(dict(frozen))


def render(template: str, params: dict) -> str:
    return _render(template, tuple(sorted((k, _freeze(v)) for k, v in params.items())))


def source_digest(source: str) -> str:
    """A rendered shader's identity: the sha256 of its WGSL (app/gpu.py keys pipelines by it; the tests that
    compile shaders report it: tools/wgsl/credited.py)."""
    return hashlib.sha256(source.encode()).hexdigest()
