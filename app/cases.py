"""Case files (test.json's format): parse them strictly and run one case against a kernel.

A case passes when the kernel's y matches `expected` within `tolerance` (|got - want| <= atol + rtol*|want|,
NaNs in the same places), or, for `"expected_error": true`, when the kernel refuses it with
ConvTransposeError before any GPU work. Pure Python: the same code runs in the page and in CPython.
"""
from __future__ import annotations

import json
import math
import time

import numpy as np

from .errors import ConvTransposeError
from .kernel import validate
from .split import Unfittable


RESERVED = {"x", "w", "b", "variant"}


class CaseFileError(ValueError):
    """A case file that does not follow the format."""


def _tensor(case: str, name: str, spec) -> dict:
    if not isinstance(spec, dict) or not {"shape", "data"} <= set(spec):
        raise CaseFileError(f"case {case!r}: tensor '{name}' needs 'shape' and 'data'")
    if not isinstance(spec["data"], list):
        raise CaseFileError(f"case {case!r}: tensor '{name}' data must be a flat list")
    return {"shape": spec["shape"], "data": spec["data"], "dtype": spec.get("dtype", "float32")}


def parse_case_file(text: str) -> list[dict]:
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
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    if got64.shape != want64.shape:
        return False, math.inf
    same_nonfinite = np.array_equal(np.isnan(got64), np.isnan(want64)) and np.array_equal(
        got64[np.isinf(want64)], want64[np.isinf(want64)])
    finite = np.isfinite(want64)
    err = np.abs(got64[finite] - want64[finite])
    max_err = float(err.max()) if err.size else 0.0
    ok = same_nonfinite and bool(np.all(err <= atol + rtol * np.abs(want64[finite])))
    return ok, max_err


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
    want = case["expected"]
    want_arr = np.asarray(want["data"], dtype=np.float64).reshape(want["shape"])
    ok, err = compare(out["y"], want_arr, **case["tolerance"])
    return result | {"status": "PASS" if ok else "FAIL", "max_abs_err": err,
                     "detail": "" if ok else f"mismatch (shape {list(out['y'].shape)} vs {want['shape']})"}


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)
