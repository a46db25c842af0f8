"""Times bench.json's cases with PyTorch's torch.nn.functional.conv_transpose{1,2,3}d (cuDNN) on the GPU:
the hardware reference for the GPU report. fp32 with TF32 off (so it does the same arithmetic as ours),
and fp16. Same seeded data as our bench (app.bench.make_inputs), CUDA events after warm-up, per run `repeats` back-to-back calls (the GPU stays at its working clocks, as ours is timed),
median and min of N runs; its fp32 output is checked against the float64 reference as our rows are
(app/bench.py check: all of it, or sampled points at large sizes such as the holdout tier's iSTFT).

    python3 tools/gpu/torch_bench.py [--tier full] [--runs 10] [--repeats 20] --out torch.json
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from app import bench  # noqa: E402
from app.kernel import validate  # noqa: E402

CONV = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def torch_call(geom, x, w, b):
    """ONNX geometry -> a torch call giving the same output (asymmetric pads: computed unpadded, cropped)."""
    symmetric = geom.pads_begin == geom.pads_end
    pads = geom.pads_begin if symmetric else (0,) * geom.rank
    natural = [(i - 1) * s - 2 * p + d * (k - 1) + 1 for i, s, p, d, k in
               zip(geom.in_spatial, geom.strides, pads, geom.dilations, geom.kernel)]
    extra = [o - n for o, n in zip(geom.out_spatial, natural)] if symmetric else [0] * geom.rank
    crop = None if symmetric else tuple(slice(pb, pb + o) for pb, o in zip(geom.pads_begin, geom.out_spatial))
    conv = CONV[geom.rank]

    def call():
        y = conv(x, w, b, stride=geom.strides, padding=pads, output_padding=extra, groups=geom.group,
                 dilation=geom.dilations)
        return y if crop is None else y[(..., *crop)]

    return call


def time_call(call, runs: int, repeats: int, warmup: int = 3) -> dict:
    """Per call: CUDA events around `repeats` back-to-back calls, divided by `repeats` (as ours is timed)."""
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    per_call = None
    samples = []
    for _ in range(runs):
        if per_call:  # as ours: about bench.BUSY_MS of untimed calls first, so the clocks are up
            for _ in range(min(20000, math.ceil(bench.BUSY_MS / per_call))):
                call()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(repeats):
            call()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / repeats)
        per_call = samples[-1]
    return {"median_ms": statistics.median(samples), "min_ms": min(samples)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tier", default="full")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out", required=True)
    parser.add_argument("--bench", default=str(ROOT / "bench.json"), help="a bench file other than bench.json")
    parser.add_argument("--skip", default="", help="comma-separated cases not to run (the holdout iSTFT: cuDNN "
                                                   "had not finished it after 9 minutes on the H200)")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    rows = []
    for case in bench.load(Path(args.bench).read_text(), args.tier):
        if case["name"] in skip:
            continue
        inputs = bench.make_inputs(case)
        geom, arrays = validate(**inputs, **case["attributes"])
        row = {"case": case["name"], "flop": 2 * geom.multiply_adds(), "device": torch.cuda.get_device_name(),
               "bytes_f32": 4 * (sum(a.size for a in arrays.values()) + geom.y_size)}
        for dtype, torch_dtype in (("float32", torch.float32), ("float16", torch.float16)):
            x, w = (torch.from_numpy(arrays[k].astype(np.float32)).cuda().to(torch_dtype) for k in ("x", "w"))
            b = torch.from_numpy(arrays["b"].astype(np.float32)).cuda().to(torch_dtype) if "b" in arrays else None
            call = torch_call(geom, x, w, b)
            row[dtype] = time_call(call, args.runs, args.repeats)
            if dtype == "float32":
                checked = bench.check(geom, arrays, call().cpu().numpy())
                row["max_abs_err_fp32"], row["check_fp32"] = checked["max_abs_err"], checked
        rows.append(row)
        print(f"{row['case']:24s} fp32 {row['float32']['median_ms']:8.4f} ms  fp16 {row['float16']['median_ms']:8.4f} ms"
              f"  err {row['max_abs_err_fp32']:.2g}", flush=True)
    Path(args.out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
