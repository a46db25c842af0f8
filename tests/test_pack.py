"""tools/gpu/pack.sh in a scratch copy of the repository: it packs, prints its size line and exits 0 when
everything fits, 1 when it does not. Only what would be downloaded is stubbed: the npm packages `webgpu`
(fake Dawn), `onnxruntime-web` and `protobufjs`, the Pyodide runtime (fake files with a matching stamp, which is all
`python -m app setup` checks before reusing them), the Debian .debs, and node itself (a fake binary first
on PATH)."""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from app.host.assets import sha256

ROOT = Path(__file__).resolve().parent.parent
SIZE_LINE = re.compile(r"^working tree (\d+) MiB \+ carried (\d+) MiB = (\d+) MiB of 64 MiB$", re.M)


@pytest.fixture
def scratch(tmp_path):
    repo = tmp_path / "repo"
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    shutil.copy2(ROOT / "test.json", repo / "test.json")  # as set-up wrote it (ignored, so not listed above)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    webgpu = repo / "node_modules" / "webgpu"
    (webgpu / "dist" / "linux-x64").mkdir(parents=True)
    (webgpu / "package.json").write_text('{"name": "webgpu", "version": "0.6.2"}')
    (webgpu / "index.js").write_text("export {};\n")
    (webgpu / "dist" / "linux-x64" / "dawn.node").write_bytes(b"fake dawn" * 1000)
    ort = repo / "node_modules" / "onnxruntime-web"
    (ort / "dist").mkdir(parents=True)
    (ort / "package.json").write_text('{"name": "onnxruntime-web"}')
    for name in ("ort.min.mjs", "ort.webgpu.min.mjs", "ort-wasm-simd-threaded.jsep.mjs", "ort-wasm-simd-threaded.jsep.wasm",
                 "ort-wasm-simd-threaded.asyncify.mjs", "ort-wasm-simd-threaded.asyncify.wasm"):
        (ort / "dist" / name).write_bytes(b"fake ort" * 100)
    protobuf = repo / "node_modules" / "protobufjs"
    (protobuf / "dist").mkdir(parents=True)
    (protobuf / "package.json").write_text('{"name": "protobufjs"}')
    (protobuf / "dist" / "protobuf.min.js").write_text("// fake protobufjs\n")
    pyodide = repo / "build" / "pyodide"
    pyodide.mkdir(parents=True)
    (pyodide / "pyodide.mjs").write_text("// fake runtime\n")
    (pyodide / "assets-complete.json").write_text(json.dumps({"pyodide.mjs": sha256(b"// fake runtime\n")}))
    (repo / ".gl").mkdir()
    for name in ("libvulkan1", "libegl1", "libglvnd0"):
        (repo / ".gl" / f"{name}_1.0_amd64.deb").write_bytes(b"fake deb")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "node").write_text("#!/bin/sh\necho fake node\n")
    (bin_dir / "node").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "CONVTRANSPOSE_BUILD"}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return repo, env


def _pack(repo, env):
    return subprocess.run(["bash", "tools/gpu/pack.sh"], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=300)


def test_pack_prints_the_size_line_and_exits_0(scratch):
    repo, env = scratch
    for _ in range(2):  # the second run reuses what the first packed
        done = _pack(repo, env)
        assert done.returncode == 0, done.stdout + done.stderr
        tree, carried, total = map(int, SIZE_LINE.search(done.stdout).groups())
        assert total < 64 and tree >= 1
    assert {p.name for p in (repo / ".gpu").iterdir()} == {"node.xz", "dawn.node.xz", "webgpu", "pyodide.tar.xz", "ort.tar.xz",
                                                           "protobufjs", "test.json.gz"}
    assert {p.name for p in (repo / ".gpu" / "webgpu").iterdir()} == {"package.json", "index.js"}


def test_pack_exits_1_when_the_run_would_not_fit(scratch):
    repo, env = scratch
    with open(repo / "huge.bin", "wb") as f:  # an untracked, unignored file travels too
        f.truncate(70 * 2**20)
    done = _pack(repo, env)
    assert done.returncode == 1
    assert SIZE_LINE.search(done.stdout) and "too large for one device run" in done.stderr
