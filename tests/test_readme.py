"""The README stays short and true: under 200 lines, every command in it run by a test or by CI, every
relative link and image in it and in docs/ pointing at a file that exists. Its first command, `python3 serve.py`,
serves everything the page loads (node_modules/ installed by `npm ci` when it is not the lock's), and set-up without
numpy says so in one line."""
import json
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SHELL_BLOCK = re.compile(r"```sh\n(.*?)```", re.S)
# Inline code that reads as a command line: these must be in a ```sh block (and so covered) or not at all.
INLINE_COMMAND = re.compile(r"`((?:python3?|pip|bash|npm|node)\s[^`\n]*)`")
FENCE = re.compile(r"```.*?```", re.S)

# Every command in the README (```sh blocks and inline code) -> where it runs ("path::function", a test or
# the fixture that runs it, or ".ci/run"). FILE and DIR are placeholders the tests fill with a small case
# file and a scratch folder. An inline mention may also be the start of a listed command.
COVERED = {
    "python3 serve.py": "tests/test_readme.py::test_serve_py_serves_the_app",
    "bash tools/test.sh": ".ci/run",
    "pip install '.[browser]'": "tests/test_wheel.py::test_pip_install_from_a_checkout",
    "python -m webgpu_convtranspose serve": "tests/test_wheel.py::test_installed_package_serves_the_app_and_exports",
    # "Use it in your web app": the block runs whole, as written, in a scratch folder (and its page is checked)
    "python -m app export ../kernel": "tests/test_npm_package.py::readme_app",
    "cd .. && mkdir -p my-app && cd my-app && npm init -y": "tests/test_npm_package.py::readme_app",
    "npm pack ../kernel": "tests/test_npm_package.py::readme_app",
    "npm install ./webgpu-convtranspose-0.1.0.tgz esbuild@0.28": "tests/test_npm_package.py::readme_app",
    "npx esbuild app.js --bundle --format=esm --outdir=dist": "tests/test_npm_package.py::readme_app",
    "cp index.html dist/ && cp -r node_modules/webgpu-convtranspose dist/": "tests/test_npm_package.py::readme_app",
    "python -m app cases FILE": "tests/test_wheel.py::test_installed_package_runs_a_case_file_in_chromium",
    "python -m app cases FILE --variant all": "tests/test_readme.py::test_cases_with_every_variant",
    "python -m app model FILE.onnx": "tests/test_model.py::test_the_decoder_in_chromium_against_ort",
    "python -m app bench --tier full --host node --against ort":
        "tests/test_node_host.py::test_bench_against_ort_and_breakdown_command_lines_on_the_node_host",
}


def readme_commands(text: str) -> list[str]:
    return [line.strip() for block in SHELL_BLOCK.findall(text) for line in block.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def test_readme_is_short():
    assert len(README.read_text().splitlines()) < 200


def test_every_readme_command_is_run_by_a_test_or_ci():
    text = README.read_text()
    commands = readme_commands(text) + INLINE_COMMAND.findall(FENCE.sub("", text))
    uncovered = [c for c in commands if not any(known.startswith(c) for known in COVERED)]
    assert not uncovered, f"add them to COVERED, with the test that runs them: {uncovered}"
    assert not [c for c in COVERED if c not in text], "COVERED names a command the README no longer has"
    for command, where in COVERED.items():
        if where == ".ci/run":
            assert command in (ROOT / ".ci" / "run").read_text()
            continue
        path, test = where.split("::")
        assert re.search(rf"^def {test}\(", (ROOT / path).read_text(), re.M), where


MARKDOWN = [README, *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize("doc", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_images_exist(doc):
    text = FENCE.sub("", doc.read_text())
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    missing = []
    for target in targets:
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (doc.parent / target.split("#")[0]).resolve()
        if not path.exists():
            missing.append(target)
    assert not missing, missing


def test_serve_py_serves_the_app():
    """The page, and what it loads from node_modules/: protobufjs (ONNX files) and onnxruntime-web (Benchmarks)."""
    proc = subprocess.Popen([sys.executable, "serve.py", "--port", "0"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        url = re.search(r"http://\S+/", proc.stdout.readline()).group(0)
        with urllib.request.urlopen(url, timeout=30) as response:
            assert response.status == 200 and b'type="module"' in response.read()
        for path in ("node_modules/protobufjs/dist/protobuf.min.js", "ort/ort.webgpu.min.mjs"):
            with urllib.request.urlopen(url + path, timeout=30) as response:
                assert response.status == 200 and len(response.read()) > 10_000, path
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def tiny_lock(tmp_path) -> Path:
    """A folder like the checkout in what serve.py's set-up reads: package.json and package-lock.json, here of one
    local tarball (npm ci needs no network for it), installed."""
    (tmp_path / "tiny").mkdir()
    (tmp_path / "tiny" / "package.json").write_text(json.dumps({"name": "tiny", "version": "1.0.0"}))
    (tmp_path / "tiny" / "index.js").write_text("module.exports = 1;\n")
    subprocess.run(["npm", "pack", "./tiny"], cwd=tmp_path, check=True, capture_output=True)
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "tiny-1.0.0.tgz").rename(root / "tiny-1.0.0.tgz")
    (root / "package.json").write_text(json.dumps({"private": True, "devDependencies": {"tiny": "file:tiny-1.0.0.tgz"}}))
    subprocess.run(["npm", "install", "--offline", "--no-audit", "--no-fund"], cwd=root, check=True, capture_output=True)
    return root


def test_serve_py_set_up_runs_npm_ci_when_node_modules_is_not_the_lock_s(tiny_lock):
    import serve

    assert serve.node_modules_current(tiny_lock) and serve.ensure_node_modules(tiny_lock) is None
    installed = tiny_lock / "node_modules" / "tiny" / "package.json"
    installed.write_text(json.dumps({"name": "tiny", "version": "0.9.0"}))  # another version than the lock's
    assert not serve.node_modules_current(tiny_lock)
    assert serve.ensure_node_modules(tiny_lock) is None
    assert json.loads(installed.read_text())["version"] == "1.0.0" and serve.node_modules_current(tiny_lock)
    shutil.rmtree(tiny_lock / "node_modules")  # a fresh clone
    assert serve.ensure_node_modules(tiny_lock) is None and serve.node_modules_current(tiny_lock)


def test_serve_py_set_up_says_what_the_page_lacks_when_npm_ci_fails(tiny_lock, monkeypatch):
    import serve

    shutil.rmtree(tiny_lock / "node_modules")
    (tiny_lock / "package.json").write_text(json.dumps({"private": True, "devDependencies": {"tiny": "2.0.0"}}))  # not the lock's
    line = serve.ensure_node_modules(tiny_lock)
    assert line and "\n" not in line and "`npm ci` failed" in line and "onnxruntime-web" in line, line
    monkeypatch.setenv("PATH", "/nonexistent")
    line = serve.ensure_node_modules(tiny_lock)
    assert line.startswith("[setup] npm not found") and "`npm ci`" in line, line


def test_set_up_without_numpy_fails_with_one_line(tmp_path):
    """tools/gen_test_cases.py, which set-up runs for test.json, in a Python without numpy: one line that names
    what is missing and how to add it, no traceback."""
    blocked = ("import runpy, sys; sys.modules['numpy'] = None; "
               f"sys.argv = ['gen_test_cases.py', '--quiet', '--out', {str(tmp_path / 'test.json')!r}]; "
               f"runpy.run_path({str(ROOT / 'tools' / 'gen_test_cases.py')!r}, run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", blocked], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == "", done
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "numpy is missing" in done.stderr and "pip install -r requirements-test.txt" in done.stderr, done.stderr
    assert not (tmp_path / "test.json").exists()


@pytest.mark.browser
def test_cases_with_every_variant(tmp_path):
    doc = json.loads((ROOT / "test.json").read_text())
    picked = [c for c in doc["cases"] if c["name"] in ("r1_basic", "r2_basic")]
    (tmp_path / "few.json").write_text(json.dumps({**doc, "cases": picked}))
    done = subprocess.run([sys.executable, "-m", "app", "cases", str(tmp_path / "few.json"), "--variant", "all"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.count("variant ") >= 3, done.stdout
