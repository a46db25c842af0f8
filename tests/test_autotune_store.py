"""The JSON-file autotune store of Node (web/runtime/autotune-store.mjs): a file that is not the store's shape
is set aside with a warning (never overwritten), writes are atomic and merge with what other writers stored
since, so two writers on one file (two stores in one process, or two processes) keep every entry."""
import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STORE = (ROOT / "web/runtime/autotune-store.mjs").as_uri()


def node(script: str, *args, timeout=60) -> subprocess.CompletedProcess:
    code = f'import {{ jsonFileStore }} from "{STORE}";\nconst args = process.argv.slice(1);\n{script}'
    return subprocess.run(["node", "--input-type=module", "-e", code, *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)


SET_ONE = """const store = await jsonFileStore(args[0]);
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
    out = node("const s = await jsonFileStore(args[0]); console.log(JSON.stringify(await s.get('k')));", path)
    assert out.returncode == 0 and json.loads(out.stdout) is None
    assert "ignored (set aside on the next write)" in out.stderr
    assert path.read_text() == "[1, 2"


def test_two_stores_on_one_file_keep_both_entries(tmp_path):
    path = tmp_path / "sub" / "autotune.json"
    out = node("""const a = await jsonFileStore(args[0]), b = await jsonFileStore(args[0]);
await a.set("from-a", "1");
await b.set("from-b", "2");
await Promise.all([a.set("a2", "3"), b.set("b2", "4")]);
console.log(JSON.stringify([await a.get("from-b"), await b.get("a2")]));""", path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["2", "3"]
    assert json.loads(path.read_text()) == {"from-a": "1", "from-b": "2", "a2": "3", "b2": "4"}


def test_two_processes_writing_at_once_keep_every_entry(tmp_path):
    path = tmp_path / "autotune.json"
    writer = """const store = await jsonFileStore(args[0]);
for (let i = 0; i < 40; i++) await store.set(`${args[1]}-${i}`, String(i));"""
    code = f'import {{ jsonFileStore }} from "{STORE}";\nconst args = process.argv.slice(1);\n{writer}'
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
    import os
    os.utime(lock, (0, 0))  # left by a writer that died in 1970
    out = node(SET_ONE, path, "k", "v")
    assert out.returncode == 0 and json.loads(path.read_text()) == {"k": "v"}, out.stderr
    out = node("const s = await jsonFileStore(args[0]); await s.set('k', {});", path)
    assert out.returncode != 0 and "an entry is a string" in out.stderr
    assert json.loads(path.read_text()) == {"k": "v"}
