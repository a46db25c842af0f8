"""Every shader the package can render, compiled by both WGSL compilers: Tint (Chromium's; Dawn for Node, on its
null backend with every feature, and on SwiftShader one shader of every back-end structure among those a
software adapter runs, where no test that runs shaders there compiled one) and naga (Firefox's; wgpu-py on Mesa's lavapipe). A shader either compiler rejects or
warns about fails with the compiler's message (tools/wgsl/check.py; docs/testing.md says what the SwiftShader
pass covers, and test_every_shader_swiftshader_skips_differs_from_its_stand_in_only_where_the_rules_allow
fails if a shader it leaves out stops being equivalent to the one compiled for it).

The shaders are rendered from the variants' own plans over many geometries and devices
(tools/wgsl/matrix.py), so a new variant, template or tuning grid is covered without editing this file;
test_every_template_and_structural_choice_is_rendered says when the geometries miss one."""
import pytest

from tools.wgsl import check as wgsl_check
from tools.wgsl import credited, structure
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


@pytest.fixture(scope="module")
def backend_plan(shaders):
    """What SwiftShader compiles, and the stand-in of each shader it skips (a compiled one, or one another
    test compiles there: tools/wgsl/credited.py): made once (13 s of planning and squashing)."""
    return wgsl_check.backend_plan(shaders, credited.sources())


def test_every_template_and_structural_choice_is_rendered(matrix):
    """Every template, every variant in every (dtype, bias, rank) it covers, every tuning-grid value, and
    subgroup-matrix shaders for several configurations."""
    assert coverage_gaps(matrix) == []
    sgmat = [s for s in matrix.shaders.values() if SGMAT in s.features]
    configs = {(s.render_params["comp"], s.render_params["sm"], s.render_params["sn"], s.render_params["sk"], s.render_params["subgroup_size"])
               for s in sgmat}
    assert len(configs) >= 5, configs
    assert {s.render_params["dtype"] for s in sgmat} == {"float32", "float16"}


@pytest.mark.parametrize("compiler", wgsl_check.COMPILERS)
def test_compiler_accepts_every_shader_without_warnings(matrix, shaders, backend_plan, compiler):
    # for_compiler's choice, with the SwiftShader plan the skip test below checks
    to_compile = backend_plan.compiled if compiler == "tint/swiftshader" else wgsl_check.for_compiler(compiler, shaders)
    outcomes = wgsl_check.run(compiler, to_compile)
    by_id = list(matrix.shaders.values())
    bad = [wgsl_check.describe(by_id[o.id], o) for o in outcomes if o.error or o.warnings]
    assert not bad, f"{len(bad)} shader(s) fail {compiler}:\n\n" + "\n\n".join(bad[:5])
    expected = to_compile
    if compiler == "naga":  # naga parses neither `enable subgroups;` nor subgroup matrices (below)
        expected = [s for s in expected if SGMAT not in s["features"]]
    if compiler == "tint/swiftshader":  # SwiftShader has no shader-f16 and no subgroup matrices
        expected = [s for s in expected if set(s["features"]) <= {"subgroups"}]
    assert len(outcomes) == len(expected) > 0


def _read(code: str, numbering: structure.Numbering) -> tuple[list[int], tuple]:
    """structure.statements, each statement numbered (squashing compares ints)."""
    units, bounded = structure.statements(code)
    return numbering(units), bounded


def _differs_for_a_back_end(code: str, stand_in, numbering: structure.Numbering) -> str | None:
    """Where `code` is not covered by the shader compiled for it (`stand_in`: its `_read`), read token by token
    (structure.statements: the rules' second reading, not the regular expressions that grouped them): once
    unrolled runs are squashed, the statements must be equal; then each run may be no longer than the
    stand-in's (a subsequence of its statements) and each workgroup size or workgroup array count no larger."""
    units, bounded = _read(code, numbering)
    other, other_bounded = stand_in
    squashed, other_squashed = structure.squash(units, numbering.nesting), structure.squash(other, numbering.nesting)
    if squashed != other_squashed:
        i = next((i for i, (a, b) in enumerate(zip(squashed, other_squashed)) if a != b),
                 min(len(squashed), len(other_squashed)))
        mine = numbering.text[squashed[i]] if i < len(squashed) else "(the end)"
        theirs = numbering.text[other_squashed[i]] if i < len(other_squashed) else "(the end)"
        return f"squashed statement {i}: {mine!r} against {theirs!r}"
    if len(bounded) != len(other_bounded):
        return f"{len(bounded)} workgroup sizes and counts against {len(other_bounded)}"
    for v, o in zip(bounded, other_bounded):
        if v > o:
            return f"workgroup size or memory {v:g} above the compiled shader's {o:g}"
    if not structure.subsequence(units, other):
        return "an unrolled run longer than the compiled shader's"
    return None


def test_every_shader_swiftshader_skips_differs_from_its_stand_in_only_where_the_rules_allow(shaders, backend_plan):
    """SwiftShader compiles one shader of each back-end structure (and more where workgroup sizes, memory or
    unrolled runs are not dominated), less what other tests compile there because they run it (credited:
    tools/wgsl/credited.py; each of those tests checks that it does): every other shader a software adapter runs
    has a stand-in of its structure, compiled by the pass or credited (a credited shader stands for itself),
    with the same statements once unrolled runs are squashed, runs no longer than the stand-in's, workgroup
    sizes and workgroup array counts no larger (so the limits its pipeline is validated against hold) and
    expression constants of the same kind. A template change that makes such shaders differ anywhere else
    fails here, not silently in the narrower back-end pass."""
    compiled, stands_for, given = backend_plan
    runs = {s["id"] for s in shaders if s["software"] and set(s["features"]) <= wgsl_check.SWIFTSHADER_FEATURES}
    compiled_ids = {s["id"] for s in compiled}
    assert compiled_ids | set(stands_for) == runs and not compiled_ids & set(stands_for)
    assert set(stands_for.values()) <= compiled_ids | set(given)
    assert given and all(g["by"] for g in given.values())
    code = {s["id"]: s["code"] for s in shaders} | {i: g["code"] for i, g in given.items()}
    stand_ins, numbering = {}, structure.Numbering()
    bad = []
    for skipped, stand_in in sorted(stands_for.items()):
        if stand_in not in stand_ins:
            stand_ins[stand_in] = _read(code[stand_in], numbering)
        why = _differs_for_a_back_end(code[skipped], stand_ins[stand_in], numbering)
        if why:
            bad.append(f"shader {skipped} against its stand-in {stand_in}: {why}")
    assert not bad, f"{len(bad)} shader(s) left out of the SwiftShader pass are not equivalent:\n" + "\n".join(bad[:5])


STRUCTURE_CASE = """const TM = 16;
const RN = 4;
var<workgroup> xs: array<f32, 100>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64, 2)
fn main(@builtin(local_invocation_index) lid: u32) {
  var acc: array<f32, 16>;
  var regs: array<f32, RN>;
  let a = i32(lid) * 24 + 1 - 0;
  var s0 = f32(a) * 1.5;
  var s1 = f32(a) * 1.5;
  if (a > 2) { y[0] = 1.0; }
  for (var e = lid; e < 128u; e += 64u) { y[e] = f32(a) * 0.5; }  // 7 comments do not count
}
"""


@pytest.mark.parametrize("change, verdict", [
    (("@workgroup_size(64, 2)", "@workgroup_size(128, 4)"), "larger"),  # bounded by Dawn's validation
    (("array<f32, 100>", "array<f32, 3000>"), "larger"),  # workgroup memory: bounded, but more of it
    (("* 24", "* 40"), "same"),  # an expression's constant, of the same kind
    (("128u", "256u"), "same"),
    (("128u", "100u"), "same"),  # a power of two only counts where it scales (e < 128u is no shift)
    (("const TM = 16;", "const TM = 32;"), "same"),  # a const used only in expressions
    (("// 7 comments", "// 9 comments"), "same"),
    (("0.5;", "0.75;"), "same"),
    (("0.5;", "2.0;"), "apart"),  # a multiply by 2.0 may become an add
    (("* 24", "* 32"), "apart"),  # 32 is a power of two: a multiply against a possible shift
    (("+ 1 -", "+ 3 -"), "apart"),  # 1 (and 0) fold away
    (("- 0;", "- 2;"), "apart"),
    (("128u", "256"), "apart"),  # another suffix, another type
    (("array<f32, 16>", "array<f32, 32>"), "apart"),  # a function array's storage
    (("const RN = 4;", "const RN = 8;"), "apart"),  # a const that an array's count names
    (("@binding(3)", "@binding(5)"), "apart"),  # every other attribute
    (("e += 64u", "e = e + 64u"), "apart"),
    (("var s1 = f32(a) * 1.5;", "var s1 = f32(a) * 1.5;\n  var s2 = f32(a) * 1.5;"), "larger"),  # unrolled once more
    (("var s1 = f32(a) * 1.5;", "var s1 = f32(a) + 1.5;"), "apart"),  # not a copy: another statement
    (("var s1", "var t1"), "apart"),  # a declared name's digits are an unrolled copy's number; its letters count
    (("if (a > 2) { y[0] = 1.0; }", "if (a > 2) { if (a > 2) { y[0] = 1.0; } }"), "apart"),  # nesting is no run
])
def test_structure_rules(change, verdict):
    """What the structure keeps apart (a back end could see it) and what it lets differ, read both ways: the
    regular expressions that group shaders (structure.structure) and the token walk the test above uses. A
    shader with a larger workgroup, more workgroup memory or a longer unrolled run has the structure of the
    case, but the case cannot stand in for it (it can for the case)."""
    changed = STRUCTURE_CASE.replace(*change)
    assert changed != STRUCTURE_CASE
    assert (structure.structure(changed) == structure.structure(STRUCTURE_CASE)) == (verdict != "apart")

    def stands_in(code, stand_in):
        numbering = structure.Numbering()
        return _differs_for_a_back_end(code, _read(stand_in, numbering), numbering) is None

    assert stands_in(changed, STRUCTURE_CASE) == (verdict == "same")
    assert stands_in(STRUCTURE_CASE, changed) == (verdict != "apart")


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
