// Model weights kept on the GPU by identity, one cache per kernel object: a constant typed array
// ({data, constant: true}) keeps its uploaded copy, and a constant array or a weight GPUBuffer keeps its
// prepared layouts (what a launch's weight-side passes make of it, one per prepare key: the passes, their
// uniforms and buffer sizes), however many launches (signatures, layers) it serves. A launch alone would hold
// one layer's weights: two layers of one signature called in turn re-uploaded and re-prepared on every call.
// A constant given as numbers (a plain array, a Float16Array) is converted once: the converted copy is found
// again by its source's identity (tensors.mjs constantCopy), so it hits here like a typed array does.
//
// Bounded by bytes, least recently used out first, and the bound holds per device: every kernel's cache on one
// device (one executor) counts against the largest bound any of them was given (512 MiB by default), so a new
// entry pushes out the device's least recently used entries, this kernel's or another's, but never one the
// call in flight binds; past its own bound a kernel's cache is trimmed, least recently used first, after the
// call. An entry that alone exceeds the bound, or that only the call's own entries stand in the way of, is not
// kept (its call writes and prepares into the launch's own buffers, as for plain arrays). What the cache holds
// is the caller's promise that the array or buffer does not change: forget(key) after changing it.

import { constantCopy, forgetConstant } from "./tensors.mjs";
import { USAGE } from "./usage.mjs";

let ticks = 0;  // one clock for every cache: the least recently used entry across a device's caches

export const WEIGHT_CACHE_BYTES = 512 * 1024 * 1024;

export class WeightCache {
  constructor(executor, limit = WEIGHT_CACHE_BYTES) {
    if (typeof limit !== "number" || !Number.isFinite(limit) || limit < 0) {
      throw new RangeError(`a weight cache's bound is a finite number of bytes >= 0, got ${limit}`);
    }
    this.executor = executor;
    this.limit = limit;
    this.entries = new Map();  // typed array or GPUBuffer -> {upload, layouts, bytes}, least recently used first
    this.bytes = 0;
    this.hits = 0;  // a constant input or weight buffer found with nothing to write or prepare
    this.misses = 0;  // ... that had to be written or prepared
    this.evictions = 0;
    this.written = 0;  // bytes uploaded into the cache
    // A call looks up all it binds in one synchronous run (executor bind, up to the submission): entries used
    // since that run began (a tick >= callStart) are in flight. null: no lookup since the last microtask.
    this.callStart = null;
  }

  /** The entry of `key`, made the most recently used (created when `create`). */
  entry(key, create) {
    if (this.callStart === null) {
      this.callStart = ticks + 1;
      queueMicrotask(() => { this.callStart = null; });
    }
    let e = this.entries.get(key);
    if (e) {
      this.entries.delete(key);
      this.entries.set(key, e);
    } else if (create) {
      e = { upload: null, layouts: new Map(), bytes: 0, used: 0 };
      this.entries.set(key, e);
    }
    if (e) e.used = ++ticks;
    return e;
  }

  /** The GPU copy of a constant typed array (written on its first use), or null when it does not fit.
   * name: the input it is bound as (the executor counts the bytes it writes by input). */
  upload(data, size, name) {
    const e = this.entry(data, false);
    if (e?.upload) { this.hits += 1; return e.upload; }
    this.misses += 1;
    if (!this.room(size, e)) return null;
    const entry = e ?? this.entry(data, true);
    entry.upload = this.hold(entry, size, `constant ${name}`);
    this.executor.write(entry.upload, data, name);
    this.written += data.byteLength;
    return entry.upload;
  }

  /** The prepared layout of `key` (constant typed array or GPUBuffer) for a launch's prepare key:
   * {buffers: name -> GPUBuffer, ready} (ready: the weight passes filled them), or null when it does not fit. */
  layout(key, prepareKey, sizes) {
    const e = this.entry(key, false);
    const hit = e?.layouts.get(prepareKey);
    if (hit?.ready) { this.hits += 1; return hit; }
    this.misses += 1;
    if (hit) return hit;
    let total = 0;
    for (const name in sizes) total += sizes[name];
    if (!this.room(total, e)) return null;
    const entry = e ?? this.entry(key, true);
    const buffers = {};
    for (const name in sizes) buffers[name] = this.hold(entry, sizes[name], name);
    const layout = { buffers, ready: false };
    entry.layouts.set(prepareKey, layout);
    return layout;
  }

  /** Whether `size` more bytes for entry `e` (null: a new one) stay within the bound: this cache's own (kept by
   * trim after the call), and the device's, for which the least recently used entries of every cache on the
   * device go first, this one's too, except those the call in flight binds. */
  room(size, e) {
    if ((e?.bytes ?? 0) + size > this.limit) return false;
    const limit = this.deviceLimit();
    let total = this.deviceBytes();
    while (total + size > limit) {
      let oldest = null;
      for (const cache of [this, ...this.siblings()]) {
        const first = cache.entries.entries().next().value;
        if (!first || (cache === this && this.inFlight(first[1]))) continue;
        if (!oldest || first[1].used < oldest[2].used) oldest = [cache, first[0], first[1]];
      }
      if (!oldest) return false;
      const [cache, key, entry] = oldest;
      cache.drop(key, entry);
      cache.evictions += 1;
      total -= entry.bytes;
    }
    return true;
  }

  /** Whether the call being bound looked `e` up (the least recently used entry is in flight only when all are). */
  inFlight(e) {
    return this.callStart !== null && e.used >= this.callStart;
  }

  /** The other weight caches on this cache's device (the executor's, one per kernel). */
  *siblings() {
    for (const cache of this.executor.caches?.values?.() ?? []) if (cache !== this) yield cache;
  }

  deviceBytes() {
    let total = this.bytes;
    for (const cache of this.siblings()) total += cache.bytes;
    return total;
  }

  deviceLimit() {
    let limit = this.limit;
    for (const cache of this.siblings()) limit = Math.max(limit, cache.limit);
    return limit;
  }

  hold(entry, size, label) {
    const buf = this.executor.allocate(size, USAGE.STORAGE | USAGE.COPY_DST, { label: `weight cache: ${label}` });
    entry.bytes += buf.size;
    this.bytes += buf.size;
    return buf;
  }

  /** Least recently used entries out until the cache is within its bound; `keep`: the keys this call binds. */
  trim(keep) {
    if (this.bytes <= this.limit) return;
    for (const [key, e] of this.entries) {
      if (this.bytes <= this.limit) break;
      if (keep.includes(key)) continue;
      this.drop(key, e);
      this.evictions += 1;
    }
  }

  drop(key, e) {
    this.entries.delete(key);
    if (e.upload) this.executor.release(e.upload);
    for (const layout of e.layouts.values()) for (const buf of Object.values(layout.buffers)) this.executor.release(buf);
    this.bytes -= e.bytes;
  }

  /** Drops what is kept for `key` (after the caller changed it in place); whether there was anything. */
  forget(key) {
    const copy = constantCopy(key);
    if (copy) forgetConstant(key);
    const k = copy && this.entries.has(copy) ? copy : key;
    const e = this.entries.get(k);
    if (e) this.drop(k, e);
    return !!e;
  }

  clear() {
    for (const [key, e] of this.entries) this.drop(key, e);
  }

  stats() {
    return { weight_cache_entries: this.entries.size, weight_cache_bytes: this.bytes, weight_cache_limit: this.limit,
             weight_cache_hits: this.hits, weight_cache_misses: this.misses, weight_cache_evictions: this.evictions,
             weight_cache_bytes_written: this.written,
             // every kernel's cache on this device, against the device's bound
             weight_cache_device_bytes: this.deviceBytes(), weight_cache_device_limit: this.deviceLimit() };
  }
}
