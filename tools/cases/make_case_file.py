"""Turns a list of case specs into a case file with float64-reference expected values.

    python tools/cases/make_case_file.py tools/cases/<family>.py OUT.json

A spec is {"name", "x": shape, "w": shape, "bias": bool, "attributes": {...}}; data is seeded uniform(-1, 1)
rounded to float32.
"""
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from app.reference import conv_transpose_reference  # noqa: E402
from app.shapes import infer  # noqa: E402


def tolerance(geom) -> dict:
    # f32 rounding grows with the reduction length (in-channels per group x taps); values are ~U(-1, 1).
    terms = geom.in_per_group * int(np.prod(geom.kernel))
    return {"atol": float(min(1e-3, max(1e-5, 1e-6 * terms))), "rtol": 1e-4}


def tensor(arr: np.ndarray) -> dict:
    return {"dtype": "float32", "shape": list(arr.shape), "data": [float(v) for v in arr.ravel()]}


def build_case(spec: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    attrs = spec.get("attributes", {})
    x = rng.uniform(-1, 1, spec["x"]).astype(np.float32)
    w = rng.uniform(-1, 1, spec["w"]).astype(np.float32)
    b = rng.uniform(-1, 1, spec["w"][1] * attrs.get("group", 1)).astype(np.float32) if spec.get("bias") else None
    geom = infer(x.shape, w.shape, None if b is None else b.shape, attrs)
    y = conv_transpose_reference(geom, x, w, b).astype(np.float32)
    inputs = {"x": tensor(x), "w": tensor(w)} | ({"b": tensor(b)} if b is not None else {})
    return {"name": spec["name"], "inputs": inputs, "attributes": attrs, "expected": {"y": tensor(y)},
            "tolerance": tolerance(geom)}


def load_specs(path: str) -> list[dict]:
    module_spec = importlib.util.spec_from_file_location("case_specs", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.SPECS


if __name__ == "__main__":
    specs = load_specs(sys.argv[1])
    cases = [build_case(spec, seed) for seed, spec in enumerate(specs)]
    Path(sys.argv[2]).write_text(json.dumps({"op": "ai.onnx.ConvTranspose", "version": 1, "cases": cases}))
    print(f"wrote {len(cases)} cases to {sys.argv[2]}")
