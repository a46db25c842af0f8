// The one way from JavaScript into Python: app.bridge's functions by name, values converted both ways,
// the package's exceptions thrown as JS errors.
import { bootApp, bootedApp, bootForFirstCall, firstCallApp } from "./boot.mjs";
import { kernelError } from "./errors.mjs";

// Python values that come back as plain JS data; any other Python object (a kernel) stays a PyProxy.
const CONVERTED = new Set(["dict", "list", "tuple", "bytes", "bytearray", "memoryview"]);

function toJs(value) {
  if (!value?.toJs || !CONVERTED.has(value.type)) return value;
  const out = value.toJs({ dict_converter: Object.fromEntries, create_pyproxies: false });
  value.destroy();
  return out;
}

// What a signature's first call runs in Python: none of it needs numpy (app/snapshot.py FIRST_CALL_MODULES), so
// they run while a snapshot's start still loads it; every other entry waits for it.
const FIRST_CALL = new Set(["open_kernel", "executor", "plan_launch"]);

const isPlain = (v) => v !== null && typeof v === "object" && (Array.isArray(v) || Object.getPrototypeOf(v) === Object.prototype);

/**
 * `app.bridge.<name>(...args)`, once booted (callPython waits for the boot). Plain objects and arrays
 * become Python dicts and lists, everything else (typed arrays, GPU objects, functions, Python proxies)
 * travels as it is; the result comes back as plain JS data (GPU objects inside it as themselves), or a
 * Promise of it for the bridge's async functions. The bridge returns the package's exceptions as
 * {__error__: {name, message, field, traceback}}: thrown here as an Error with that name, a one-line
 * message, `field`, and the traceback in `pythonTraceback`.
 */
export function callPythonNow(name, ...args) {
  const booted = FIRST_CALL.has(name) ? firstCallApp() : bootedApp();
  if (!booted) throw new Error(`callPythonNow("${name}") before the Python runtime booted: await kernel.ready (or bootApp()) first`);
  const { pyodide, bridge } = booted;
  const converted = args.map((a) => (isPlain(a) ? pyodide.toPy(a) : a));
  const release = () => converted.forEach((a, i) => { if (a !== args[i]) a?.destroy?.(); });
  const unwrap = (out) => {
    const value = toJs(out);
    if (value?.__error__) {
      const e = value.__error__;
      throw kernelError(e.name, e.message, e.field, e.traceback);
    }
    return value;
  };
  let out;
  try {
    const fn = bridge[name];
    if (typeof fn !== "function") throw new Error(`app.bridge has no function ${name}`);
    out = fn(...converted);
  } catch (err) {
    release();
    throw err;
  }
  if (out && typeof out.then === "function") return Promise.resolve(out).then(unwrap).finally(release);
  try {
    return unwrap(out);
  } finally {
    release();
  }
}

export async function callPython(name, ...args) {
  if (!FIRST_CALL.has(name)) {
    await bootApp();
    return await callPythonNow(name, ...args);
  }
  const app = await bootForFirstCall();
  try {
    return await callPythonNow(name, ...args);
  } finally {
    // a first call has been planned: the rest of the runtime loads while its GPU work runs (a starter's plan is
    // followed by its signature's own, which loads it: kernel.mjs startQuick)
    if (name === "plan_launch" && !args[1]?.starter) app.loadRest();
  }
}
