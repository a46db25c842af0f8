"""Stored plans in headless Chromium: the exported package on a static site keeps its plans in IndexedDB, and a
revisit (a new page of the same browser context) runs them before Python is up. Tampered with in IndexedDB, as a
script of the origin could, a record ends in a correct result with a warning, never a wrong one after Python is up,
and the next visit is correct again. The IndexedDB store itself merges concurrent updates and prunes past its bound
(web/runtime/store.mjs). Node's side of the same probes: tests/test_stored_plans.py."""
import shutil
import subprocess
import sys

import numpy as np
import pytest

from app.host.export import ENTRY, export
from tests.local_http import free_port, wait_until_served

pytestmark = pytest.mark.browser

HOST = """<!doctype html>
<meta charset="utf-8"><title>a revisit</title>
<script type="module">
  const entry = "./kernel/%s";
  const warnings = [];
  const warn = console.warn;
  console.warn = (...args) => { warnings.push(args.join(" ")); warn(...args); };
  const x = Float32Array.from({ length: 2 * 3 * 5 * 4 }, (_, i) => Math.sin(i) * 2);
  const w = Float32Array.from({ length: 3 * 2 * 3 * 3 }, (_, i) => Math.cos(i * 0.7));
  const call = { x: { data: x, shape: [2, 3, 5, 4] }, w: { data: w, shape: [3, 2, 3, 3] }, strides: [2, 2] };
  window.visit = (async () => {
    const m = await import(entry);
    const kernel = await m.getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1 });
    const first = await kernel(call);
    const fromStore = m.bootPhases().some((p) => p.phase === "compile a stored plan");
    await kernel.ready;
    const after = await kernel(call);
    const reference = kernel.reference(call);
    const out = (r) => ({ y: Array.from(r.y.data), shape: r.y.shape });
    return { fromStore, first: out(first), after: out(after), reference: { y: Array.from(reference.data),
             shape: reference.shape }, warnings };
  })();
</script>
""" % ENTRY

# In the page: the plan record in IndexedDB (the default store's database), changed by `change(spec)`, its digest
# and the changed pipelines' keys recomputed when `recompute` (as someone who knows the format would).
TAMPER = """async ([change, recompute]) => {
  const sha = async (text) => Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256",
    new TextEncoder().encode(text))), (b) => b.toString(16).padStart(2, "0")).join("");
  const db = await new Promise((ok, no) => { const r = indexedDB.open("webgpu-convtranspose-plans", 1);
    r.onsuccess = () => ok(r.result); r.onerror = () => no(r.error); });
  const store = () => db.transaction("records", "readwrite").objectStore("records");
  const keys = await new Promise((ok) => { const r = store().getAllKeys(); r.onsuccess = () => ok(r.result); });
  const key = keys.find((k) => k.startsWith("plans|"));
  const value = await new Promise((ok) => { const r = store().get(key); r.onsuccess = () => ok(r.result); });
  const record = JSON.parse(value.text);
  const context = Object.values(record.adapters)[0];
  const entry = Object.values(context.entries)[0];
  (new Function("spec", change))(entry.spec);
  if (recompute) {
    for (const p of entry.spec.passes) p.pipeline.key = `${p.pipeline.key.split("|")[0]}|${await sha(p.pipeline.source)}`;
    entry.digest = await sha(JSON.stringify(entry.spec));
  }
  await new Promise((ok) => { const r = store().put({ text: JSON.stringify(record), at: Date.now() }, key);
    r.onsuccess = ok; });
  db.close();
  return entry.spec.variant;
}"""

DOUBLE_Y = r"""for (const p of spec.passes) p.pipeline.source = p.pipeline.source.replace(/(y\[[^\]]*\] = )T\((\w+)\);/g, "$1T(2.0 * $2);");"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("revisit")
    export(root / "kernel")
    (root / "index.html").write_text(HOST)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory",
                             str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    wait_until_served(url, attempts=100, pause=0.1, timeout=1)
    yield url
    proc.terminate()
    proc.wait(timeout=10)
    shutil.rmtree(root, ignore_errors=True)


def correct(result: dict, reference: dict, scale: float = 1.0) -> bool:
    return result["shape"] == reference["shape"] and np.allclose(np.array(result["y"]) / scale, reference["y"],
                                                                 rtol=1e-4, atol=1e-4)


@pytest.fixture
def context(page):
    from app.host.browser import BOOT_TIMEOUT_MS

    ctx = page.context.browser.new_context()  # its own IndexedDB: a first visit
    ctx.set_default_timeout(BOOT_TIMEOUT_MS)
    with ctx:
        yield ctx


def visit(context, url: str, tamper=None) -> dict:
    page = context.new_page()
    page.goto(url)
    got = page.evaluate("window.visit")
    if tamper is not None:
        page.evaluate(TAMPER, list(tamper))
    page.close()
    return got


def test_a_revisit_runs_from_indexeddb_and_a_plainly_altered_entry_is_dropped(site, context):
    first = visit(context, site, tamper=("spec.passes[0].uniforms[0] += 1", False))
    assert not first["fromStore"] and correct(first["first"], first["reference"])
    got = visit(context, site)
    assert correct(got["first"], got["reference"]) and correct(got["after"], got["reference"])
    assert any("its digest does not match" in w for w in got["warnings"]), got["warnings"]
    again = visit(context, site)
    assert again["fromStore"] and correct(again["first"], again["reference"]) and not again["warnings"]


def test_wgsl_altered_with_digest_and_keys_recomputed_is_replaced_once_python_has_planned_it(site, context):
    visit(context, site, tamper=(DOUBLE_Y, True))
    got = visit(context, site)
    # before Python: the origin's own script chose what ran (docs/reliability.md); after: the package's plan
    assert got["fromStore"] and correct(got["first"], got["reference"], scale=2.0)
    assert correct(got["after"], got["reference"])
    assert any("differs from the package's own plan" in w for w in got["warnings"]), got["warnings"]
    again = visit(context, site)
    assert again["fromStore"] and correct(again["first"], again["reference"]) and not again["warnings"]


def test_the_indexeddb_store_merges_concurrent_updates_and_prunes_the_oldest(site, context):
    page = context.new_page()
    page.goto(site)
    got = page.evaluate("""async () => {
      const { indexedDbStore, KINDS } = await import("./kernel/web/runtime/store.mjs");
      const s = indexedDbStore(indexedDB, "probe-store", "records", { kind: "plans" });
      const add = (who) => (text) => JSON.stringify([...(text ? JSON.parse(text) : []), who]);
      await Promise.all([...Array(10)].map((_, i) => s.update("merged", add(i))));
      const merged = JSON.parse(await s.get("merged"));
      for (let i = 0; i < KINDS.plans.maxKeys + 2; i++) await s.set(`plans|r${i}`, "x");
      const kept = [];
      for (let i = 0; i < KINDS.plans.maxKeys + 2; i++) kept.push(await s.get(`plans|r${i}`));
      return { merged, kept, maxKeys: KINDS.plans.maxKeys, mergedAfter: await s.get("merged") };
    }""")
    page.close()
    assert sorted(got["merged"]) == list(range(10))
    # "merged", r0 and r1 were the least recently written: pruned to the bound of maxKeys
    assert got["kept"] == [None, None] + ["x"] * got["maxKeys"] and got["mergedAfter"] is None
