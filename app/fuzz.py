"""Differential fuzzing: seeded random valid requests, the kernel's answer against the float64 reference.

`random_request(rng)` draws one valid request (ranks 1-3, group/depthwise, odd sizes, strides, dilations,
pads, output_padding, auto_pad, output_shape in both forms, bias or not) small enough for SwiftShader.
`run_fuzz(kernel, seed, count)` runs `count` of them with the planner's choice and, on every `force_every`-th
one, again with every other variant that covers it; each mismatch or crash comes back as a case in
test.json's format (`case_file`), so `python -m app cases FILE` reproduces it. Pure Python and numpy: it
runs in the page (tests/test_fuzz.py drives it) and its generator in CPython.
"""
from __future__ import annotations

import math

import numpy as np

from . import planner
from .cases import compare
from .errors import ConvTransposeError
from .shapes import infer
from .reference import conv_transpose_reference
from .variants import VARIANTS

TOLERANCE = {"atol": 1e-4, "rtol": 1e-4}  # f32 sums of <= a few hundred products of values in [-1, 1]
MAX_OUTPUT = 3000  # elements: SwiftShader runs every case in a few ms


def _draw_attributes(rng, rank: int, spatial, kernel, batch: int, out_channels: int) -> dict:
    strides = [int(rng.choice([1, 1, 2, 2, 3, 4])) for _ in range(rank)]
    dilations = [int(rng.choice([1, 1, 1, 2, 3])) for _ in range(rank)]
    attrs: dict = {}
    if rng.random() < 0.8 or any(s > 1 for s in strides):
        attrs["strides"] = strides
    if any(d > 1 for d in dilations) or rng.random() < 0.2:
        attrs["dilations"] = dilations
    mode = rng.choice(["default", "pads", "pads", "SAME_UPPER", "SAME_LOWER", "VALID", "NOTSET",
                       "output_shape", "output_shape_full"])
    if mode == "pads":
        attrs["pads"] = [int(rng.integers(0, 3)) for _ in range(2 * rank)]
    elif mode in ("SAME_UPPER", "SAME_LOWER", "VALID", "NOTSET"):
        attrs["auto_pad"] = str(mode)
    elif mode.startswith("output_shape"):
        # at most s*I + (k-1)*d (app/shapes.py refuses longer ones): a draw past it takes that bound, an edge
        # worth drawing; the full form's head is y's own N and M, as it must be
        target = [min(max(1, s * i + int(rng.integers(-2, 3))), s * i + (k - 1) * d)
                  for s, i, k, d in zip(strides, spatial, kernel, dilations)]
        attrs["output_shape"] = target if mode == "output_shape" else [batch, out_channels] + target
        if rng.random() < 0.3:
            attrs["auto_pad"] = str(rng.choice(["SAME_UPPER", "SAME_LOWER"]))
    if rng.random() < 0.35:
        attrs["output_padding"] = [int(rng.integers(0, max(s, d))) for s, d in zip(strides, dilations)]
    if rng.random() < 0.2:
        attrs["kernel_shape"] = list(kernel)
    return attrs


def random_request(rng: np.random.Generator) -> dict:
    """One valid request: {"x", "w", "b" (or None): float32 arrays, "attributes": dict}."""
    while True:
        rank = int(rng.integers(1, 4))
        group = int(rng.choice([1, 1, 1, 2, 3, 4]))
        depthwise = group > 1 and rng.random() < 0.4
        # Channel counts past the fast variants' thresholds (8, 16, 32 per group) come up too.
        cpg = 1 if depthwise else int(rng.choice([1, 2, 3, 5, 8, 9] + ([16, 33] if rank < 3 else [16])))
        mpg = int(rng.choice([1, 2, 3, 4, 5, 16]))
        batch = int(rng.choice([1, 1, 1, 2, 3]))
        spatial = [int(rng.integers(1, {1: 12, 2: 7, 3: 4}[rank])) for _ in range(rank)]
        kernel = [int(rng.integers(1, {1: 6, 2: 4, 3: 3}[rank] + 1)) for _ in range(rank)]
        if rng.random() < 0.1:  # pointwise: the 1x1 GEMMs' and stride-1 variants' shape class
            kernel, attrs = [1] * rank, {}
        else:
            attrs = _draw_attributes(rng, rank, spatial, kernel, batch, mpg * group)
        if group > 1:
            attrs["group"] = group
        x_shape, w_shape = [batch, cpg * group, *spatial], [cpg * group, mpg, *kernel]
        bias = rng.random() < 0.5
        try:
            geom = infer(x_shape, w_shape, [mpg * group] if bias else None, attrs)
        except ConvTransposeError:
            continue  # e.g. an output_shape or pads that leave a dim <= 0: draw again
        if geom.y_size > MAX_OUTPUT or geom.y_size == 0:
            continue
        # The data is uniform in [-1, 1] (finite): `geom` is the request's validated geometry as drawn.
        return {"x": rng.uniform(-1, 1, x_shape).astype(np.float32),
                "w": rng.uniform(-1, 1, w_shape).astype(np.float32),
                "b": rng.uniform(-1, 1, mpg * group).astype(np.float32) if bias else None,
                "attributes": attrs, "geom": geom}


def _tensor(arr: np.ndarray) -> dict:
    return {"dtype": "float32", "shape": list(arr.shape), "data": [float(v) for v in arr.ravel()]}


def case_file(cases: list[dict]) -> dict:
    """A test.json-format document of fuzz cases (each from `to_case`)."""
    return {"op": "ai.onnx.ConvTranspose", "version": 1, "cases": cases}


def to_case(name: str, request: dict, want: np.ndarray) -> dict:
    inputs = {"x": _tensor(request["x"]), "w": _tensor(request["w"])}
    if request["b"] is not None:
        inputs["b"] = _tensor(request["b"])
    return {"name": name, "inputs": inputs, "attributes": request["attributes"],
            "expected": {"y": {"dtype": "float32", "shape": list(want.shape),
                               "data": [float(v) for v in want.ravel()]}},
            "tolerance": dict(TOLERANCE)}


async def run_fuzz(kernel, seed: int, count: int, force_every: int = 5, start: int = 0,
                   unfittable_ok: bool = False) -> dict:
    """Runs requests start..start+count-1 of the seeded stream; returns counts and the failing cases.

    With `unfittable_ok` (a kernel with lowered limits), a refusal because no split fits is counted, not failed."""
    calls, split, unfittable, variants, failures = 0, 0, 0, {}, []
    for index in range(start, start + count):
        rng = np.random.default_rng([seed, index])  # each case reproducible on its own
        request = random_request(rng)
        geom = request["geom"]  # the call below validates the request again: that path is under test too
        want = conv_transpose_reference(geom, request["x"], request["w"], request["b"])
        forced = [None]
        if force_every and index % force_every == 0:
            forced += [name for name in sorted(VARIANTS) if planner.refusal(geom, kernel.device.caps, name) is None]
        for variant in dict.fromkeys(forced):
            calls += 1
            name = f"fuzz_s{seed}_i{index}" + (f"_{variant}" if variant else "")
            try:
                out = await kernel(x=request["x"], w=request["w"], b=request["b"], variant=variant,
                                   **request["attributes"])
            except ConvTransposeError as exc:
                if unfittable_ok and "does not fit this device even split" in str(exc):
                    unfittable += 1
                    continue
                failures.append({"case": to_case(name, request, want), "variant": variant,
                                 "detail": f"{type(exc).__name__}: {exc}"})
                continue
            except Exception as exc:  # a GPU failure or a crash
                failures.append({"case": to_case(name, request, want), "variant": variant,
                                 "detail": f"{type(exc).__name__}: {exc}"})
                continue
            used = out["meta"]["variant"]
            split += out["meta"].get("pieces", 1) > 1
            variants[used] = variants.get(used, 0) + 1
            ok, err = compare(out["y"], want, **TOLERANCE)
            if not ok:
                failures.append({"case": to_case(name, request, want), "variant": used,
                                 "detail": f"max abs error {err:.3g}" if math.isfinite(err) else "shape mismatch"})
    return {"seed": seed, "start": start, "cases": count, "calls": calls, "split": split, "unfittable": unfittable, "variants": variants,
            "failures": failures}
