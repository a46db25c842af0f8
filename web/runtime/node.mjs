// The runtime's entry in Node.js (the npm package's `node` export): the same getKernel, with pyodide/ and
// bundle.zip read from the package's own folder (boot.mjs's default, a file: URL) by the file system: Node's
// fetch takes no file: URLs, and Pyodide in Node wants its folder as a path.
// navigator.gpu is the app's to provide (npm `webgpu`), as in a browser it is the browser's.
import { readFile } from "node:fs/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { bootDefaults } from "./boot.mjs";
import { holdGpu } from "./device.mjs";

const asPath = (where) => (where.startsWith("file:") ? fileURLToPath(where) : where);

async function readBytes(where) {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(where) && !where.startsWith("file:")) {
    const response = await fetch(where);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return new Uint8Array(await response.arrayBuffer());
  }
  return new Uint8Array(await readFile(asPath(where)));
}

/** Pyodide's loadPyodide from the assets folder. While it starts, an app's `navigator` that is not a real one
 * (`{gpu}` from npm webgpu: no userAgent) is set aside: Python's start-up reads navigator.userAgent when a
 * navigator exists (as in Node 21+, where it is a string) and fails on undefined. */
async function loadPyodide(options) {
  const indexURL = asPath(options.indexURL);
  const pyodide = await import(pathToFileURL(`${indexURL}pyodide.mjs`).href);
  const navigator = Object.getOwnPropertyDescriptor(globalThis, "navigator");
  const setAside = navigator?.configurable && typeof globalThis.navigator?.userAgent !== "string";
  if (setAside) {
    holdGpu(globalThis.navigator.gpu);  // a revisit opens the device meanwhile (kernel.mjs)
    delete globalThis.navigator;
  }
  try {
    return await pyodide.loadPyodide({ ...options, indexURL, lockFileURL: asPath(options.lockFileURL) });
  } finally {
    if (setAside) {
      Object.defineProperty(globalThis, "navigator", navigator);
      holdGpu(null);
    }
  }
}

// Python starts as the package loads (its folder is the assets folder unless getKernel names another)
bootDefaults({ readBytes, loadPyodide, how: "the package's folder", early: true, plans: true });
export * from "./index.mjs";
