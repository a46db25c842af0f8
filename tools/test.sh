#!/usr/bin/env bash
# Sets up everything the test suite needs on a fresh Debian machine, then runs it: `bash tools/test.sh`.
# Extra arguments go to pytest (for example `bash tools/test.sh -k shapes`).
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian: chromium (headless WebGPU on SwiftShader) and the Vulkan loader that Dawn for Node needs.
if ! command -v chromium >/dev/null 2>&1 || ! ldconfig -p | grep -q libvulkan.so.1; then
  echo "[setup] installing Debian's chromium and libvulkan1"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium libvulkan1 >/dev/null
fi
python3 -m pip install -q --disable-pip-version-check -r requirements-test.txt
# npm: Dawn for Node (`webgpu`) and the benchmark peer `onnxruntime-web`, pinned with integrity hashes in
# package-lock.json.
{ [ -d node_modules/webgpu ] && [ -d node_modules/onnxruntime-web ]; } || npm ci --silent --no-audit --no-fund
python3 -m app setup >/dev/null
python3 -m pytest -q "$@"
