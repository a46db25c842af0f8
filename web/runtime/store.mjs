// The one store of what the package remembers between calls and visits: plans and what adaptation learned on an
// adapter (plan-store.mjs), autotune choices (app/autotune.py). Every kind of record lives under
// one set of rules, whichever backend holds it:
// - a store holds text by key; what a text means is checked by its reader, never trusted (plan-store.mjs,
//   app/store_entries.py);
// - a write is whole or not at all, and merges with what other writers stored since (`update` reads, changes and
//   writes one key under a lock: a JSON file's lock file, an IndexedDB readwrite transaction);
// - a file that is not the store's shape is set aside beside it with a warning, never overwritten;
// - a size bound per kind (bytes and keys), the least recently written keys pruned first;
// - a caller's own store ({get, set}) answers within STORE_TIMEOUT_MS, else that call is a warning and the
//   package goes on without it;
// - every warning names the store.

export const STORE_TIMEOUT_MS = 5000;
const LOCK_WAIT_MS = 5000;  // how long a writer waits for another's lock
const LOCK_STALE_MS = 30000;  // a lock this old was left by a writer that died mid-write

/** Bounds per kind of record: plans are one record per package revision (a few old ones kept for a rollback),
 * autotune choices one per signature. */
export const KINDS = {
  plans: { maxBytes: 32 * 1024 * 1024, maxKeys: 4 },
  autotune: { maxBytes: 16 * 1024 * 1024, maxKeys: 4096 },
};

export function warnStore(name, message) {
  console.warn(`webgpu-convtranspose: ${name}: ${message}`);
}

const why = (err) => String(err?.message ?? err).split("\n")[0].slice(0, 300);

/** Keys to drop, least recently written first, so that `entries` ([key, text] in write order) fits the bounds;
 * `keep` (the key being written) is never dropped. */
function overflow(entries, { maxBytes, maxKeys }, keep) {
  let bytes = entries.reduce((n, [k, t]) => n + k.length + t.length, 0);
  let keys = entries.length;
  const drop = [];
  for (const [k, t] of entries) {
    if (bytes <= maxBytes && keys <= maxKeys) break;
    if (k === keep) continue;
    drop.push(k);
    bytes -= k.length + t.length;
    keys -= 1;
  }
  return drop;
}

// Node's built-ins by a name bundlers do not resolve (a browser bundle never reaches them)
const nodeBuiltin = (name) => import(/* webpackIgnore: true */ /* @vite-ignore */ `node:${name}`);

// The JSON file's shape: one object, key -> text, in write order. Anything else found at the path (a truncated
// write, another program's file, `null`, `[]`, past the bound) is foreign.
function fileShape(text) {
  let items;
  try { items = JSON.parse(text); } catch (err) { return { why: `not JSON (${why(err)})` }; }
  if (items === null || typeof items !== "object" || Array.isArray(items)) {
    return { why: `a JSON ${items === null ? "null" : Array.isArray(items) ? "array" : typeof items}, not an object` };
  }
  const bad = Object.keys(items).find((k) => typeof items[k] !== "string");
  if (bad !== undefined) return { why: `entry ${JSON.stringify(bad.slice(0, 80))} is not a string` };
  return { items };
}

/** A store in one JSON file (Node), shared by every kernel and process that names it: each write takes a lock
 * file, reads the file again (what others stored since is kept), changes its key, prunes past the bounds, and
 * writes a temporary file renamed over the old one (a reader sees the old file or the new, never half of one). */
export async function fileStore(path, { kind = "autotune", name = `store ${path}` } = {}) {
  const fs = await nodeBuiltin("fs/promises");
  const { dirname } = await nodeBuiltin("path");
  const bounds = KINDS[kind];
  // a file past twice its bound was not written by this package (a write prunes to the bound)
  const maxFile = 2 * bounds.maxBytes + 1024 * 1024;
  const lockPath = `${path}.lock`;

  async function setAside(reason) {
    const aside = `${path}.foreign-${Date.now()}-${process.pid}`;
    try {
      await fs.rename(path, aside);
      warnStore(name, `${reason}; set aside as ${aside}, a new store starts there`);
    } catch (err) {
      if (err.code !== "ENOENT") throw err;  // gone already: another writer set it aside
    }
  }

  /** The file's items (missing: {}); a foreign file is set aside under the lock (`repair`), else ignored. */
  async function load(repair) {
    let text;
    try {
      const stat = await fs.stat(path);
      if (!stat.isFile()) throw Object.assign(new Error(`${path} is not a regular file`), { code: "ENOTFILE" });
      if (stat.size > maxFile) {
        if (repair) await setAside(`${stat.size} bytes, past the ${maxFile} this store writes`);
        else warnStore(name, `${stat.size} bytes, past the ${maxFile} this store writes; ignored (set aside on the next write)`);
        return {};
      }
      text = await fs.readFile(path, "utf8");
    } catch (err) {
      if (err.code === "ENOENT") return {};
      throw new Error(`${name}: cannot read it (${why(err)})`);
    }
    const shape = fileShape(text);
    if (shape.items) return shape.items;
    if (repair) await setAside(`the file is ${shape.why}`);
    else warnStore(name, `the file is ${shape.why}; ignored (set aside on the next write)`);
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
        if (Date.now() - started > LOCK_WAIT_MS) throw new Error(`${name}: ${lockPath} held for ${LOCK_WAIT_MS} ms`);
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

  async function update(key, change) {
    return locked(async () => {
      const items = await load(true);
      const text = change(typeof items[key] === "string" ? items[key] : null);
      if (typeof text !== "string") return;
      delete items[key];  // written last: the most recently written key
      items[key] = text;
      for (const k of overflow(Object.entries(items), bounds, key)) delete items[k];
      const temp = `${path}.${process.pid}.${Date.now()}.tmp`;
      try {
        await fs.writeFile(temp, JSON.stringify(items));
        await fs.rename(temp, path);
      } finally {
        await fs.rm(temp, { force: true });
      }
    });
  }

  return {
    name,
    async get(key) {
      const items = await load(false);
      return typeof items[key] === "string" ? items[key] : null;
    },
    async set(key, text) {
      if (typeof text !== "string") throw new TypeError(`${name}: an entry is a string`);
      await update(key, () => text);
    },
    update,
  };
}

function request(r) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

/** A store in IndexedDB: one database per kind, values {text, at} (a plain string from an older package is read
 * as text). `update` reads, changes and writes in one readwrite transaction, which IndexedDB runs alone, and
 * prunes past the bounds in the same transaction. */
export function indexedDbStore(indexedDB, database, objectStore, { kind = "autotune", name = `IndexedDB ${database}` } = {}) {
  const bounds = KINDS[kind];
  let opened = null;
  const db = () => opened ??= (() => {
    const r = indexedDB.open(database, 1);
    r.onupgradeneeded = () => r.result.createObjectStore(objectStore);
    return request(r);
  })();
  const textOf = (value) => typeof value === "string" ? value : typeof value?.text === "string" ? value.text : null;
  const atOf = (value) => typeof value?.at === "number" ? value.at : 0;

  async function update(key, change) {
    const tx = (await db()).transaction(objectStore, "readwrite");
    const store = tx.objectStore(objectStore);
    const done = new Promise((resolve, reject) => {
      tx.oncomplete = resolve;
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error ?? new Error("the transaction was aborted"));
    });
    const keysRequest = store.getAllKeys(), valuesRequest = store.getAll();
    valuesRequest.onsuccess = () => {
      const keys = keysRequest.result, values = valuesRequest.result;
      const index = keys.indexOf(key);
      const text = change(index >= 0 ? textOf(values[index]) : null);
      if (typeof text !== "string") return;
      store.put({ text, at: Date.now() }, key);
      const entries = keys.map((k, i) => [k, textOf(values[i]) ?? "", atOf(values[i])])
        .filter(([k]) => k !== key && typeof k === "string").sort((a, b) => a[2] - b[2]);
      entries.push([key, text, Date.now()]);
      for (const k of overflow(entries, bounds, key)) store.delete(k);
    };
    await done;
  }

  return {
    name,
    async get(key) {
      const tx = (await db()).transaction(objectStore, "readonly");
      return textOf(await request(tx.objectStore(objectStore).get(key)));
    },
    async set(key, text) {
      if (typeof text !== "string") throw new TypeError(`${name}: an entry is a string`);
      await update(key, () => text);
    },
    update,
  };
}

export function memoryStore(name = "memory store") {
  const items = new Map();
  return {
    name,
    async get(key) { return items.get(key) ?? null; },
    async set(key, text) { items.set(key, text); },
    async update(key, change) {
      const text = change(items.get(key) ?? null);
      if (typeof text === "string") items.set(key, text);
    },
  };
}

function withinTime(promise, name, method) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${name}: its ${method} gave no answer in ${STORE_TIMEOUT_MS} ms`)),
      STORE_TIMEOUT_MS);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** A caller's store ({get(key), set(key, text)}, async or not) held to the rules it can be held to: each call
 * answers within STORE_TIMEOUT_MS (one that once did not is not asked again), a get gives a string or null, and
 * whatever it throws comes back as an Error naming the store. `update` is its get then its set: a caller's store has no
 * lock of ours, so two writers of one key may lose one's change (documented in docs/api.md). */
export function guardedStore(store, label = "the caller's store") {
  const name = `${label} (${store?.constructor?.name ?? typeof store})`;
  let silent = null;  // a store that once gave no answer is not waited for again: each wait would be a call's
  const call = async (method, ...args) => {
    if (typeof store?.[method] !== "function") throw new Error(`${name} has no ${method}()`);
    if (silent) throw new Error(`${silent} (not asked again)`);
    try {
      return await withinTime(Promise.resolve().then(() => store[method](...args)), name, method);
    } catch (err) {
      if (err?.message?.startsWith(name)) {
        silent = err.message;
        throw err;
      }
      throw new Error(`${name}: its ${method} failed (${why(err)})`);
    }
  };
  return {
    name,
    async get(key) {
      const text = await call("get", key);
      if (text === null || text === undefined) return null;
      if (typeof text !== "string") throw new Error(`${name}: its get gave a ${typeof text}, not a string or null`);
      return text;
    },
    async set(key, text) { await call("set", key, text); },
    async update(key, change) {
      let old = null;
      try { old = await this.get(key); } catch (err) { warnStore(name, `${err.message}; written afresh`); }
      const text = change(old);
      if (typeof text === "string") await this.set(key, text);
    },
  };
}

const shared = new Map();
/** The default store of a kind on this host (one per page or process): IndexedDB in a browser; in Node a JSON
 * file, $CONVTRANSPOSE_PLANS / $CONVTRANSPOSE_AUTOTUNE or
 * ~/.cache/webgpu-convtranspose/<kind>.json; memory elsewhere. */
export async function defaultStore(kind) {
  if (!(kind in KINDS)) throw new Error(`no store kind ${kind}`);
  if (shared.has(kind)) return shared.get(kind);
  let store;
  if (globalThis.indexedDB) {
    store = indexedDbStore(globalThis.indexedDB, `webgpu-convtranspose-${kind}`, kind === "autotune" ? "choices" : "records",
      { kind });
  } else if (globalThis.process?.versions?.node) {
    const { homedir } = await nodeBuiltin("os");
    const path = process.env[`CONVTRANSPOSE_${kind.toUpperCase()}`] || `${homedir()}/.cache/webgpu-convtranspose/${kind}.json`;
    store = await fileStore(path, { kind, name: `${kind} store ${path}` });
  } else {
    store = memoryStore(`${kind} store in memory`);
  }
  shared.set(kind, store);
  return store;
}
