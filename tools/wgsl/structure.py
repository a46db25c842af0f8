"""A WGSL shader's structure for a back end: its source with the numeric constants that do not change the code
a back end generates replaced by their kind, and unrolled repetitions squashed. tools/wgsl/check.py back-end
compiles one shader of each structure on SwiftShader, or more (docs/testing.md).

Two shaders have one structure when their statements (comments and spacing aside; a statement is what ends at
`;`, `{` or `}`) are equal, once each run of repeated statements or blocks is squashed to one copy, except for
- the numeric literals that are arguments of @workgroup_size or element counts of `var<workgroup>` arrays: Dawn's
  validation bounds them (maxComputeWorkgroupSize*, maxComputeInvocationsPerWorkgroup,
  maxComputeWorkgroupStorageSize), and the Tint front-end pass checks every shader against them;
- the numeric literals that are operands in expressions and initialisers of one kind (`operand_kind`): integer
  or float, the same suffix, neither 0 nor 1, and, as a factor, divisor or modulus (next to `*`, `/`, `%`),
  both powers of two or both not. In the SPIR-V Tint writes, such a constant is one OpConstant either way; 0
  and 1 (which a compiler folds away: x * 1, x % 1, x + 0) and powers of two where they scale (a multiply,
  divide or modulus that may become a shift or a mask) are kept apart;
- the digits in the names the shader declares (let, var, const): the names an unrolled copy numbers
  (acc0_1, a3) are one name for a back end, which sees SSA values, not names;
- the number of copies in a run of repeated statements or balanced blocks (a Jinja-unrolled loop: a register
  block, the cooperative loads of a tile, the steps of a k-slice): the back end compiles the same
  straight-line code, more or less of it. A block's braces close what it opens: nesting depth is no run.
Every other literal is kept as it is: other attributes' arguments (@group, @binding, ...), the element counts of
every other array (function, private and struct arrays, whose storage a back end lays out), and the
initialisers of the consts that such a count or a workgroup size names.

A shader stands in for another of its structure when the other's statements are a subsequence of its own
(each run at least as long: at least the registers, the code and the constants of every kind), and its
workgroup sizes and workgroup array counts are each at least the other's (`covers`).

`analyse` finds the literals' places with regular expressions over the source (it runs on thousands of
shaders); `roles` classifies every token with a token walk, a second reading of the same rules, which the tests
use to check that every shader left to a stand-in is covered by it.
"""
from __future__ import annotations

import bisect
import functools
import re
from typing import NamedTuple

COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
NUMBER = re.compile(r"(?=[\d.])(?<![\w.])(0[xX][0-9a-fA-F]+[iu]?|(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?[fh]?|\d+[eE][+-]?\d+[fh]?"
                    r"|\d+[iufh]?)(?![\w.])")
_ATTRIBUTE = re.compile(r"@\s*(\w+)\s*\(([^()]*)\)")
# Patterns that begin with a literal word (re then skips ahead to it); the word boundary before it is checked
# by _starts_word.
_ARRAY = re.compile(r"array\s*<")
_VAR_SPACE = re.compile(r"var\s*<\s*(\w+)")
_CONSTS = (re.compile(r"const\s+(\w+)\b[^=;]*=([^;]*);"), re.compile(r"override\s+(\w+)\b[^=;]*=([^;]*);"))
_WORD = re.compile(r"[A-Za-z_]\w*")
_DIGITS = re.compile(r"\d+")
_WORDS = re.compile(r"(\b[A-Za-z_]\w*)")  # split keeps the words
_DECLARED = re.compile(r"\b(?:let|var|const)\s+([A-Za-z_]\w*)")
_UNIT = re.compile(r"[^;{}]*[;{}]|[^;{}]+$")
MAX_BLOCK = 96  # the longest repeated block squash looks for, in statements (an unrolled k-step: about 80)
_TOKEN = re.compile(r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/)
  | (?P<number>0[xX][0-9a-fA-F]+[iu]?|(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?[fh]?|\d+[eE][+-]?\d+[fh]?|\d+[iufh]?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct>>>=|<<=|->|==|!=|<=|>=|&&|\|\||<<|>>|\+\+|--|[-+*/%&|^]=|.)
""", re.X | re.S)

SPECIAL = (0.0, 1.0)  # kept as they are: x * 0, x * 1, x % 1, x + 0 fold away
BOUNDED = "bounded"  # the kind of the literals Dawn's validation bounds (workgroup size and memory)


@functools.cache
def _split(literal: str) -> tuple[str, str]:
    """(digits, suffix) of a numeric literal."""
    hexadecimal = literal[:2].lower() == "0x"
    digits = literal.rstrip("iu") if hexadecimal else literal.rstrip("iufh")
    return digits, literal[len(digits):]


@functools.cache
def value(literal: str) -> float:
    digits, _ = _split(literal)
    return float(int(digits, 16)) if digits[:2].lower() == "0x" else float(digits)


@functools.cache
def operand_kind(literal: str, scales: bool = True) -> str:
    """What of an expression's literal a back end can see in the code it generates: integer or float (and
    its suffix), and, where it scales (`scales`: a factor, divisor or modulus), whether it is a power of two."""
    digits, suffix = _split(literal)
    v = value(literal)
    integer = digits[:2].lower() == "0x" or not any(c in digits for c in ".eE")
    power_of_two = scales and v == int(v) and int(v) & (int(v) - 1) == 0
    return f"{'int' if integer else 'float'}{suffix}{'-pow2' if power_of_two else ''}"


SCALING = ("*", "/", "%")  # the operators next to which a power of two may become a shift or a mask


def _scales(text: str, start: int, end: int) -> bool:
    """Whether the literal at text[start:end] is a factor, divisor or modulus (x * 4, 4 * x, x %= 4)."""
    i = start - 1
    while i >= 0 and text[i].isspace():
        i -= 1
    if i >= 1 and text[i] == "=" and text[i - 1] in SCALING:
        return True
    if i >= 0 and text[i] in SCALING:
        return True
    j = end
    while j < len(text) and text[j].isspace():
        j += 1
    return j < len(text) and text[j] in SCALING


def _array_count(text: str, start: int) -> tuple[int, int]:
    """The span of an array type's element count (empty for a runtime-sized array); `start` just after its `<`."""
    depth, comma, i = 1, None, start
    while depth:
        c = text[i]
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "," and depth == 1:
            comma = i + 1
        i += 1
    return (comma, i - 1) if comma is not None else (i - 1, i - 1)


def _declaration_space(text: str, at: int) -> str | None:
    """The address space of the `var<space>` declaration the position is in, if it is one."""
    begin = max(text.rfind(";", 0, at), text.rfind("{", 0, at), text.rfind("}", 0, at)) + 1
    m = _VAR_SPACE.search(text, begin, at)
    while m and not _starts_word(text, m.start()):
        m = _VAR_SPACE.search(text, m.end(), at)
    return m.group(1) if m else None


def _starts_word(text: str, pos: int) -> bool:
    return pos == 0 or not (text[pos - 1].isalnum() or text[pos - 1] == "_")


def _places(text: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(bounded spans, exact spans) of the source (comments removed)."""
    bounded, exact, named = [], [], set()
    for m in _ATTRIBUTE.finditer(text):
        if m.group(1) == "workgroup_size":
            bounded.append(m.span(2))
            named.update(_WORD.findall(m.group(2)))
        else:
            exact.append(m.span(2))
    for m in _ARRAY.finditer(text):
        if not _starts_word(text, m.start()):
            continue
        span = _array_count(text, m.end())
        (bounded if _declaration_space(text, m.start()) == "workgroup" else exact).append(span)
        named.update(_WORD.findall(text[span[0]:span[1]]))
    for pattern in _CONSTS:
        for m in pattern.finditer(text):
            if _starts_word(text, m.start()) and m.group(1) in named:
                exact.append(m.span(2))
    return sorted(bounded), sorted(exact)


def _inside(spans: list[tuple[int, int]], starts: list[int], pos: int) -> bool:
    i = bisect.bisect_right(starts, pos) - 1
    return i >= 0 and spans[i][0] <= pos < spans[i][1]


class Analysis(NamedTuple):
    units: tuple[str, ...]  # the statements, literals that may differ replaced by their kind, declared names' digits by #
    bounded: tuple[float, ...]  # the values of the workgroup sizes and workgroup array counts, in source order
    operands: tuple[float, ...]  # the values of the expression literals that may differ, in source order


def analyse(code: str) -> Analysis:
    text = COMMENT.sub(" ", code)
    bounded, exact = _places(text)
    bounded_starts, exact_starts = [b for b, _ in bounded], [b for b, _ in exact]
    bounded_values: list[float] = []
    operand_values: list[float] = []

    def kind(m: re.Match) -> str:
        literal, pos = m.group(), m.start()
        if _inside(exact, exact_starts, pos):
            return literal
        v = value(literal)
        if _inside(bounded, bounded_starts, pos):
            bounded_values.append(v)
            return f"<{BOUNDED}>"
        if v in SPECIAL:
            return literal
        operand_values.append(v)
        return f"<{operand_kind(literal, _scales(text, pos, m.end()))}>"

    normalized = " ".join(NUMBER.sub(kind, text).split())
    numbered = {name: _DIGITS.sub("#", name) for name in _DECLARED.findall(normalized) if _DIGITS.search(name)}
    named = "".join([numbered.get(part, part) for part in _WORDS.split(normalized)]) if numbered else normalized
    return Analysis(tuple(u.strip() for u in _UNIT.findall(named)), tuple(bounded_values), tuple(operand_values))


def structure(code: str) -> str:
    """The structure as text: one squashed statement a line."""
    numbering = Numbering()
    return "\n".join(numbering.text[n] for n in squash(numbering(analyse(code).units), numbering.nesting))


class Numbering:
    """Statements as numbers (squash and subsequence compare ints), each with its nesting: +1 for a statement
    that opens a block (ends in `{`), -1 for one that closes it, else 0."""

    def __init__(self):
        self.numbers: dict[str, int] = {}
        self.text: list[str] = []
        self.nesting: list[int] = []

    def __call__(self, units) -> list[int]:
        out = []
        for u in units:
            n = self.numbers.get(u)
            if n is None:
                n = self.numbers[u] = len(self.text)
                self.text.append(u)
                self.nesting.append(1 if u.endswith("{") else -1 if u.endswith("}") else 0)
            out.append(n)
        return out


def _balanced(block, nesting) -> bool:
    depth = 0
    for n in block:
        depth += nesting[n]
        if depth < 0:
            return False
    return depth == 0


def squash(units: list[int], nesting: list[int]) -> tuple:
    """The statements (numbered) with every run of two or more equal consecutive balanced blocks (a statement,
    or statements whose braces close what they open: a whole braced block, a whole loop) of up to MAX_BLOCK
    statements reduced to one copy, shortest blocks first, until none is left (an unrolled loop in an unrolled
    loop squashes from the inside out). A lone `}` or block opener is no block: nesting depth never squashes."""
    seq = list(units)
    block = 1
    while block <= min(MAX_BLOCK, len(seq) // 2):
        out, i, n = [], 0, len(seq)
        while i < n:
            if (i + 2 * block <= n and seq[i] == seq[i + block] and seq[i:i + block] == seq[i + block:i + 2 * block]
                    and _balanced(seq[i:i + block], nesting)):
                j = i + 2 * block
                while seq[j:j + block] == seq[i:i + block]:
                    j += block
                out.extend(seq[i:i + block])
                i = j
            else:
                out.append(seq[i])
                i += 1
        block = 1 if len(out) < n else block + 1
        seq = out
    return tuple(seq)


def subsequence(units, of) -> bool:
    """Whether `units` are `of`'s statements with some left out, in order."""
    rest = iter(of)
    return all(u in rest for u in units)


def tokens(code: str) -> list[tuple[str, str]]:
    """(kind, text) of every token but spacing and comments; kind is "number", "word" or "punct"."""
    return [(m.lastgroup, m.group()) for m in _TOKEN.finditer(code) if m.lastgroup != "space"]


def roles(toks: list[tuple[str, str]]) -> list[str | None]:
    """The rules read token by token: per token None (not a literal, or a literal kept as it is), BOUNDED,
    or the operand kind of a literal that may differ within a structure."""
    n = len(toks)
    out: list[str | None] = [None] * n
    exact = [False] * n
    named: set[str] = set()
    space = None  # the address space of the `var` declaration being read, until its `;`
    i = 0
    while i < n:
        text = toks[i][1]
        if text == "var":
            space = toks[i + 2][1] if toks[i + 1][1] == "<" else "function"
        elif text in (";", "{", "}"):
            space = None
        if text == "@" and i + 2 < n and toks[i + 2][1] == "(":
            attribute, i, depth = toks[i + 1][1], i + 3, 1
            while depth > 0:
                depth += {"(": 1, ")": -1}.get(toks[i][1], 0)
                if depth and toks[i][0] == "number":
                    out[i], exact[i] = (BOUNDED, False) if attribute == "workgroup_size" else (None, True)
                elif depth and toks[i][0] == "word" and attribute == "workgroup_size":
                    named.add(toks[i][1])
                i += 1
            continue
        if text == "array" and toks[i + 1][1] == "<":
            i, depth, count = i + 2, 1, False
            while depth > 0:
                t = toks[i][1]
                depth += {"<": 1, ">": -1, ">>": -2}.get(t, 0)
                if t == "," and depth == 1:
                    count = True
                elif count and depth:
                    if toks[i][0] == "number":
                        out[i], exact[i] = (BOUNDED, False) if space == "workgroup" else (None, True)
                    elif toks[i][0] == "word":
                        named.add(t)
                i += 1
            continue
        i += 1
    for i, (_, text) in enumerate(toks):
        if text in ("const", "override") and toks[i + 1][1] in named:
            j = i + 2
            while toks[j][1] != ";":
                exact[j] = toks[j][0] == "number" or exact[j]
                j += 1
    for i, (kind, text) in enumerate(toks):
        if kind == "number" and not exact[i] and out[i] != BOUNDED:
            scales = toks[i - 1][1] in SCALING or toks[i - 1][1] in ("*=", "/=", "%=") or (
                i + 1 < n and toks[i + 1][1] in SCALING)
            out[i] = None if value(text) in SPECIAL else operand_kind(text, scales)
    return out


def statements(code: str) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """The rules read token by token (`roles`): the statements (tokens joined by spaces, each literal that may
    differ as its kind, the declared names' digits as #) and the values of the workgroup sizes and workgroup
    array counts, in source order."""
    toks = tokens(code)
    declared = {toks[i + 1][1] for i, (_, text) in enumerate(toks[:-1])
                if text in ("let", "var", "const") and toks[i + 1][0] == "word"}
    units, unit, bounded = [], [], []
    for (kind, text), role in zip(toks, roles(toks)):
        if role == BOUNDED:
            bounded.append(value(text))
            text = f"<{BOUNDED}>"
        elif role is not None:
            text = f"<{role}>"
        elif kind == "word" and text in declared:
            text = _DIGITS.sub("#", text)
        unit.append(text)
        if text in (";", "{", "}"):
            units.append(" ".join(unit))
            unit = []
    if unit:
        units.append(" ".join(unit))
    return tuple(units), tuple(bounded)
