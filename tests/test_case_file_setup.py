"""test.json is written at set-up (app/host/case_file_setup.py): generated where missing or not the committed file,
then held to test.json.sha256. Generators here are stand-ins, so the checks take no 10 s of generation."""
import hashlib
import subprocess
from pathlib import Path

import pytest

from app.host.case_file_setup import CaseFileSetupError, committed_digest, digest, ensure_test_json

ROOT = Path(__file__).resolve().parent.parent


def _checkout(tmp_path, generator: str, digest_of: bytes = b"cases\n") -> Path:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "gen_test_cases.py").write_text(generator)
    (tmp_path / "test.json.sha256").write_text(f"{hashlib.sha256(digest_of).hexdigest()}  test.json\n")
    return tmp_path


WRITES = """import sys
out = sys.argv[sys.argv.index("--out") + 1]
open(out, "w").write({text!r})
"""


def test_the_set_up_file_is_the_committed_one_and_untracked():
    assert digest(ROOT / "test.json") == committed_digest(ROOT), "run: python -m app setup"
    tracked = subprocess.run(["git", "ls-files", "test.json"], cwd=ROOT, capture_output=True, text=True).stdout
    assert tracked == ""
    assert subprocess.run(["git", "check-ignore", "-q", "test.json"], cwd=ROOT).returncode == 0


def test_a_missing_file_is_generated_and_checked(tmp_path):
    root = _checkout(tmp_path, WRITES.format(text="cases\n"))
    assert ensure_test_json(root) == root / "test.json"
    assert (root / "test.json").read_text() == "cases\n"


def test_a_file_with_the_committed_digest_is_kept(tmp_path):
    root = _checkout(tmp_path, "raise SystemExit('must not run')")
    (root / "test.json").write_text("cases\n")
    assert ensure_test_json(root) == root / "test.json"


def test_a_stale_file_is_rewritten(tmp_path):
    root = _checkout(tmp_path, WRITES.format(text="cases\n"))
    (root / "test.json").write_text("old cases\n")
    ensure_test_json(root)
    assert (root / "test.json").read_text() == "cases\n"


def test_another_file_than_the_committed_one_is_an_error(tmp_path):
    root = _checkout(tmp_path, WRITES.format(text="other cases\n"))
    other = hashlib.sha256(b"other cases\n").hexdigest()
    with pytest.raises(CaseFileSetupError, match=f"sha256 {other}, not the committed"):
        ensure_test_json(root)


def test_a_missing_oracle_is_named(tmp_path):
    root = _checkout(tmp_path, "raise ModuleNotFoundError(\"No module named 'onnx'\")\n")
    with pytest.raises(CaseFileSetupError, match=r"onnx missing \(pip install -r requirements-test.txt\)"):
        ensure_test_json(root)


def test_outside_a_checkout_there_is_none():
    assert ensure_test_json(None) is None
