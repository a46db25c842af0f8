"""The one store (web/runtime/store.mjs), whose rules every record the package keeps follows. Node's JSON file: a
file that is not the store's shape is set aside with a warning (never overwritten), writes are atomic and merge
with what other writers stored since, so two writers on one file (two stores in one process, or two processes)
keep every entry, and the least recently written keys go first past the bound. A caller's store answers in time or
is a warning. IndexedDB, in Chromium: the same merge and bound."""
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STORE = (ROOT / "web/runtime/store.mjs").as_uri()


def node(script: str, *args, timeout=60) -> subprocess.CompletedProcess:
    code = f'import {{ fileStore, guardedStore, KINDS }} from "{STORE}";\nconst args = process.argv.slice(1);\n{script}'
    return subprocess.run(["node", "--input-type=module", "-e", code, *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)


SET_ONE = """const store = await fileStore(args[0]);
await store.set(args[1], args[2]);
console.log(JSON.stringify(await store.get(args[1])));"""


@pytest.mark.parametrize("content, why", [
    ('{"a": "1", "b": ', "not JSON"),
    ("null", "a JSON null, not an object"),
    ("5", "a JSON number, not an object"),
    ("[]", "a JSON array, not an object"),
    ('{"a": {"nested": 1}}', 'entry "a" is not a string'),
])
def test_a_foreign_file_is_set_aside_with_a_warning_and_a_new_store_persists(tmp_path, content, why):
    path = tmp_path / "autotune.json"
    path.write_text(content)
    out = node(SET_ONE, path, "k", "v")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == "v"
    assert why in out.stderr and "set aside as" in out.stderr, out.stderr
    assert json.loads(path.read_text()) == {"k": "v"}
    aside = [p for p in tmp_path.iterdir() if ".foreign-" in p.name]
    assert len(aside) == 1 and aside[0].read_text() == content  # the old bytes kept, untouched
    assert not [p for p in tmp_path.iterdir() if p.suffix in (".tmp", ".lock")]


def test_reading_a_foreign_file_warns_and_leaves_it_until_a_write(tmp_path):
    path = tmp_path / "autotune.json"
    path.write_text("[1, 2")
    out = node("const s = await fileStore(args[0]); console.log(JSON.stringify(await s.get('k')));", path)
    assert out.returncode == 0 and json.loads(out.stdout) is None
    assert "ignored (set aside on the next write)" in out.stderr
    assert path.read_text() == "[1, 2"


def test_two_stores_on_one_file_keep_both_entries(tmp_path):
    path = tmp_path / "sub" / "autotune.json"
    out = node("""const a = await fileStore(args[0]), b = await fileStore(args[0]);
await a.set("from-a", "1");
await b.set("from-b", "2");
await Promise.all([a.set("a2", "3"), b.set("b2", "4")]);
console.log(JSON.stringify([await a.get("from-b"), await b.get("a2")]));""", path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["2", "3"]
    assert json.loads(path.read_text()) == {"from-a": "1", "from-b": "2", "a2": "3", "b2": "4"}


def test_two_processes_writing_at_once_keep_every_entry(tmp_path):
    path = tmp_path / "autotune.json"
    writer = """const store = await fileStore(args[0]);
for (let i = 0; i < 40; i++) await store.set(`${args[1]}-${i}`, String(i));"""
    code = f'import {{ fileStore, guardedStore, KINDS }} from "{STORE}";\nconst args = process.argv.slice(1);\n{writer}'
    procs = [subprocess.Popen(["node", "--input-type=module", "-e", code, str(path), name],
                              stderr=subprocess.PIPE, text=True) for name in ("p", "q")]
    for p in procs:
        assert p.wait(timeout=120) == 0, p.stderr.read()
    items = json.loads(path.read_text())
    assert sorted(items) == sorted(f"{n}-{i}" for n in "pq" for i in range(40))
    assert not [p for p in tmp_path.iterdir() if p.name != "autotune.json"]


def test_a_stale_lock_is_taken_over_and_a_non_string_entry_refused(tmp_path):
    path = tmp_path / "autotune.json"
    lock = tmp_path / "autotune.json.lock"
    lock.write_text("")
    os.utime(lock, (0, 0))  # left by a writer that died in 1970
    out = node(SET_ONE, path, "k", "v")
    assert out.returncode == 0 and json.loads(path.read_text()) == {"k": "v"}, out.stderr
    out = node("const s = await fileStore(args[0]); await s.set('k', {});", path)
    assert out.returncode != 0 and "an entry is a string" in out.stderr
    assert json.loads(path.read_text()) == {"k": "v"}


def test_past_the_key_bound_the_least_recently_written_keys_go_first(tmp_path):
    """Plans keep KINDS.plans.maxKeys package revisions: an old revision's record goes, the one rewritten stays."""
    path = tmp_path / "plans.json"
    out = node("""const s = await fileStore(args[0], { kind: "plans" });
const n = KINDS.plans.maxKeys;
for (let i = 0; i < n; i++) await s.set(`plans|r${i}`, "x");
await s.set("plans|r0", "again");  // r0 is now the most recently written
await s.set("plans|new", "y");
console.log(JSON.stringify({ n, keys: Object.keys(JSON.parse((await import("node:fs")).readFileSync(args[0], "utf8"))) }));""", path)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert len(got["keys"]) == got["n"] and got["keys"][-2:] == ["plans|r0", "plans|new"] and "plans|r1" not in got["keys"]


def test_past_the_byte_bound_old_keys_are_pruned_and_the_new_one_kept(tmp_path):
    path = tmp_path / "autotune.json"
    out = node("""const s = await fileStore(args[0], { kind: "autotune" });
const big = "z".repeat(KINDS.autotune.maxBytes / 4);
for (let i = 0; i < 4; i++) await s.set(`a${i}`, big);
console.log(JSON.stringify(Object.keys(JSON.parse((await import("node:fs")).readFileSync(args[0], "utf8")))));""", path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["a1", "a2", "a3"]


def test_update_reads_changes_and_writes_under_the_lock(tmp_path):
    """Two writers each adding to one key's record keep both additions (plan records merge this way)."""
    path = tmp_path / "plans.json"
    out = node("""const a = await fileStore(args[0], { kind: "plans" }), b = await fileStore(args[0], { kind: "plans" });
const add = (who) => (text) => JSON.stringify([...(text ? JSON.parse(text) : []), who]);
await Promise.all([...Array(10)].map((_, i) => (i % 2 ? a : b).update("plans|r", add(i))));
console.log(await a.get("plans|r"));""", path)
    assert out.returncode == 0, out.stderr
    assert sorted(json.loads(out.stdout)) == list(range(10))


def test_a_file_that_is_not_a_regular_file_is_an_error_naming_the_store(tmp_path):
    path = tmp_path / "fifo.json"
    os.mkfifo(path)
    out = node("const s = await fileStore(args[0]); try { await s.get('k'); } catch (e) { console.log(e.message); }", path,
               timeout=20)
    assert out.returncode == 0 and "is not a regular file" in out.stdout and str(path) in out.stdout, out.stdout + out.stderr


def test_a_callers_store_that_never_answers_or_throws_is_an_error_naming_it_in_time():
    out = node("""class Hangs { get() { return new Promise(() => {}); } set() { return new Promise(() => {}); } }
class Throws { get() { throw new Error("disk on fire"); } set() { return Promise.reject(new Error("no")); } }
const rows = [];
for (const store of [new Hangs(), new Throws(), { get: () => 5 }, {}]) {
  const g = guardedStore(store, "planStore");
  for (const call of [() => g.get("k"), () => g.set("k", "v")]) {
    const t0 = performance.now();
    try { await call(); rows.push(["ok"]); } catch (e) { rows.push([e.message, Math.round(performance.now() - t0)]); }
  }
}
console.log(JSON.stringify(rows));""", timeout=60)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert "planStore (Hangs): its get gave no answer in 5000 ms" in rows[0][0] and rows[0][1] < 6000
    assert "planStore (Hangs): its get gave no answer" in rows[1][0] and "not asked again" in rows[1][0] and rows[1][1] < 100
    assert "planStore (Throws): its get failed (disk on fire)" in rows[2][0]
    assert "its set failed (no)" in rows[3][0]
    assert "gave a number, not a string or null" in rows[4][0] and "planStore (Object) has no set()" in rows[5][0]
    assert "has no get()" in rows[6][0]
