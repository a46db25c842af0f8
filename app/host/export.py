"""`python -m app export DIR`: the kernel as a static folder any web app can host and import, which is also
an npm package (`npm pack ./DIR`, then `npm install` the tarball and `import { getKernel } from "webgpu-convtranspose"`).

    DIR/convtranspose.mjs   the browser entry: `import { getKernel } from "<where DIR is served>/convtranspose.mjs"`
    DIR/web/runtime/        the JS runtime: index.mjs (getKernel, callPython) and the modules it imports;
                            node.mjs (the Node entry: assets read from this folder) and index.d.ts (the types)
    DIR/bundle.zip          the Python package, WGSL templates, contract and tuning tables (what Pyodide unpacks)
    DIR/snapshot.bin        Python's memory once started with the package imported (app/host/snapshot.py): a first
                            visit starts from it (made with Node; without Node, not written and not needed)
    DIR/pyodide/            the verified Pyodide runtime, numpy, jinja2, markupsafe and the pruned lock
    DIR/package.json        the npm package: name, version (pyproject.toml's), exports for browser and node
    DIR/README.txt          how to host it

Every URL is relative to the browser entry's own (import.meta.url): the folder works under any path, and a
bundle made from it looks for bundle.zip and pyodide/ beside itself.
"""
from __future__ import annotations

import json
import re
import shutil
import tomllib
from importlib import metadata
from pathlib import Path

from ..contract import CHECKOUT, ROOT, kernel_id
from .assets import PYODIDE_DIR, RUNTIME_FILES, ensure_pyodide_assets
from .server import bundle_bytes
from .snapshot import snapshot_file

ENTRY = "convtranspose.mjs"
RUNTIME_ENTRY = "runtime/index.mjs"  # under web/: the runtime's public module, which the entry re-exports
NODE_ENTRY = "runtime/node.mjs"  # under web/: the same exports, assets read by the file system
TYPES = "runtime/index.d.ts"  # under web/: the declarations of both entries
PACKAGE_NAME = "webgpu-convtranspose"
MARK = "webgpu-convtranspose export"  # README.txt's first line: how a later export knows DIR is one of ours
# pyodide.js is the classic-script loader; the ES module entry only needs pyodide.mjs.
PYODIDE_FILES = [name for name in RUNTIME_FILES if name != "pyodide.js"] + ["pyodide-lock.json"]
RELATIVE_IMPORT = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.\.?/[^"']+\.m?js)["']""")
COMMENT = re.compile(r"/\*.*?\*/|^\s*//.*?$", re.S | re.M)

ENTRY_MODULE = """\
// The ConvTranspose kernel on WebGPU: getKernel(id, {{version, device?, limits?, assets?, ...}}). See README.txt.
// bundle.zip and pyodide/ are found beside this module when it is loaded as itself, or in webgpu-convtranspose/
// beside the page once a bundler moved it into a bundle (docs/npm.md); getKernel's `assets` option names
// another folder. Python starts loading as this module loads; plans persist between visits (docs/npm.md).
import {{ bootDefaults, packageAssets }} from "./web/runtime/boot.mjs";
// the runtime's every module, named here so that a browser fetches them at once rather than one import level after
// another (docs/decisions.md `flat-entry`)
{preload}

// through a variable: bundlers rewrite `new URL("...", import.meta.url)` as an asset of their own
const here = import.meta.url;
bootDefaults({{ ...packageAssets(here, "{entry}"), early: true, plans: true }});
export * from "./web/{runtime}";
"""
README = """{mark}

The ONNX ConvTranspose kernel ({kernel}, contract version 1) on WebGPU, computed by Python
(Pyodide) in the page. Static files only: copy this folder anywhere under your site and import the entry.

    import {{ getKernel }} from "./kernels/convtranspose/{entry}";   // wherever this folder is served
    const device = await (await navigator.gpu.requestAdapter()).requestDevice();   // optional: your device
    const kernel = await getKernel("{kernel}", {{ version: 1, device }});
    const {{ y, meta }} = await kernel({{ x: {{ data: x, shape: [1, 2, 3, 3] }},
                                     w: {{ data: w, shape: [2, 3, 3, 3] }}, strides: [2, 2] }});
    // y = {{ data: Float32Array, shape: [1, 3, 7, 7], dtype: "float32" }}

Every URL the module fetches is relative to the entry, so the folder works under any path.
It is also an npm package ({package}): `npm pack` here makes the tarball to `npm install`.
The first getKernel call downloads every file below (about {mib:.0f} MiB) and boots Pyodide; later calls
reuse it (and the browser's HTTP cache keeps the files).

Hosting
- Any static file server works; no special headers are required (no COOP/COEP: nothing needs
  SharedArrayBuffer). Tested with `python3 -m http.server` under a sub-path.
- Serve .mjs and .js as text/javascript (browsers refuse modules of other types) and .wasm as
  application/wasm (streaming compilation); .zip, .whl and .json as anything.
- The page must be a secure context (https:// or http://localhost) to have navigator.gpu.
- If your page sends a Content-Security-Policy, it needs: script-src 'wasm-unsafe-eval' 'unsafe-eval'
  and this folder's origin; connect-src this folder's origin.
- Served from another origin than the page: send Access-Control-Allow-Origin for these files (the entry
  is a module, the rest is fetched). A cross-origin-isolated page (COEP require-corp) also needs CORS or
  Cross-Origin-Resource-Policy: cross-origin on them.
- Files may be cached for ever if you rename the folder per version; the pyodide/ files never change
  for a given Pyodide release.

Files
{listing}
"""


def _module_closure(entry: Path) -> list[Path]:
    """entry and every module it imports by a relative path (./x.mjs), transitively."""
    seen, todo = [], [entry]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.append(path)
        for name in RELATIVE_IMPORT.findall(COMMENT.sub("", path.read_text())):
            todo.append((path.parent / name).resolve())
    return seen


def package_version() -> str:
    """pyproject.toml's version in a checkout, the installed distribution's otherwise."""
    if CHECKOUT is not None:
        return tomllib.loads((CHECKOUT / "pyproject.toml").read_text())["project"]["version"]
    return metadata.version(PACKAGE_NAME)


def package_json(files: list[str]) -> dict:
    """The npm package: browsers (and bundlers) get the entry that finds its assets beside itself, Node the
    one that reads them from this folder; both share the declarations."""
    entries = {"types": f"./web/{TYPES}", "browser": f"./{ENTRY}", "node": f"./web/{NODE_ENTRY}",
               "default": f"./{ENTRY}"}
    return {
        "name": PACKAGE_NAME,
        "version": package_version(),
        "description": "ONNX ConvTranspose (1D, 2D, 3D) on WebGPU, planned by Python in Pyodide: "
                       "getKernel(\"webgpu-kernels/ai.onnx.ConvTranspose\")",
        "type": "module",
        "main": f"./{ENTRY}",
        "types": f"./web/{TYPES}",
        "exports": {".": entries, "./package.json": "./package.json"},
        "files": files,
        "keywords": ["webgpu", "onnx", "convtranspose", "pyodide", "wgsl"],
    }


def export(dest: Path) -> dict:
    """Writes the static folder; returns {"files": {relative path: bytes}, "total": bytes}."""
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        readme = dest / "README.txt"
        if not (readme.is_file() and readme.read_text().startswith(MARK)):
            raise FileExistsError(f"{dest} is not empty and not an earlier export; choose a new folder")
        for child in dest.iterdir():  # an earlier export of ours: replace it whole
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
    pyodide = ensure_pyodide_assets()
    (dest / "pyodide").mkdir(parents=True, exist_ok=True)
    (dest / "README.txt").write_text(MARK + " (incomplete)\n")  # a failed export can be redone in place
    lock = json.loads((pyodide / "pyodide-lock.json").read_text())
    for name in PYODIDE_FILES + sorted(p["file_name"] for p in lock["packages"].values()):
        shutil.copyfile(PYODIDE_DIR / name, dest / "pyodide" / name)
    web = ROOT / "web"
    browser = _module_closure(web / RUNTIME_ENTRY)
    modules = browser + _module_closure(web / NODE_ENTRY)
    for source in dict.fromkeys(modules + [(web / TYPES).resolve()]):
        target = dest / "web" / source.relative_to(web.resolve())
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    bundle = bundle_bytes()
    (dest / "bundle.zip").write_bytes(bundle)
    snapshot = snapshot_file(pyodide, bundle)  # None without Node: the boot then starts Python from scratch
    if snapshot is not None:
        shutil.copyfile(snapshot, dest / "snapshot.bin")
    preload = "\n".join(f'import "./web/{name}";' for name in sorted(p.relative_to(web.resolve()).as_posix()
                                                                      for p in browser))
    (dest / ENTRY).write_text(ENTRY_MODULE.format(entry=ENTRY, runtime=RUNTIME_ENTRY, preload=preload))
    # pyodide.asm.js is a classic script that Node loads as CommonJS: the package's "type": "module" must not
    # reach it (Node would run it as an ES module, without require)
    (dest / "pyodide" / "package.json").write_text('{"type": "commonjs"}\n')
    (dest / "package.json").write_text(json.dumps(package_json(
        [ENTRY, "web/", "bundle.zip", "pyodide/", "README.txt"] + (["snapshot.bin"] if snapshot else [])), indent=2) + "\n")
    files = {p.relative_to(dest).as_posix(): p.stat().st_size for p in sorted(dest.rglob("*"))
             if p.is_file() and p.name != "README.txt"}
    listing = "\n".join(f"  {name:<56} {size:>11,} bytes" for name, size in files.items())
    # a browser's first getKernel fetches every file but this README and the npm package's Node side
    node_only = {"package.json", "pyodide/package.json", f"web/{NODE_ENTRY}", f"web/{TYPES}"}
    first_visit = sum(size for name, size in files.items() if name not in node_only)
    (dest / "README.txt").write_text(README.format(
        mark=MARK, kernel=kernel_id(), entry=ENTRY, mib=first_visit / 2**20,
        listing=listing, package=PACKAGE_NAME))
    files["README.txt"] = (dest / "README.txt").stat().st_size
    return {"files": files, "total": sum(files.values()), "first_visit": first_visit}


def main(dest: str) -> int:
    try:
        report = export(Path(dest))
    except FileExistsError as exc:
        print(f"export: {exc}")
        return 2
    print(f"exported to {Path(dest).resolve()}: {len(report['files'])} files, {report['total']:,} bytes "
          f"(first visit downloads at most {report['first_visit']:,}); entry {ENTRY}, see README.txt")
    return 0
