"""The weight cache's byte bound holds per device (web/runtime/weight-cache.mjs), across every kernel's cache on
one executor: a new entry pushes out the device's least recently used entries, another kernel's or its own (never
one its call binds), memory() shows the device's total. In Node, on a stand-in executor that counts buffers (the
bound is arithmetic, no GPU needed)."""
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


LRU_SCRIPT = """
import { WeightCache } from "%s/web/runtime/weight-cache.mjs";
const executor = { caches: new Map(), live: 0, allocate(size) { this.live += size; return { size }; },
                   release(buf) { this.live -= buf.size; }, write() {} };
const S = 4096, B = 32;  // a layer: w's prepared layout and b's copy
const layers = [1, 2, 3].map(() => ({ w: new Float32Array(4), b: new Float32Array(4) }));
// one call as the executor makes it: lookups in one synchronous run, then trimmed with the keys it binds
const call = async (cache, i) => {
  const before = { h: cache.hits, m: cache.misses, e: cache.evictions };
  const { w, b } = layers[i - 1];
  const layout = cache.layout(w, "packed", { w: S });
  const copy = cache.upload(b, B, "b");
  if (layout) layout.ready = true;  // the weight passes filled it
  if (cache.bytes > cache.limit) cache.trim([w, b]);
  await null;  // the call awaits its readback: the next one is another run
  return [cache.hits - before.h, cache.misses - before.m, cache.evictions - before.e,
          layout !== null && copy !== null, cache.bytes <= cache.limit];
};
const run = async (order, limit) => {
  executor.caches.clear();
  executor.live = 0;
  const cache = new WeightCache(executor, limit);
  executor.caches.set(1, cache);
  const calls = [];
  for (const i of order) calls.push(await call(cache, i));
  const held = layers.map(({ w, b }) => cache.entries.has(w) && cache.entries.has(b));
  return { calls, held, live: executor.live, bytes: cache.bytes };
};
const two = 2 * (S + B);
const turns = await run([1, 2, 3, 1, 2, 3], two);
const recent = await run([1, 2, 1, 3, 1, 2, 3], two);
// a bound under one layer: b does not fit beside w, and w, which this call binds, is not pushed out for it
executor.caches.clear();
const small = new WeightCache(executor, S + B / 2);
executor.caches.set(1, small);
const pinned = { layout: small.layout(layers[0].w, "packed", { w: S }) !== null,
                 copy: small.upload(layers[0].b, B, "b") !== null, held: small.entries.has(layers[0].w) };
console.log(JSON.stringify({ turns, recent, pinned }));
"""


def test_one_kernel_alone_on_its_device_evicts_its_own_least_recently_used():
    # Before: the bound was kept by pushing out other kernels' entries only, so a kernel alone on its device
    # kept its first layers, wrote the later ones on every call, and counted no eviction.
    out = subprocess.run(["node", "--input-type=module", "-e", LRU_SCRIPT % ROOT], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    turns, recent = result["turns"], result["recent"]
    # (hits, misses, evictions, kept, within the bound) per call; room for two of three layers
    assert turns["calls"] == [[0, 2, 0, True, True]] * 2 + [[0, 2, 2, True, True]] * 4
    assert turns["held"] == [False, True, True] and turns["live"] == turns["bytes"] == 2 * (4096 + 32)
    # L1 L2 L1 L3 L1 L2 L3: L3 pushes out L2 (L1 was used since), so L1 hits; L2 pushes out L3, L3 pushes out L1
    assert recent["calls"] == [[0, 2, 0, True, True], [0, 2, 0, True, True], [2, 0, 0, True, True],
                               [0, 2, 2, True, True], [2, 0, 0, True, True], [0, 2, 2, True, True],
                               [0, 2, 2, True, True]]
    assert recent["held"] == [False, True, True]
    assert result["pinned"] == {"layout": True, "copy": False, "held": True}
