// Where autotuning's choices persist between page loads (app/autotune.py decides what is stored and when
// a stored choice is ignored): IndexedDB in a browser, a JSON file in Node, a Map where neither exists.
// A caller may pass its own store instead: any object with async get(key) -> string | null and
// set(key, text).

const DB = "webgpu-convtranspose-autotune";
const STORE = "choices";

function request(r) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

/** Choices in IndexedDB (one database, one object store keyed by the signature). */
export function indexedDbStore(indexedDB = globalThis.indexedDB) {
  let opened = null;
  const db = () => opened ??= (() => {
    const r = indexedDB.open(DB, 1);
    r.onupgradeneeded = () => r.result.createObjectStore(STORE);
    return request(r);
  })();
  const store = async (mode) => (await db()).transaction(STORE, mode).objectStore(STORE);
  return {
    async get(key) { return (await request((await store("readonly")).get(key))) ?? null; },
    async set(key, text) { await request((await store("readwrite")).put(text, key)); },
  };
}

// Node's built-in modules, imported by a name bundlers do not resolve: a browser bundle of the runtime (the npm
// package's) must build without them, and never reaches the Node branch.
const nodeBuiltin = (name) => import(/* webpackIgnore: true */ /* @vite-ignore */ `node:${name}`);

// The JSON file's shape: one object, signature -> the entry's text. Anything else found at the path (a truncated
// write, another program's file, `null`, `[]`) is foreign: set aside beside it with a warning, never overwritten.
const MAX_FILE_BYTES = 64 * 1024 * 1024;
const LOCK_WAIT_MS = 5000;  // how long a writer waits for another's lock
const LOCK_STALE_MS = 30000;  // a lock this old was left by a writer that died mid-write

function storeShape(text) {
  let items;
  try { items = JSON.parse(text); } catch (err) { return { why: `not JSON (${err.message})` }; }
  if (items === null || typeof items !== "object" || Array.isArray(items)) {
    return { why: `a JSON ${items === null ? "null" : Array.isArray(items) ? "array" : typeof items}, not an object` };
  }
  const bad = Object.keys(items).find((k) => typeof items[k] !== "string");
  if (bad !== undefined) return { why: `entry ${JSON.stringify(bad.slice(0, 80))} is not a string` };
  return { items };
}

/** Choices in one JSON file (Node), shared by every process that names it: each `set` takes a lock file, reads
 * the file again (what other writers stored since is kept), adds its entry and writes a temporary file renamed
 * over the old one (a reader sees the old file or the new, never half of one); `get` reads the file again for a
 * key it does not hold. */
export async function jsonFileStore(path, { warn = (m) => process.emitWarning(m, "AutotuneStoreWarning") } = {}) {
  const fs = await nodeBuiltin("fs/promises");
  const { dirname } = await nodeBuiltin("path");
  const lockPath = `${path}.lock`;
  let items = {};

  async function setAside(why) {
    const aside = `${path}.foreign-${Date.now()}-${process.pid}`;
    try {
      await fs.rename(path, aside);
      warn(`autotune store ${path}: ${why}; set aside as ${aside}, a new store starts there`);
    } catch (err) {
      if (err.code !== "ENOENT") throw err;  // gone already: another writer set it aside
    }
  }

  /** The file's entries (missing: {}); a foreign file is set aside (only under the lock: `repair`). */
  async function load(repair) {
    let text;
    try {
      const stat = await fs.stat(path);
      if (!stat.isFile()) throw Object.assign(new Error(`${path} is not a regular file`), { code: "ENOTFILE" });
      if (stat.size > MAX_FILE_BYTES) return repair ? (await setAside(`${stat.size} bytes, past ${MAX_FILE_BYTES}`), {}) : {};
      text = await fs.readFile(path, "utf8");
    } catch (err) {
      if (err.code === "ENOENT") return {};
      throw new Error(`autotune store ${path}: cannot read it (${err.message})`);
    }
    const shape = storeShape(text);
    if (shape.items) return shape.items;
    if (repair) await setAside(`the file is ${shape.why}`);
    else warn(`autotune store ${path}: the file is ${shape.why}; ignored (set aside on the next write)`);
    return {};
  }

  async function locked(work) {
    await fs.mkdir(dirname(path), { recursive: true });
    const started = Date.now();
    let handle = null;
    while (handle === null) {
      try {
        handle = await fs.open(lockPath, "wx");
      } catch (err) {
        if (err.code !== "EEXIST") throw err;
        const age = await fs.stat(lockPath).then((s) => Date.now() - s.mtimeMs, () => 0);
        if (age > LOCK_STALE_MS) { await fs.rm(lockPath, { force: true }); continue; }
        if (Date.now() - started > LOCK_WAIT_MS) throw new Error(`autotune store ${path}: ${lockPath} held for ${LOCK_WAIT_MS} ms`);
        await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
      }
    }
    try {
      return await work();
    } finally {
      await handle.close();
      await fs.rm(lockPath, { force: true });
    }
  }

  items = await load(false);
  return {
    async get(key) {
      if (typeof items[key] !== "string") items = { ...items, ...await load(false) };
      return typeof items[key] === "string" ? items[key] : null;
    },
    async set(key, text) {
      if (typeof text !== "string") throw new TypeError("autotune store: an entry is a string");
      await locked(async () => {
        items = { ...items, ...await load(true), [key]: text };
        const temp = `${path}.${process.pid}.${Date.now()}.tmp`;
        try {
          await fs.writeFile(temp, JSON.stringify(items));
          await fs.rename(temp, path);
        } finally {
          await fs.rm(temp, { force: true });
        }
      });
    },
  };
}

export function memoryStore() {
  const items = new Map();
  return { async get(key) { return items.get(key) ?? null; }, async set(key, text) { items.set(key, text); } };
}

/** The default store here: IndexedDB in a browser, $CONVTRANSPOSE_AUTOTUNE or
 *  ~/.cache/webgpu-convtranspose/autotune.json in Node, else memory. */
export async function defaultStore() {
  if (globalThis.indexedDB) return indexedDbStore();
  if (globalThis.process?.versions?.node) {
    const { homedir } = await nodeBuiltin("os");
    const path = process.env.CONVTRANSPOSE_AUTOTUNE ?? `${homedir()}/.cache/webgpu-convtranspose/autotune.json`;
    return jsonFileStore(path);
  }
  return memoryStore();
}
