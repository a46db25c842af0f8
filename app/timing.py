"""Times calls and plans on the GPU: warm-up runs, then the median and min of N runs (pure Python, runs in Pyodide)."""
from __future__ import annotations

import statistics
import time


async def time_call(call, warmup: int = 1, runs: int = 5) -> dict:
    """`call()`: one kernel call (awaitable, returns {"y", "meta"}). GPU time from timestamp-query where the
    device has it, else wall time around submit-and-read."""
    samples, walls, meta = [], [], None
    for i in range(warmup + runs):
        start = time.perf_counter()
        out = await call()
        wall = (time.perf_counter() - start) * 1000
        if i >= warmup:
            meta = out["meta"]
            walls.append(wall)
            samples.append(meta["gpu_ms"] if meta["gpu_ms"] is not None else wall)
    return {"variant": meta["variant"], "median_ms": statistics.median(samples), "min_ms": min(samples),
            "wall_median_ms": statistics.median(walls), "source": "timestamp-query" if meta["gpu_ms"] is not None else "wall",
            "y": out["y"]}


# With repeats > 1 (a real GPU), each timed run follows this much untimed work on the same queue: an H200
# timed between host round trips sat at 345-705 MHz of its 1980 (nvidia-smi), and ranked candidates by
# luck. tools/gpu/torch_bench.py keeps cuDNN busy the same way before its timed runs.
BUSY_MS = 100


async def time_plan(kernel, geom, arrays, variant=None, runs=5, warmup=1, repeats=1, plan=None, params=None,
                    tables=None):
    """(plan, [(wall ms, GPU ms or None)] per run, y): the plan (the caller's, else planned here with
    `variant`, `params` and `tables` as kernel.plan takes them) launched once,
    timed with its inputs on the GPU and y left there (web/runtime/executor.mjs Launch.time), y read back once
    after, then destroyed."""
    gpu = await kernel.device.current()
    plan = plan if plan is not None else kernel.plan(geom, variant, params, tables)
    launch = await gpu.compile_launch(plan, geom)
    try:
        samples = await gpu.time_launch(launch, arrays, warmup=warmup, runs=runs, repeats=repeats,
                                        busy_ms=BUSY_MS if repeats > 1 else 0)
        return plan, samples, await gpu.output(launch, geom)
    finally:
        launch.destroy()
