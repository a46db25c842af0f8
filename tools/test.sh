#!/usr/bin/env bash
# Sets up everything the test suite needs on a fresh Debian machine, then runs it: `bash tools/test.sh`.
# Extra arguments go to pytest (for example `bash tools/test.sh -k shapes`).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
  echo "[setup] installing Debian's chromium (headless WebGPU on SwiftShader)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
python3 -m pip install -q --disable-pip-version-check -r requirements-test.txt
python3 -m app setup >/dev/null
python3 -m pytest -q "$@"
