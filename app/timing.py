"""Times calls on the GPU: warm-up runs, then the median and min of N runs (pure Python, runs in Pyodide)."""
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
