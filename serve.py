"""Serves the app locally: `python3 serve.py [--bind 127.0.0.1] [--port 8000] [--verbose] [--allow-host NAME]...`,
the same as `python -m app serve` (which also works from an installed wheel).

The first run assembles the offline Pyodide runtime under build/ (every file checked against a pinned
sha256) and installs the npm packages of package-lock.json into node_modules/ (`npm ci`, as tools/test.sh does: the
page loads protobufjs and the Benchmarks view onnxruntime-web from there); later runs reuse both, and run `npm ci`
again only when node_modules/ is not the lock's. The server answers only requests addressed to an IP literal, `localhost` or the
name it binds (DNS rebinding); `--allow-host NAME` (repeatable) adds a name, as $CONVTRANSPOSE_ALLOWED_HOSTS
(comma-separated) does.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from app.__main__ import main
from app.host.server import ALLOWED_HOSTS_ENV

ROOT = Path(__file__).resolve().parent


def allow_hosts(argv: list[str]) -> list[str]:
    """argv without its --allow-host options, whose names go to $CONVTRANSPOSE_ALLOWED_HOSTS."""
    rest, names = [], [n for n in os.environ.get(ALLOWED_HOSTS_ENV, "").split(",") if n]
    args = iter(argv)
    for arg in args:
        if arg == "--allow-host":
            names.append(next(args, ""))
        elif arg.startswith("--allow-host="):
            names.append(arg.split("=", 1)[1])
        else:
            rest.append(arg)
    if names:
        os.environ[ALLOWED_HOSTS_ENV] = ",".join(names)
    return rest


def node_modules_current(root: Path = ROOT) -> bool:
    """Every package the lock installs on every platform (optional ones are per platform) is in node_modules at the
    lock's version: tools/test.sh's check, so that the two agree on when `npm ci` is due."""
    lock = json.loads((root / "package-lock.json").read_text())
    for path, entry in lock.get("packages", {}).items():
        if not path or entry.get("optional"):
            continue
        try:
            installed = json.loads((root / path / "package.json").read_text()).get("version")
        except (OSError, ValueError):
            return False
        if installed != entry.get("version"):
            return False
    return True


def ensure_node_modules(root: Path = ROOT) -> str | None:
    """`npm ci` unless node_modules is the lock's already. None when it is, else the one line that says what the
    page lacks and the command that adds it (the app serves without them: only the ONNX files and the Benchmarks
    view's peer come from node_modules)."""
    if not (root / "package-lock.json").is_file() or node_modules_current(root):
        return None
    lacking = "until it succeeds the page has no protobufjs (ONNX files) and the Benchmarks view no onnxruntime-web"
    npm = shutil.which("npm")
    if npm is None:
        return f"[setup] npm not found: install Node.js and npm, then run `npm ci` here; {lacking}"
    print("[setup] npm ci: installing the npm packages of package-lock.json (once)", file=sys.stderr, flush=True)
    done = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        return f"[setup] `npm ci` failed ({last}); {lacking}"
    return None


if __name__ == "__main__":
    problem = ensure_node_modules()
    if problem:
        print(problem, file=sys.stderr, flush=True)
    sys.exit(main(["serve", *allow_hosts(sys.argv[1:])]))
