"""tools/adapt_bench.mjs, the adaptation bench, in Node on Dawn/SwiftShader: a small layer called through getKernel,
with other GPU work queued before each call (BUSY_MS) as the GPU machine's runs do."""
import json
import subprocess
from pathlib import Path

import pytest

from app.host.node import node_env

ROOT = Path(__file__).resolve().parent.parent
CASE = {"name": "tiny", "tier": "t", "x": [1, 4, 5, 5], "w": [4, 2, 3, 3], "attributes": {"strides": [2, 2]}, "bias": True}


@pytest.mark.browser
def test_busy_work_runs_before_each_call_and_the_rows_come_out(kernel, tmp_path):
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"cases": [CASE]}))
    done = subprocess.run(["node", str(ROOT / "tools" / "adapt_bench.mjs"), str(kernel), str(bench), "t", "float32",
                           "", "4", "0", "5"], cwd=ROOT, capture_output=True, text=True, timeout=300, env=node_env())
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert "device" in rows[0] and "calibration" in rows[-1], rows
    (row,) = [r for r in rows if r.get("case") == "tiny"]
    assert row["calls"] == 4 and row["error"] is None and row["trial"]["calls"] == 4, row
