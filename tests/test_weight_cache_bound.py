"""The weight cache's byte bound holds per device (web/runtime/weight-cache.mjs), across every kernel's cache on
one executor: a new entry pushes out other kernels' least recently used entries first, memory() shows the
device's total. In Node, on a stand-in executor that counts buffers (the bound is arithmetic, no GPU needed)."""
import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import { WeightCache } from "%s/web/runtime/weight-cache.mjs";
const executor = { caches: new Map(), live: 0, allocate(size) { this.live += size; return { size }; },
                   release(buf) { this.live -= buf.size; }, write() {} };
const cacheOf = (owner, limit) => { const c = new WeightCache(executor, limit); executor.caches.set(owner, c); return c; };
const MiB = 2 ** 20, limit = 512 * MiB;
const kernels = [cacheOf(1, limit), cacheOf(2, limit), cacheOf(3, limit)];
const seen = [];
let arrays = [];
for (let i = 0; i < 12; i++) {  // three kernels' weights, 64 MiB each, in turn: 704 MiB would be held per-kernel
  const w = new Float32Array(4);  // the key: its identity, not its size (a stand-in for 64 MiB of weights)
  arrays.push(w);
  const cache = kernels[i %% 3];
  const got = cache.upload(w, 64 * MiB, "w");
  cache.trim([w]);
  seen.push({ kept: got !== null, device: cache.deviceBytes(), live: executor.live });
}
const stats = kernels[0].stats();
const errors = [];
for (const bad of [Infinity, NaN, -1, "5"]) { try { new WeightCache(executor, bad); errors.push(null); } catch (e) { errors.push(e.name); } }
// the oldest entries went first: the last eight uploads are still there
const held = arrays.map((w, i) => kernels[i %% 3].entries.has(w));
console.log(JSON.stringify({ seen, stats, errors, held }));
"""


def test_three_kernels_on_one_device_share_one_bound_and_memory_shows_the_total():
    out = subprocess.run(["node", "--input-type=module", "-e", SCRIPT % ROOT], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    mib = 2**20
    assert all(s["kept"] for s in result["seen"])
    assert max(s["device"] for s in result["seen"]) <= 512 * mib
    assert result["seen"][-1]["device"] == 512 * mib == result["seen"][-1]["live"]
    assert result["stats"]["weight_cache_device_bytes"] == 512 * mib
    assert result["stats"]["weight_cache_device_limit"] == 512 * mib
    assert result["held"] == [False] * 4 + [True] * 8
    assert result["errors"] == ["RangeError"] * 4
