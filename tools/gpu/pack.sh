#!/usr/bin/env bash
# Packs what the GPU machine needs and cannot fetch, under .gpu/ and .gl/ (both git-ignored; the device
# call carries them next to the working tree, which travels anyway): Node.js itself, Dawn's linux-x64
# build from npm `webgpu`, the verified Pyodide assets, onnxruntime-web's two WebGPU builds (the peer that
# `bench --against ort` times), test.json, and Debian's Vulkan loader .debs.
# Usage (repo root, this machine): bash tools/gpu/pack.sh   -> prints what one run will carry.
set -euo pipefail
cd "$(dirname "$0")/../.."
LIMIT=$((64 * 1024 * 1024))

{ [ -d node_modules/webgpu ] && [ -d node_modules/onnxruntime-web ] && [ -d node_modules/protobufjs ]; } || npm ci --silent --no-audit --no-fund
python3 -m app setup >/dev/null
mkdir -p .gpu/webgpu .gl

pack() {  # pack SRC DEST: xz, redone only when SRC changed
  if [ ! -f "$2" ] || [ "$1" -nt "$2" ]; then xz -T0 -6 -c "$1" >"$2.tmp" && mv "$2.tmp" "$2"; fi
}
pack "$(readlink -f "$(command -v node)")" .gpu/node.xz
pack node_modules/webgpu/dist/linux-x64/dawn.node .gpu/dawn.node.xz
cp node_modules/webgpu/package.json node_modules/webgpu/index.js .gpu/webgpu/
# protobufjs's standalone build: ONNX models read and written in JS (web/views/onnx-convtranspose.mjs).
mkdir -p .gpu/protobufjs && cp node_modules/protobufjs/package.json node_modules/protobufjs/dist/protobuf.min.js .gpu/protobufjs/
tar -C build -cJf .gpu/pyodide.tar.xz pyodide
# test.json is written at set-up (above), not tracked: the case and variant stages there read it. gzip: xz -6 saves
# 1 MB of its 7 and takes 70 s here.
if [ ! -f .gpu/test.json.gz ] || [ test.json -nt .gpu/test.json.gz ]; then gzip -6 -c test.json >.gpu/test.json.gz; fi
# Both ORT builds: the JSEP one (ort.min.mjs) and the native WebGPU EP (ort.webgpu.min.mjs), with their wasm.
ort=node_modules/onnxruntime-web
tar -C "$ort" -cf - package.json dist/ort.min.mjs dist/ort.webgpu.min.mjs dist/ort-wasm-simd-threaded.jsep.mjs \
  dist/ort-wasm-simd-threaded.jsep.wasm dist/ort-wasm-simd-threaded.asyncify.mjs dist/ort-wasm-simd-threaded.asyncify.wasm \
  | xz -T0 -9 >.gpu/ort.tar.xz

# Vulkan loader and GL dispatch libraries: the GPU machine's image has the NVIDIA driver but not these.
if ! ls .gl/libvulkan1_*.deb >/dev/null 2>&1; then
  lists=$(mktemp -d); mkdir -p "$lists/partial"
  o="-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=$lists"
  apt-get $o update -qq
  (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
fi

# Bytes of the files NUL-separated on stdin (files that no longer exist count 0).
sum_bytes() { { xargs -0 -r stat -L -c %s -- 2>/dev/null || true; } | awk '{ s += $1 } END { print s + 0 }'; }
# What the device call copies: the working tree (tracked and untracked files git does not ignore) + .gpu, .gl.
tracked=$(git ls-files -z --cached --others --exclude-standard | sum_bytes)
carried=$(find .gpu .gl -type f -print0 | sum_bytes)
total=$((tracked + carried))
printf 'working tree %d MiB + carried %d MiB = %d MiB of %d MiB\n' $((tracked >> 20)) $((carried >> 20)) \
  $((total >> 20)) $((LIMIT >> 20))
[ "$total" -lt "$LIMIT" ] || { echo "too large for one device run" >&2; exit 1; }
