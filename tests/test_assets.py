"""The offline Pyodide runtime: pinned, verified, pruned to what is shipped."""
import hashlib
import json

from app.host import assets


def test_lock_is_pruned_to_shipped_files_with_matching_hashes():
    folder = assets.ensure_pyodide_assets()
    lock = json.loads((folder / "pyodide-lock.json").read_text())
    assert set(lock["packages"]) == {"numpy", "jinja2", "markupsafe"}
    assert lock["info"]["version"] == assets.PYODIDE_VERSION
    for entry in lock["packages"].values():
        data = (folder / entry["file_name"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]


def test_markupsafe_wheel_is_reproducible():
    sdist = (assets.DOWNLOADS / "markupsafe-3.0.3.tar.gz").read_bytes()
    one, two = assets._pack_markupsafe(sdist), assets._pack_markupsafe(sdist)
    assert one == two
    assert (assets.PYODIDE_DIR / assets.MARKUPSAFE_WHEEL).read_bytes() == one


def test_tampered_file_is_detected(tmp_path, monkeypatch):
    fake = tmp_path / "pyodide-0.27.7.tgz"
    fake.write_bytes(b"not the real tarball")
    try:
        assets._verified(fake, assets.PINNED["pyodide-0.27.7.tgz"])
    except RuntimeError as exc:
        assert "does not match the pinned" in str(exc)
    else:
        raise AssertionError("a tampered download was accepted")
