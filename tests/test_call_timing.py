"""A call's GPU time (meta.gpu_ms, what adaptation times its candidates by) counts the passes that call ran: a
launch whose weight passes ran on its first call and are skipped after (w constant, its layouts kept) resolves only
the later calls' own timestamps. Dawn resolves a query an earlier call wrote to that call's time: read whole, the
weight pass of the first call was added to every later call (0.14 ms to a 0.05 ms kernel on an H100, and
adaptation ranked kernels with weight passes 1.5-4x too slow)."""
import json
import subprocess
from pathlib import Path

from app.host.node import node_env

ROOT = Path(__file__).resolve().parent.parent


def test_a_call_that_skips_its_weight_pass_resolves_only_its_own_timestamps(kernel):
    done = subprocess.run(["node", str(ROOT / "tests" / "timing_probe.mjs"), str(kernel)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=node_env())
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and rows, done.stderr[-3000:]
    first, *later = rows[-1]["calls"]
    assert all(c["variant"] == "col2im_gemm_vec4" for c in rows[-1]["calls"])
    # 3 passes, 2 timestamps each: the first call ran the weight pass (queries 0-1), the later ones did not
    assert first["resolved"] == [[0, 6]], first
    for c in later:
        assert c["resolved"] == [[2, 4]], c
    assert all(c["gpu_ms"] is not None and c["gpu_ms"] > 0 for c in rows[-1]["calls"])
