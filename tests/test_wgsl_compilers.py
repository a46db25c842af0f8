"""Every shader the package can render, compiled by both WGSL compilers: Tint (Chromium's; Dawn for Node, on its
null backend with every feature and on SwiftShader) and naga (Firefox's; wgpu-py on Mesa's lavapipe). A shader
either compiler rejects or warns about fails with the compiler's message (tools/wgsl/check.py).

The shaders are rendered from the variants' own plans over many geometries and devices
(tools/wgsl/matrix.py), so a new variant, template or tuning grid is covered without editing this file;
test_every_template_and_structural_choice_is_rendered says when the geometries miss one."""
import pytest

from tools.wgsl import check as wgsl_check
from tools.wgsl.matrix import SGMAT, build, coverage_gaps

# The bug of issue 16: a function whose body ends in a loop that returns on every path. The WGSL spec
# accepts it; naga rejects it (gfx-rs/wgpu#7733), and a return after the loop makes Tint warn.
LOOP_RETURNS = """
fn first(n: i32) -> i32 {
  var i = 0;
  loop { if (i >= n) { return i; } i += 1; }
}
@group(0) @binding(0) var<storage, read_write> y: array<i32>;
@compute @workgroup_size(1) fn main() { y[0] = first(3); }
"""
RETURN_AFTER_LOOP = LOOP_RETURNS.replace("i += 1; }\n}", "i += 1; }\n  return 0;\n}")


@pytest.fixture(scope="module")
def matrix():
    return build()


@pytest.fixture(scope="module")
def shaders(matrix):
    return wgsl_check.shaders_as_data(matrix)


def test_every_template_and_structural_choice_is_rendered(matrix):
    """Every template, every variant in every (dtype, bias, rank) it covers, every tuning-grid value, and
    subgroup-matrix shaders for several configurations."""
    assert coverage_gaps(matrix) == []
    sgmat = [s for s in matrix.shaders.values() if SGMAT in s.features]
    configs = {(s.params["comp"], s.params["sm"], s.params["sn"], s.params["sk"], s.params["subgroup_size"])
               for s in sgmat}
    assert len(configs) >= 5, configs
    assert {s.params["dtype"] for s in sgmat} == {"float32", "float16"}


@pytest.mark.parametrize("compiler", wgsl_check.COMPILERS)
def test_compiler_accepts_every_shader_without_warnings(matrix, shaders, compiler):
    outcomes = wgsl_check.run(compiler, wgsl_check.for_compiler(compiler, shaders))
    by_id = list(matrix.shaders.values())
    bad = [wgsl_check.describe(by_id[o.id], o) for o in outcomes if o.error or o.warnings]
    assert not bad, f"{len(bad)} shader(s) fail {compiler}:\n\n" + "\n\n".join(bad[:5])
    expected = wgsl_check.for_compiler(compiler, shaders)
    if compiler == "naga":  # naga parses neither `enable subgroups;` nor subgroup matrices (below)
        expected = [s for s in expected if SGMAT not in s["features"]]
    if compiler == "tint/swiftshader":  # SwiftShader has no shader-f16 and no subgroup matrices
        expected = [s for s in expected if set(s["features"]) <= {"subgroups"}]
    assert len(outcomes) == len(expected) > 0


def test_the_compilers_catch_what_issue_16_found():
    """The checks are live: naga rejects a function ending in an always-returning loop, Tint warns about a
    return placed after such a loop (so the portable form breaks out of the loop, as `taps` does)."""
    data = [{"id": 0, "code": LOOP_RETURNS, "features": []}, {"id": 1, "code": RETURN_AFTER_LOOP, "features": []}]
    naga = {o.id: o for o in wgsl_check.run("naga", data)}
    assert "does not match the declared return type" in naga[0].error
    assert naga[1].error is None
    tint = {o.id: o for o in wgsl_check.run("tint/null", data)}
    assert tint[0].error is None and tint[0].warnings == []
    assert any("unreachable" in w for w in tint[1].warnings)


def test_naga_cannot_parse_subgroup_matrix_shaders(matrix):
    """What is checkable: naga (wgpu 0.32) implements neither `enable subgroups;` nor
    chromium_experimental_subgroup_matrix, so the subgroup-matrix shaders are checked by Tint only (Firefox
    never offers those features, so their variants never run there). If this starts to fail, naga learned
    them: drop the exemption in test_compiler_accepts_every_shader_without_warnings."""
    shader = next(s for s in matrix.shaders.values() if SGMAT in s.features)
    [outcome] = wgsl_check.run("naga", [{"id": 0, "code": shader.source, "features": []}])
    assert "enable-extension" in outcome.error
