// Plans persisted between visits, so that a revisit runs the signatures it has seen before Python has booted.
//
// What a signature's first call leaves in the executor (a launch: its passes' WGSL, bindings, uniforms and grids,
// buffer sizes) is plain data but for its compiled pipelines; stored with each pipeline's WGSL instead, it is
// rebuilt here, compiled, and run, with no Python. One record per package revision (the sha-256 of bundle.zip,
// which holds the Python package, the templates and the tuning tables that decide every plan): the features and
// limits the device was opened with, and per adapter (device.mjs adapterKey) the tuning tables' revision the
// plans followed (`planning`) and the launches by signature. A record of another revision is never read; an
// entry that does not parse or rebuild is ignored with a warning (as the autotune store does).
//
// Where: IndexedDB in a browser, a JSON file in Node ($CONVTRANSPOSE_PLANS, default
// ~/.cache/webgpu-convtranspose/plans.json), memory elsewhere; or any {get(key), set(key, text)} the caller
// passes as getKernel's `planStore` (false: none).

const FORMAT = 1;
const MAX_ENTRIES = 64;  // signatures kept per adapter, the oldest dropped first
const DB = "webgpu-convtranspose-plans";

function request(r) {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
}

function indexedDbStore(indexedDB) {
  let opened = null;
  const db = () => opened ??= (() => {
    const r = indexedDB.open(DB, 1);
    r.onupgradeneeded = () => r.result.createObjectStore("records");
    return request(r);
  })();
  const store = async (mode) => (await db()).transaction("records", mode).objectStore("records");
  return {
    async get(key) { return (await request((await store("readonly")).get(key))) ?? null; },
    async set(key, text) { await request((await store("readwrite")).put(text, key)); },
  };
}

// Node's built-ins by a name bundlers do not resolve (a browser bundle never reaches them)
const nodeBuiltin = (name) => import(/* webpackIgnore: true */ /* @vite-ignore */ `node:${name}`);

function fileStore(path) {
  const read = async () => {
    const fs = await nodeBuiltin("fs/promises");
    try {
      return JSON.parse(await fs.readFile(path, "utf8"));
    } catch {
      return {};
    }
  };
  return {
    async get(key) { const items = await read(); return typeof items[key] === "string" ? items[key] : null; },
    async set(key, text) {
      const fs = await nodeBuiltin("fs/promises");
      const { dirname } = await nodeBuiltin("path");
      const items = await read();
      items[key] = text;
      await fs.mkdir(dirname(path), { recursive: true });
      // whole or not at all: a process ending mid-write (or another writing beside it) never leaves half a file
      const partial = `${path}.${process.pid}.tmp`;
      await fs.writeFile(partial, JSON.stringify(items));
      await fs.rename(partial, path);
    },
  };
}

function memoryStore() {
  const items = new Map();
  return { async get(key) { return items.get(key) ?? null; }, async set(key, text) { items.set(key, text); } };
}

let shared = null;
/** The store of this host (one per page or process). */
export async function defaultPlanStore() {
  if (shared) return shared;
  if (globalThis.indexedDB) return (shared = indexedDbStore(globalThis.indexedDB));
  if (globalThis.process?.versions?.node) {
    const { homedir } = await nodeBuiltin("os");
    return (shared = fileStore(process.env.CONVTRANSPOSE_PLANS || `${homedir()}/.cache/webgpu-convtranspose/plans.json`));
  }
  return (shared = memoryStore());
}

/** The sha-256 of bundle.zip's bytes, as hex: the package revision every stored plan belongs to. */
export async function revisionOf(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A launch spec as stored: each pipeline replaced by its {key, source, label} (sources: pipeline -> that). */
export function storable(spec, sources) {
  const pipeline = (p) => {
    const source = sources.get(p);
    if (!source) throw new Error("a pipeline of the launch has no recorded source");
    return source;
  };
  const pass = (p) => ({ ...p, pipeline: pipeline(p.pipeline) });
  return { ...spec, prepare: spec.prepare.map(pass), passes: spec.passes.map(pass),
           finite_check: spec.finite_check ? pipeline(spec.finite_check) : null };
}

/** A stored spec made runnable on `executor`: its pipelines compiled (or found in the executor's cache). */
export async function runnable(stored, executor) {
  const compile = (p) => executor.pipeline(p.key, p.source, p.label);
  const pass = async (p) => ({ ...p, pipeline: await compile(p.pipeline) });
  return { ...stored, prepare: await Promise.all(stored.prepare.map(pass)), passes: await Promise.all(stored.passes.map(pass)),
           finite_check: stored.finite_check ? await compile(stored.finite_check) : null };
}

/** The plans of one package revision in a store: read once, written back as signatures are planned. */
export class PlanRecord {
  constructor(store, revision, text) {
    this.store = store;
    this.key = `plans|${revision}`;
    this.revision = revision;
    this.data = { format: FORMAT, revision, features: null, limitNames: null, dtypes: null, adapters: {} };
    if (text === null) return;
    try {
      const data = JSON.parse(text);
      if (data?.format !== FORMAT || data.revision !== revision || typeof data.adapters !== "object") {
        throw new Error(`format ${data?.format}, revision ${String(data?.revision).slice(0, 12)}`);
      }
      this.data = data;
    } catch (err) {
      console.warn(`webgpu-convtranspose: stored plans under ${this.key} ignored (${err.message}); planned afresh`);
    }
  }

  static async open(store, revision) {
    let text = null;
    try {
      text = await store.get(`plans|${revision}`);
    } catch (err) {
      console.warn(`webgpu-convtranspose: the plan store could not be read (${err?.message ?? err}); planned afresh`);
    }
    return new PlanRecord(store, revision, typeof text === "string" ? text : null);
  }

  /** What the device must be opened with for the stored plans to hold: {features, limitNames} or null. */
  get device() {
    const { features, limitNames } = this.data;
    return Array.isArray(features) && Array.isArray(limitNames) ? { features, limitNames } : null;
  }

  /** The stored launch spec of a signature on this adapter, planned under `planning`, or null. */
  entry(adapter, planning, signature) {
    const context = this.data.adapters[adapter];
    return context && context.planning === planning ? context.entries[signature] ?? null : null;
  }

  planning(adapter) {
    return this.data.adapters[adapter]?.planning ?? null;
  }

  drop(adapter, signature) {
    delete this.data.adapters[adapter]?.entries[signature];
  }

  /** Keeps a signature's launch and writes the record back (a failed write is a warning, never the call's error). */
  async keep({ adapter, planning, features, limitNames, dtypes }, signature, stored) {
    Object.assign(this.data, { features, limitNames, dtypes });
    let context = this.data.adapters[adapter];
    if (!context || context.planning !== planning) context = this.data.adapters[adapter] = { planning, entries: {} };
    delete context.entries[signature];
    context.entries[signature] = stored;
    const names = Object.keys(context.entries);
    for (const name of names.slice(0, Math.max(0, names.length - MAX_ENTRIES))) delete context.entries[name];
    try {
      await this.store.set(this.key, JSON.stringify(this.data));
    } catch (err) {
      console.warn(`webgpu-convtranspose: the plan store could not be written (${err?.message ?? err})`);
    }
  }
}
