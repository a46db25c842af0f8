"""Times variants side by side on one request in headless Chromium (development aid; the benchmark
runner comes with bench.json).

    python tools/time_variants.py '{"x": [1, 64, 32, 32], "w": [64, 32, 4, 4], "bias": true,
                                    "attributes": {"strides": [2, 2], "pads": [1, 1, 1, 1]}}' nchw2d_gather other_variant
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.host.bench_runner import open_host  # noqa: E402


def main() -> None:
    spec, variants = json.loads(sys.argv[1]), sys.argv[2:] or [None]
    with open_host("browser") as app:
        rows = app.py("time_variants", spec, variants, 5)
    for row in rows:
        if "error" in row:
            print(f"{row['variant']:40s} ERROR {row['error']}")
        else:
            print(f"{row['variant']:40s} median {row['median_ms']:9.3f} ms  min {row['min_ms']:9.3f} ms  ({row['source']})")


if __name__ == "__main__":
    main()
