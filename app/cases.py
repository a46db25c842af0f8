"""Case files (test.json's format): parse them strictly and run one case against a kernel.

A case passes when the kernel's y matches `expected` within `tolerance` (|got - want| <= atol + rtol*|want|,
NaNs in the same places, infinities equal), or, for `"expected_error": true`, when the kernel refuses it with
ConvTransposeError before any GPU work. A case whose `expected` cannot be y (data not numbers, or not as many
as its shape) fails with the reason. Pure Python: the same code runs in the page and in CPython.

The text is untrusted: it is nested at most MAX_DEPTH brackets deep before json.loads sees it (json.loads
recurses per bracket: a 100,000-deep file raised RecursionError in CPython, and would overflow Pyodide's
stack in the page). Names and messages reach a terminal through `printable`.
"""
from __future__ import annotations

import json
import math
import os
import stat
import time
from contextlib import contextmanager

from .errors import ConvTransposeError
from .kernel import validate
from .lazy_numpy import np
from .split import Unfittable
from .store_entries import nesting


RESERVED = {"x", "w", "b", "variant"}
MAX_DEPTH = 64  # test.json is 6 deep; attributes may add a level or two


class CaseFileError(ValueError):
    """A case file that does not follow the format."""


class FileRefused(ValueError):
    """A path that is not a regular file, or one past the byte budget: refused before it is read."""


def printable(text: str) -> str:
    """text with every non-printable character (controls, bidi overrides, line separators) as its Python
    escape, so that a name from a file cannot move the cursor, recolour or rewrite a terminal's lines."""
    return text if text.isprintable() else "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


@contextmanager
def open_regular(path):
    """The binary file at `path`, opened only if it is a regular file (FileRefused otherwise): a FIFO would block
    the open or the read, and a device such as /dev/zero reads without end while its size says 0."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        raise FileRefused(f"cannot read the file ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        raise FileRefused(f"not a regular file ({_kind(mode)})")
    try:
        # O_NONBLOCK: a path swapped for a FIFO after the stat does not hang the open; fstat then refuses it
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise FileRefused(f"cannot read the file ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as f:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FileRefused(f"not a regular file ({_kind(mode)})")
        yield f


def read_regular(path, budget: int) -> bytes:
    """The bytes of the regular file at `path`, at most `budget` of them (FileRefused otherwise; nothing past
    budget + 1 bytes is read, even from a file that grows while it is read)."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size > budget:
            raise FileRefused(f"the file is {size} bytes, past the budget of {budget}")
        data = f.read(budget + 1)
    if len(data) > budget:
        raise FileRefused(f"the file grew past the budget of {budget} bytes while it was read")
    return data


def _tensor(case: str, name: str, spec) -> dict:
    if not isinstance(spec, dict) or not {"shape", "data"} <= set(spec):
        raise CaseFileError(f"case {case!r}: tensor '{name}' needs 'shape' and 'data'")
    if not isinstance(spec["data"], list):
        raise CaseFileError(f"case {case!r}: tensor '{name}' data must be a flat list")
    return {"shape": spec["shape"], "data": spec["data"], "dtype": spec.get("dtype", "float32")}


def parse_case_file(text: str) -> list[dict]:
    depth = nesting(text)
    if depth > MAX_DEPTH:
        raise CaseFileError(f"nested {depth} brackets deep, past the limit of {MAX_DEPTH}")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CaseFileError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cases"), list):
        raise CaseFileError("a case file is an object with a 'cases' list")
    cases = []
    for i, case in enumerate(doc["cases"]):
        if not isinstance(case, dict) or not isinstance(case.get("name"), str):
            raise CaseFileError(f"case #{i} must be an object with a string 'name'")
        name = case["name"]
        inputs = case.get("inputs")
        if not isinstance(inputs, dict) or not {"x", "w"} <= set(inputs) or set(inputs) - {"x", "w", "b"}:
            raise CaseFileError(f"case {name!r}: 'inputs' must hold x, w and optionally b")
        attributes = case.get("attributes", {})
        if not isinstance(attributes, dict):
            raise CaseFileError(f"case {name!r}: 'attributes' must be an object")
        reserved = sorted(set(attributes) & RESERVED)
        if reserved:  # these would collide with the kernel call's own arguments
            raise CaseFileError(f"case {name!r}: {reserved} are not attributes")
        parsed = {"name": name, "attributes": attributes,
                  "inputs": {k: _tensor(name, k, v) for k, v in inputs.items()},
                  "expected_error": case.get("expected_error") is True}
        if not parsed["expected_error"]:
            expected = case.get("expected", {})
            if not isinstance(expected, dict) or "y" not in expected:
                raise CaseFileError(f"case {name!r}: needs 'expected': {{'y': ...}} or 'expected_error': true")
            parsed["expected"] = _tensor(name, "y", expected["y"])
            tol = case.get("tolerance", {})
            # A non-finite or negative tolerance would pass any answer (or none): refused, not trusted.
            if not isinstance(tol, dict) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
                    for v in (tol.get("atol", 0), tol.get("rtol", 0))):
                raise CaseFileError(
                    f"case {name!r}: 'tolerance' must be {{'atol': number, 'rtol': number}}, finite and >= 0")
            parsed["tolerance"] = {"atol": float(tol.get("atol", 1e-4)), "rtol": float(tol.get("rtol", 1e-4))}
        cases.append(parsed)
    return cases


def compare(got: np.ndarray, want: np.ndarray, atol: float, rtol: float) -> tuple[bool, float]:
    """Whether got matches want, and the max abs error over the finite entries."""
    ok, max_err, _ = check(got, want, atol, rtol)
    return ok, max_err


def check(got: np.ndarray, want: np.ndarray, atol: float, rtol: float) -> tuple[bool, float, str]:
    """compare's answer and, when it fails, why: the worst entry (its index, got and want), the max abs error,
    the tolerance and how many entries are off. Where want is NaN got must be NaN; where it is +-Inf, equal."""
    got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got64.shape != want64.shape:
        return False, math.inf, f"y has shape {list(got64.shape)}, expected {list(want64.shape)}"
    finite = np.isfinite(want64)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.where(finite, np.abs(got64 - want64), 0.0)
        limit = atol + rtol * np.abs(want64)
    max_err = float(err[finite].max()) if finite.any() else 0.0
    off_value = finite & ~(err <= limit)  # a NaN error (got NaN where want is a number) is off too
    off_special = ~finite & ~((np.isnan(want64) & np.isnan(got64)) | (got64 == want64))
    off = off_value | off_special
    if not off.any():
        return True, max_err, ""
    # the worst entry: a misplaced NaN or Inf first, then the largest error
    score = np.where(off_special | (off_value & np.isnan(err)), np.inf, np.where(off, err, -1.0))
    at = np.unravel_index(int(np.argmax(score)), got64.shape)
    where = f"y[{', '.join(map(str, at))}] = {got64[at]:.6g}, expected {want64[at]:.6g}"
    if off_special[at] or math.isnan(err[at]):
        why = f"{where} (NaNs must be in the same places, infinities equal)"
    else:
        why = f"{where}: error {err[at]:.3g} > atol {atol:g} + rtol {rtol:g} * |{want64[at]:.6g}| = {limit[at]:.3g}"
    return False, max_err, f"{why}; max_abs_err {max_err:.3g}, {int(off.sum())} of {off.size} values off"


def expected_array(spec: dict) -> np.ndarray:
    """A case's expected y as float64 (CaseFileError: a shape that is not non-negative integers, data that is
    not numbers, or not as many as the shape holds)."""
    shape, data = spec["shape"], spec["data"]
    if not isinstance(shape, list) or any(isinstance(d, bool) or not isinstance(d, int) or d < 0 for d in shape):
        raise CaseFileError(f"expected y: shape must be a list of non-negative integers, got {shape!r}")
    bad = [v for v in data if isinstance(v, bool) or not isinstance(v, (int, float))][:1]
    if bad:  # numpy would make None a NaN, and "1" 1.0
        raise CaseFileError(f"expected y: data must be a flat list of numbers, found {bad[0]!r}")
    if len(data) != math.prod(shape):
        raise CaseFileError(f"expected y: data has {len(data)} values, its shape {shape} needs {math.prod(shape)}")
    try:
        return np.asarray(data, dtype=np.float64).reshape(shape)
    except (OverflowError, ValueError) as exc:  # an integer past float range
        raise CaseFileError(f"expected y: data is not float64 numbers ({exc})") from None


async def run_case(kernel, case: dict, variant: str | None = None, params: dict | None = None) -> dict:
    """Runs one parsed case; returns {name, status: PASS|FAIL|SKIP, variant, max_abs_err, detail, ms}. `params`
    (with a forced `variant`): its tile params, the case skipped where the variant does not take them all."""
    result = {"name": case["name"], "status": "FAIL", "variant": "-", "max_abs_err": None, "detail": "", "ms": 0.0}
    start = time.perf_counter()
    try:
        geom, arrays = validate(**case["inputs"], **case["attributes"])
    except ConvTransposeError as exc:
        if case["expected_error"]:
            # Under a forced variant the case exercises no variant: skipped, not counted for it.
            return result | {"status": "SKIP" if variant else "PASS", "detail": f"refused: {exc}", "ms": _ms(start)}
        return result | {"detail": f"refused a valid case: {exc}", "ms": _ms(start)}
    if case["expected_error"]:
        return result | {"detail": "expected a validation error, the request was accepted"}
    try:
        want_arr = expected_array(case["expected"])
    except CaseFileError as exc:  # the file's fault, found before any GPU work
        return result | {"detail": str(exc), "ms": _ms(start)}
    try:
        pieces = kernel.pieces(geom, variant, params)
    except Unfittable:
        pieces = None  # the call below refuses it again: a valid case refused is a failure
    except ConvTransposeError as exc:  # the forced variant does not cover it, or the device lacks its dtype
        return result | {"status": "SKIP", "detail": str(exc)}
    if params and not all(p.tiles.get(k) == v for _, p in pieces or () for k, v in params.items()):
        return result | {"status": "SKIP", "detail": f"the variant does not take {params} here"}
    try:
        out = await kernel.call(geom, arrays, case["attributes"], variant, pieces=pieces, params=params)
    except Exception as exc:  # a crash or GPU error is a failure, reported, never raised past the runner
        return result | {"detail": f"{type(exc).__name__}: {exc}", "ms": _ms(start)}
    result |= {"variant": out["meta"]["variant"], "ms": _ms(start)}
    ok, err, why = check(out["y"], want_arr, **case["tolerance"])
    return result | {"status": "PASS" if ok else "FAIL", "max_abs_err": err, "detail": why}


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)
