// Makes the memory snapshot a first visit starts Python from (web/runtime/boot.mjs): Pyodide started once, in
// Node, with jinja2 and the package from bundle.zip unpacked and what a first call runs imported and compiled
// (app/snapshot.py), then its heap written out. app/host/snapshot.py runs it and frames the result.
//   node web/views/snapshot-make.mjs PYODIDE_DIR BUNDLE_ZIP OUT
// Prints one JSON line: what the snapshot holds.
import { readFile, writeFile } from "node:fs/promises";
import { pathToFileURL } from "node:url";

// as boot.mjs unpacks it: the snapshot's sys.path and module file names must be the page's
const PACKAGE_DIR = "/home/pyodide/convtranspose";
const SITE_PACKAGES = "/lib/python3.12/site-packages";
const PURE_PACKAGES = ["jinja2", "markupsafe"];  // pure Python, as boot.mjs unpacks them after a restore

const [pyodideDir, bundlePath, out] = process.argv.slice(2);
const indexURL = pyodideDir.endsWith("/") ? pyodideDir : `${pyodideDir}/`;
const { loadPyodide } = await import(pathToFileURL(`${indexURL}pyodide.mjs`).href);
// Python's start reads navigator.userAgent where a navigator exists (web/runtime/node.mjs sets an app's aside too)
if (globalThis.navigator && typeof globalThis.navigator.userAgent !== "string") delete globalThis.navigator;
const pyodide = await loadPyodide({ indexURL, lockFileURL: `${indexURL}pyodide-lock.json`, fullStdLib: false,
                                    _makeSnapshot: true });
const lock = JSON.parse(await readFile(`${indexURL}pyodide-lock.json`, "utf8"));
for (const name of PURE_PACKAGES) {
  // unpacked as plain zips, as boot.mjs does: the snapshot holds no record of loadPackage's
  const wheel = await readFile(`${indexURL}${lock.packages[name].file_name}`);
  pyodide.unpackArchive(new Uint8Array(wheel), "zip", { extractDir: SITE_PACKAGES });
}
pyodide.unpackArchive(new Uint8Array(await readFile(bundlePath)), "zip", { extractDir: PACKAGE_DIR });
const held = pyodide.runPython(`
import json, sys
# what Pyodide's loadPackage imports on its first use (the boot loads numpy through it)
import csv, datetime, email.message, importlib.metadata, tarfile
sys.path.insert(0, ${JSON.stringify(PACKAGE_DIR)})
from app import snapshot
json.dumps(snapshot.prepare())
`);
const bytes = pyodide.makeMemorySnapshot();
await writeFile(out, bytes);
console.log(JSON.stringify({ ...JSON.parse(held), bytes: bytes.length, pyodide: pyodide.version }));
