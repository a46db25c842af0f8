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

/** Choices in one JSON file (Node), read once, rewritten whole on every new choice. */
export async function jsonFileStore(path) {
  const fs = await nodeBuiltin("fs/promises");
  const { dirname } = await nodeBuiltin("path");
  let items = {};
  try {
    items = JSON.parse(await fs.readFile(path, "utf8"));
  } catch {
    items = {};  // missing or unreadable: start empty (autotune.py warns about unreadable entries)
  }
  return {
    async get(key) { return typeof items[key] === "string" ? items[key] : null; },
    async set(key, text) {
      items[key] = text;
      await fs.mkdir(dirname(path), { recursive: true });
      await fs.writeFile(path, JSON.stringify(items));
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
