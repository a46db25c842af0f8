#!/usr/bin/env bash
# Sets up everything the test suite needs on a fresh Debian machine, then runs it: `bash tools/test.sh`.
# Extra arguments go to pytest (for example `bash tools/test.sh -k shapes`).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian: chromium (headless WebGPU on SwiftShader), the Vulkan loader that Dawn for Node needs, xz
# (tools/gpu/pack.sh's test), venv with ensurepip (the wheel test's fresh virtual environment), firefox-esr
# (153+: WebGPU; 140 refuses it) and mesa-vulkan-drivers (lavapipe: Firefox's adapter here, and wgpu-py's for
# the naga shader check).
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
ldconfig -p | grep -q libvulkan.so.1 || missing+=(libvulkan1)
command -v xz >/dev/null 2>&1 || missing+=(xz-utils)
python3 -c "import ensurepip, venv" 2>/dev/null || missing+=(python3-venv)
command -v firefox-esr >/dev/null 2>&1 || missing+=(firefox-esr)
ls /usr/share/vulkan/icd.d/lvp_icd.*.json >/dev/null 2>&1 || missing+=(mesa-vulkan-drivers)
if [ ${#missing[@]} -gt 0 ]; then
  echo "[setup] installing Debian's ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
firefox_major=$(firefox-esr --version | sed -E 's/[^0-9]*([0-9]+).*/\1/')
if [ "$firefox_major" -lt 153 ]; then
  echo "firefox-esr $firefox_major has no WebGPU; 153+ comes from bookworm-security (apt-cache policy firefox-esr)" >&2
  exit 1
fi
# Each install below runs only when what it installs is missing or not at its pin (pip's own check of
# satisfied pins took 6 s here).
# pip: every pin of requirements-test.txt, installed at that version.
python3 - requirements-test.txt <<'PY' || python3 -m pip install -q --disable-pip-version-check -r requirements-test.txt
import sys
from importlib.metadata import PackageNotFoundError, version
for line in open(sys.argv[1]):
    name, _, pin = line.split("#")[0].strip().partition("==")
    try:
        if name and version(name) != pin:
            sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PY
# npm: Dawn for Node (`webgpu`), the benchmark peer `onnxruntime-web`, Firefox's driver `puppeteer-core` and
# the rest of package.json, pinned with integrity hashes in package-lock.json: npm ci runs unless every
# package the lock installs on every platform (optional ones are per platform) is there at the lock's version.
node - <<'JS' || npm ci --silent --no-audit --no-fund
const fs = require("fs");
const lock = JSON.parse(fs.readFileSync("package-lock.json", "utf8"));
for (const [path, entry] of Object.entries(lock.packages)) {
  if (!path || entry.optional) continue;
  let installed = null;
  try { installed = JSON.parse(fs.readFileSync(`${path}/package.json`, "utf8")).version; } catch {}
  if (installed !== entry.version) process.exit(1);
}
JS
# Pyodide and its wheels under build/: nothing is fetched when the stamp of their digests matches.
python3 -m app setup >/dev/null
# Two workers, a file in one worker whole (tests/conftest.py groups and orders them); --durations: where the
# suite's time goes (docs/testing.md).
python3 -m pytest -q -n 2 --dist loadfile --durations=25 "$@"
