"""cuBLAS (torch.matmul) on the GEMMs of tools/gpu/gemm_ceiling.mjs: the vendor's ceiling beside the WGSL one.

C[M,N] = A[M,K] B[K,N], row-major, random normal data on the GPU. Per dtype mode: untimed calls for BUSY_MS
first (an idle H200 drops to a third of its clocks), then RUNS calls back to back, each between its own
pair of CUDA events; median (and min) per call; TFLOP/s = 2 M N K / t.
Modes: fp16 with fp32 accumulation (cuBLAS's default for half GEMMs; reduced-precision reduction, which
torch allows by default, is turned off so that every sum is an f32 one as in the WGSL kernels), fp16 as
torch ships it (reduced-precision reduction allowed), fp32 with TF32 off (the same arithmetic as the WGSL
f32 kernels), fp32 with TF32 on (tensor cores, 10-bit mantissas), bf16.

    python3 tools/gpu/cublas_ceiling.py [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import statistics

import torch

SIZES = {"4096": (4096, 4096, 4096), "8192": (8192, 8192, 8192), "skinny": (65536, 256, 4608)}
BUSY_MS = 200
RUNS = 20
MODES = {  # name: (dtype, allow_tf32, allow_fp16_reduced_precision_reduction)
    "fp16 (fp32 accumulate)": (torch.float16, False, False),
    "fp16 (torch default)": (torch.float16, False, True),
    "fp32 (TF32 off)": (torch.float32, False, False),
    "fp32 (TF32 on)": (torch.float32, True, False),
    "bf16": (torch.bfloat16, False, False),
}


def time_matmul(a: torch.Tensor, b: torch.Tensor) -> list[float]:
    c = torch.matmul(a, b)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.matmul(a, b, out=c)
    end.record()
    end.synchronize()
    once = max(start.elapsed_time(end), 0.01)
    for _ in range(min(5000, int(BUSY_MS / once) + 1)):  # untimed: the GPU at its working clocks
        torch.matmul(a, b, out=c)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(RUNS)]
    for s, e in events:
        s.record()
        torch.matmul(a, b, out=c)
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in events]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    props = torch.cuda.get_device_properties(0)
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, cuBLAS via torch.matmul on {props.name} "
          f"({props.multi_processor_count} SMs)")
    rows = []
    gen = torch.Generator(device="cuda").manual_seed(0)
    for size, (m, n, k) in SIZES.items():
        for mode, (dtype, tf32, reduced) in MODES.items():
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = reduced
            a = torch.randn(m, k, device="cuda", dtype=dtype, generator=gen)
            b = torch.randn(k, n, device="cuda", dtype=dtype, generator=gen)
            ms = sorted(time_matmul(a, b))
            med = statistics.median(ms)
            tflops = 2 * m * n * k / med / 1e9
            rows.append({"size": size, "m": m, "n": n, "k": k, "mode": mode, "median_ms": med, "min_ms": ms[0],
                         "max_ms": ms[-1], "tflops": tflops})
            print(f"{size:6} {mode:24} median {med:.4f} ms (min {ms[0]:.4f}, max {ms[-1]:.4f})  {tflops:.1f} TFLOP/s",
                  flush=True)
            del a, b
            torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": props.name, "torch": torch.__version__, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
