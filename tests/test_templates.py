"""Template rendering in CPython: every variant renders for every structural parameter it takes."""
import re

import pytest

from app.caps import DeviceCaps
from app.planner import plan
from app.render import TEMPLATES, render
from app.shapes import infer

SHAPES = {1: ((1, 2, 5), (2, 3, 3)), 2: ((1, 2, 5, 5), (2, 3, 3, 3)), 3: ((1, 2, 3, 3, 3), (2, 3, 2, 2, 2))}


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_gather_renders_bindings_and_uniforms_in_plan_order(rank, bias, dtype):
    x, w = SHAPES[rank]
    geom = infer(x, w, (3,) if bias else None, dtypes={"x": dtype, "w": dtype, **({"b": dtype} if bias else {})})
    gather = ("ncl1d_gather", "nchw2d_gather", "ncdhw3d_gather")[rank - 1]
    dispatch = plan(geom, DeviceCaps(features=frozenset({"shader-f16"})), gather).dispatches[0]
    source = render(dispatch.template, dispatch.render_params)
    bindings = re.findall(r"@binding\((\d+)\) var<(\w+)[^>]*> (\w+)", source)
    assert [name for _, _, name in bindings] == list(dispatch.bindings) + ["p"]
    assert [int(i) for i, _, _ in bindings] == list(range(len(dispatch.bindings) + 1))
    fields = re.findall(r"^\s+(\w+): i32,$", source, re.M)
    assert fields == [name for name, _ in dispatch.uniforms]
    assert ("enable f16;" in source) == (dtype == "float16")
    assert "{{" not in source and "{%" not in source


def test_missing_render_parameter_is_an_error():
    with pytest.raises(Exception, match="undefined"):
        render("conv-transpose2d-nchw.wgsl.jinja", {"dtype": "float32"})


def test_every_template_is_used_by_a_variant():
    from app.variants import VARIANTS

    from app.render import SHARED_TEMPLATES

    used = {t for v in VARIANTS.values() for t in v.templates} | set(SHARED_TEMPLATES)
    assert {p.name for p in TEMPLATES.glob("*.wgsl.jinja")} == used


def _code_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of a template's code: Jinja and WGSL comments, blank lines and lone punctuation
    left out, white space folded (what the `duplicates` tool compares, which reads no .jinja)."""
    text = re.sub(r"\{#.*?#\}", lambda m: "\n" * m.group().count("\n"), text, flags=re.S)
    lines = ((n, " ".join(line.split("//")[0].split())) for n, line in enumerate(text.splitlines(), 1))
    return [(n, line) for n, line in lines if re.search(r"\w", line)]


def shared_runs(folder, run: int = 6) -> list[str]:
    """Every run of `run` code lines that stands in two templates of `folder`."""
    seen: dict[tuple, tuple[str, int]] = {}
    found = []
    for path in sorted(folder.glob("*.jinja")):
        code = _code_lines(path.read_text())
        for i in range(len(code) - run + 1):
            key = tuple(line for _, line in code[i:i + run])
            where = (path.name, code[i][0])
            if key in seen and seen[key][0] != path.name:
                found.append(f"{seen[key][0]}:{seen[key][1]} ~ {path.name}:{where[1]}: {key[0]}")
            seen.setdefault(key, where)
    return found


def test_no_two_templates_share_six_lines():
    """What two templates would write alike is a macro or include (_prologue, _elementwise, _tiles,
    _phase-gemm, _subgroup-matrix...), so that a fix lands in every shader that has the code."""
    assert shared_runs(TEMPLATES) == []
