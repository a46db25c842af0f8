// The kernel as a JavaScript function. A call's first time with a signature (shapes, dtypes, attributes,
// variant, and the tuning tables' revision that decides its plan) goes through Python, which validates,
// plans, renders and compiles, and leaves a launch in the executor (executor.mjs). Every later call with
// that signature is checked and run here, in JavaScript, without entering Python.
//
// Launches are also persisted (plan-store.mjs): on a revisit, getKernel resolves as soon as the device is open
// and the stored plans are read, and calls of the signatures stored run at once, while Python boots behind them.
// Once Python is up, each signature that ran from the store is planned again and its stored entry compared.
import { ADAPT, Trial } from "./adapt.mjs";
import { bootApp, bootForFirstCall, bootRevision, gatePython, storesPlans, timedPhase } from "./boot.mjs";
import { CONTRACT_VERSION, DTYPES, KERNEL_ID } from "./contract.mjs";
import { adapterKey, executorFor, openDevice, sharedDevice } from "./device.mjs";
import { PlanRecord, calibrated, runnable, sha256, storable, storedSpecFault } from "./plan-store.mjs";
import { defaultStore, guardedStore, warnStore } from "./store.mjs";
import { kernelError } from "./errors.mjs";
import { EXACT, forgetFinite, runFinite } from "./finite.mjs";
import { callPython, callPythonNow } from "./python.mjs";
import { GATHER, gatherWork, quickGeometry, quickSpec, sameWork } from "./quick-start.mjs";
import { INPUTS, inputDtypes, pythonRequest, requestAttributes, tensor } from "./tensors.mjs";
import { TYPED_ARRAYS, typedArray } from "./typed-arrays.mjs";
import { WEIGHT_CACHE_BYTES } from "./weight-cache.mjs";

let kernels = 0;
const OPTIONS = ["version", "revision", "limits", "device", "assets", "autotune", "weightCacheBytes", "planStore", "adapt"];
// What adaptation chose per signature (planning|signature -> {variant, params, why}), for every kernel of the
// page or process; kept across visits in the plan record where plans persist (plan-store.mjs learned).
const learnedHere = new Map();
// What adaptation measured of the cost model (planning -> {rate key: {n, w, ww, log, wlog}}: plan-store.mjs
// calibrated), for the kernels opened later where plans do not persist (where they do, the plan record's, which
// holds it too).
const calibrationHere = new Map();
const signatureOf = (key) => key.slice(key.indexOf("|") + 1);  // a launch key without the kernel's serial
const HOLD_MS = 2000;  // the longest a revisit holds Python back for its stored plans' first call
const VERIFY = "|verify";  // the launch key under which Python plans a signature again that ran from the store
// A signature whose plan took STARTER.compileMs or more to compile gets a starter (the quick first kernel
// app/planner.py starter names) stored beside it, where its predicted run beats the plan's compile and run by `margin`
// (its own compile, measured on the revisit that runs it, drops it where that is past them):
// a revisit runs its first calls on the starter while the plan compiles (docs/decisions.md#starter). The first
// signature of each rank, dtype and bias gets one whatever its compile (it lends its WGSL to new signatures of its
// kind: quick-start.mjs), and a new signature runs the quick start where its gather run is predicted under
// quickMs (Python's start and plan, which it saves, take 0.4 s and more: docs/decisions.md#quick-start).
const STARTER = { compileMs: 100, margin: 0.1, quickMs: 250 };

// Python's start waits, on a revisit, for the first call that runs from stored plans (or HOLD_MS): both on one
// thread, the call would otherwise wait seconds for Pyodide's start. It does not wait on a first visit (no plans
// stored for this package revision in the default store), nor where no getKernel is under way (a page that
// needs Python first).
let firstStoredRun = null;
let gettingKernels = 0;
gatePython(async (revision) => {
  if (!gettingKernels || !storesPlans()) return;
  let text = null;
  try {
    text = await (await defaultStore("plans")).get(`plans|${revision}`);
  } catch { /* no store here: nothing to wait for */ }
  if (!text) return;
  let release;
  firstStoredRun = new Promise((resolve) => { release = resolve; });
  firstStoredRun.release = release;
  setTimeout(release, HOLD_MS);
  await firstStoredRun;
});

/** A revisit's head start: the stored plans of the package revision being booted, and the shared device opened
 * as they were planned on; null when there are none for this adapter (then everything waits for Python). */
async function storedPlans(given) {
  let revision;
  try {
    revision = await bootRevision();
  } catch {
    return null;  // bundle.zip did not load: the boot's error is getKernel's
  }
  const store = given ? guardedStore(given, "getKernel's planStore") : await defaultStore("plans");
  const record = await timedPhase("read stored plans", () => PlanRecord.open(store, revision));
  const wanted = record.device;
  if (!wanted) return { record };
  let opened;
  try {
    opened = await timedPhase("open the device", () => openDevice(wanted.features, wanted.limitNames));
  } catch (err) {
    // a record can name features or limits no adapter here has: Python opens the device its own way
    warnStore(record.name, `the device the stored plans name did not open (${err?.message ?? err}); planned afresh`);
    return { record };
  }
  const adapter = adapterKey(opened);
  return { record, adapter, planning: record.planning(adapter), exec: executorFor(opened.device), device: opened.device };
}

/** What Python's plan_launch takes of a call: each input's shape and dtype, the attributes, variant and finiteness. */
function requestMeta(tensors, attributes, variant, finite) {
  const meta = Object.fromEntries(Object.entries(tensors).map(([n, t]) => [n, { shape: t.shape, dtype: t.dtype }]));
  return { ...meta, attributes, variant, finite };
}

/** getKernel's options: an object of known names (a misspelt one would be silently ignored). */
function checkOptions(options) {
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw kernelError("ConvTransposeError", `getKernel(id, options): options must be an object, got ${JSON.stringify(options)}`, "options");
  }
  for (const name of Object.keys(options)) {
    if (!OPTIONS.includes(name)) {
      const near = OPTIONS.find((known) => known.toLowerCase().startsWith(name.toLowerCase().slice(0, 4)));
      throw kernelError("ConvTransposeError", `getKernel has no option ${JSON.stringify(name)}` +
        `${near ? ` (did you mean ${JSON.stringify(near)}?)` : ""}; it takes ${OPTIONS.join(", ")}`, name);
    }
  }
}

/** `into`: a typed array the caller owns and reuses, of y's dtype; y is read straight into it (a new array of
 * several MB costs more than the copy: its pages are faulted in as they are first written). */
function checkInto(into, output, dtype) {
  if (output !== "cpu") throw kernelError("ConvTransposeError", 'into takes y on the CPU: leave output "cpu"', "into");
  const want = TYPED_ARRAYS[dtype];
  if (want && !(into instanceof want)) {
    throw kernelError("ConvTransposeError", `into must be a ${want.name} (y is ${dtype}), got ${into?.constructor?.name ?? typeof into}`, "into");
  }
}

/** A result whose y is in `into` (a launch reads it there itself; other paths are copied), its length checked. */
function intoArray(result, into) {
  if (into === null || result.y.data === into) return result;
  if (into.length !== result.y.data.length) {
    throw kernelError("ConvTransposeError", `into holds ${into.length} values, y has ${result.y.data.length} (shape [${result.y.shape}])`, "into");
  }
  into.set(result.y.data);
  result.y.data = into;
  return result;
}

/** getKernel's `autotune` (false, true, or {store?, budgetMs?}) as app/bridge.py open_kernel takes it: a
 * class instance, so that it reaches Python as a proxy with the store's methods, not converted to a dict. */
class Autotuning {
  constructor(store, budgetMs) { this.store = store; this.budgetMs = budgetMs; }
}
async function autotuning(option) {
  if (!option) return null;
  const given = option === true ? {} : option;
  const store = given.store ? guardedStore(given.store, "autotune's store") : await defaultStore("autotune");
  return new Autotuning(store, given.budgetMs ?? null);
}
// The tuning tables' revision that plans follow (Python's, one for the whole runtime): part of every launch
// key, so that a new table (any kernel's tuneBench) plans afresh instead of replaying launches planned
// under the old one. Read again at every getKernel.
let planning = "";
const replanned = (result) => {
  if (typeof result?.planning === "string") planning = result.planning;
  return result;
};

/**
 * The kernel as a JS function:
 *   kernel({x, w, b?, ...attributes, variant?}, {output?: "cpu" | "gpu", timing?, profile?}) -> {y, meta}
 * Inputs: {data: Float32Array | Uint16Array (float16 bits) | number[], shape, dtype?, constant?} or
 * {buffer: GPUBuffer, shape, dtype?, finite?} on the kernel's device. y: {data, shape, dtype}, or with
 * output "gpu" {buffer, shape, dtype, dispose} that the caller owns (dispose() hands it back for reuse).
 * `device`: the caller's GPUDevice; without it the package opens (and shares) its own. `assets`: the folder
 * (URL) that serves pyodide/ and bundle.zip, when not beside the module (boot.mjs). `weightCacheBytes`: the
 * bound of the GPU memory the kernel keeps for constant arrays and weight GPUBuffers (weight-cache.mjs).
 */
export async function getKernel(id, options = {}) {
  gettingKernels += 1;
  try {
    return await openKernel(id, options);
  } finally {
    gettingKernels -= 1;
  }
}

async function openKernel(id, options) {
  checkOptions(options);
  const { version = 1, revision = null, limits = null, device = null, assets = null, autotune = false,
          weightCacheBytes = WEIGHT_CACHE_BYTES, planStore = null, adapt = true } = options;
  if (typeof adapt !== "boolean") {
    throw kernelError("ConvTransposeError", `adapt must be true or false, got ${JSON.stringify(adapt)}`, "adapt");
  }
  if (typeof weightCacheBytes !== "number" || !Number.isFinite(weightCacheBytes) || weightCacheBytes < 0) {
    throw kernelError("ConvTransposeError", `weightCacheBytes must be a finite number of bytes >= 0, got ${String(weightCacheBytes)}`,
      "weightCacheBytes");
  }
  // a first call plans without numpy (a snapshot's start loads it after), unless autotuning times it on drawn data
  const booting = (autotune ? bootApp : bootForFirstCall)(assets !== null ? { assets } : {});
  // Python opens the kernel (checks the id, version, revision and limits; opens or adopts the device)
  const opening = booting.then(async () => callPython("open_kernel", id, version, revision, limits, device,
    await autotuning(autotune)));
  opening.catch(() => {});
  // plans are persisted for the package's own device, planned with no caps and no autotuning
  const persist = planStore !== false && (planStore !== null || storesPlans()) && device === null && limits === null &&
    revision === null && !autotune && id === KERNEL_ID && version === CONTRACT_VERSION;
  const stored = persist ? await storedPlans(planStore) : null;
  const early = stored?.planning != null ? stored : null;
  let pyKernel = null, dtypes = early ? DTYPES : null, exec = early?.exec ?? null, weights = null, pythonUp = false;
  const serial = ++kernels;
  // Work a call sets off and does not wait for (a trial's alternatives planned and compiled, a starter weighed, a
  // stored plan compiling behind its starter, a store's writes): kernel.idle() waits for it.
  const background = new Set();
  const inBackground = (work) => {
    const done = work.catch(() => {}).finally(() => background.delete(done));
    background.add(done);
  };
  /** `work()` on a later turn, after the call's result is out; counted as background work from now. */
  const later = (work) => inBackground(new Promise((resolve) => setTimeout(resolve, 0)).then(work));
  // Launches built from the store, by key, with what Python needs to plan them again: {spec, request, launch}.
  // A key stays here until Python has planned it and the two were compared (verify).
  const unverified = new Map();
  // this kernel's weight cache on the executor it runs on now (a new one on a device reopened after a loss)
  const adopt = (executor) => {
    if (executor !== exec || weights === null) { exec = executor; weights = exec.weightCache(serial, weightCacheBytes); }
  };
  if (early) {
    if (!planning) planning = early.planning;
    adopt(early.exec);
  }
  const python = opening.then(async (opened) => {
    pyKernel = opened;
    if (early && opened.planning !== early.planning) {
      console.warn("webgpu-convtranspose: stored plans follow other tuning tables than this session's; planned afresh");
    }
    replanned({ planning: opened.planning });
    dtypes = inputDtypes((await booting).manifest);
    adopt(await callPython("executor", opened));
    pythonUp = true;
    for (const key of unverified.keys()) inBackground(verify(key));  // a call of the key meets the error
    return opened;
  });
  python.catch(() => {});
  if (!early) await python;
  const shared = () => persist && stored && sharedDevice()?.promise;

  // Starters serving a key while its plan compiles (a stored one: startWith) or is planned (startQuick): the launch,
  // or the promise of it
  const starting = new Map();
  const startersAsked = new Set();  // keys whose starter was weighed (once per kernel)

  /** A stored starter's launch, compiled and built, serving `key`'s calls while the stored plan `spec` compiles
   * behind it; once that is built it takes the key (unverified, as fromStore's launches), and the starter goes. */
  async function startWith(key, spec, starter, calibration, call, finite) {
    const started = performance.now();
    const quick = await timedPhase("compile a stored starter", () => runnable(starter.spec, exec));
    if (performance.now() - started + starter.runMs >= (1 - STARTER.margin) * starter.mainMs) {
      // measured slower to a first result than its plan on this adapter: this call uses it, the next visits not
      inBackground(stored.record.dropStarter(stored.adapter, signatureOf(key)));
    }
    const launch = exec.buildLaunch(quick, `${key}|starter`);
    launch.starterOf = spec.variant;
    starting.set(key, launch);
    inBackground((async () => {
      try {
        const made = await timedPhase("compile a stored plan", () => runnable(spec, exec));
        if (!exec.cached(key) && !pythonUp) {
          const main = exec.buildLaunch(made, key);
          main.storedKey = key;
          unverified.set(key, { spec, launch: main, calibration, request: requestMeta(call.tensors, call.attributes, call.variant, finite) });
        }
      } catch (err) {
        warnStore(stored.record.name, `a stored plan did not build (${err?.message ?? err}); dropped, planned afresh`);
        await stored.record.drop(stored.adapter, signatureOf(key));
      } finally {
        starting.delete(key);
        exec.evict(`${key}|starter`);  // destroyed once no call runs it
      }
    })());
    return launch;
  }

  /** After a signature's first result, where its plan compiled slowly or no starter of its kind is stored yet: the
   * starter planned and compiled behind the calls, and stored beside the plan when its predicted run beats the plan's
   * compile and run by STARTER.margin (a revisit that measures its compile too long drops it: startWith). */
  async function weighStarter(key, request, main) {
    const mainCompileMs = exec.compileMs(main.spec);
    if (startersAsked.has(key)) return;
    startersAsked.add(key);
    const context = await persisted();
    const kind = [GATHER[request.x.shape.length - 2], request.x.dtype, request.b !== undefined];
    if (!context || (mainCompileMs < STARTER.compileMs && await stored.record.starterPipeline(context.adapter, planning, ...kind))) return;
    const out = await callPython("plan_launch", pyKernel, { ...request, starter: main.variant }, `${key}|starter`);
    if (!out.launch) return;
    // its own compile is measured where it counts, on the revisit (startWith): here it queues behind adaptation's
    // candidates and the runtime's load (1.8 s read against 0.04-0.06 s alone)
    const runMs = out.starter.predicted_ms, mainMs = mainCompileMs + out.starter.chosen_ms;
    if (runMs < (1 - STARTER.margin) * mainMs) {
      await stored.record.keepStarter(context, signatureOf(key), storable(main.spec, exec.sources),
        storable(out.launch.spec, exec.sources), mainMs, runMs);
    }
    exec.evict(`${key}|starter`);
  }

  /** A stored launch for a key, checked against the call and the device and rebuilt on this executor; null
   * when Python is up (it plans), or there is none, or it fails a check or does not build (then dropped). */
  async function fromStore(key, finite, call) {
    if (pythonUp || !stored?.adapter || exec !== stored.exec) return null;
    if (starting.has(key)) return starting.get(key);
    const signature = signatureOf(key);
    const request = { tensors: call.tensors, attributes: call.attributes };
    const spec = await stored.record.checkedSpec(stored.adapter, planning, signature, request, exec.device.limits);
    const calibration = stored.record.calibratedAs(stored.adapter, signature);
    if (!spec || (calibration && !adapt)) return null;  // adapt: false runs no plan a calibration made
    // adapt: false runs the plan alone (a starter rounds otherwise)
    const starter = adapt ? await stored.record.checkedStarter(stored.adapter, planning, signature, request, exec.device.limits) : null;
    try {
      if (starter) return await startWith(key, spec, starter, calibration, call, finite);
      const made = await timedPhase("compile a stored plan", () => runnable(spec, exec));
      if (exec.cached(key)) return exec.cached(key);
      const launch = exec.buildLaunch(made, key);
      launch.storedKey = key;
      unverified.set(key, { spec, launch, calibration, request: requestMeta(call.tensors, call.attributes, call.variant, finite) });
      return launch;
    } catch (err) {
      warnStore(stored.record.name, `a stored plan did not build (${err?.message ?? err}); dropped, planned afresh`);
      await stored.record.drop(stored.adapter, signature);
      return null;
    }
  }

  /** Python plans a key that ran from the store again: the same plan keeps its launch; another (the stored entry
   * was altered, or planned by other code) replaces it, and its entry, with a warning; a request Python plans no
   * launch for, or refuses, loses both (the next call of the key meets Python's answer). */
  function verify(key) {
    const entry = unverified.get(key);
    entry.verifying ??= (async () => {
      try {
        const calibration = entry.request.variant === null ? await calibrationFor() : null;
        const out = await callPython("plan_launch", pyKernel, { ...entry.request, calibration }, key + VERIFY);
        if (out.launch) {
          const same = JSON.stringify(storable(out.launch.spec, exec.sources)) === JSON.stringify(entry.spec);
          if (same) {
            exec.evict(key + VERIFY);
          } else {
            // planned with another calibration than this kernel's (adaptation measured more since): no fault
            if (entry.calibration === (calibration?.tag ?? null)) {
              warnStore(stored.record.name, `a stored plan differs from the package's own plan for it (variant ` +
                `${entry.spec.variant} stored, ${out.launch.spec.variant} planned); replaced`);
            }
            exec.rekey(key + VERIFY, key);
            await keep(key, out.launch);
          }
        } else {
          warnStore(stored.record.name, "a stored plan is for a request the package runs without one; dropped");
          exec.evict(key);
          await stored.record.drop(stored.adapter, signatureOf(key));
        }
      } catch (err) {
        exec.evict(key);
        await stored.record.drop(stored.adapter, signatureOf(key));
        if (err?.name !== "ConvTransposeError") throw err;
        warnStore(stored.record.name, `a stored plan is for a request the package refuses (${err.message}); dropped`);
      } finally {
        unverified.delete(key);
      }
    })();
    return entry.verifying;
  }

  /** A stored launch that failed on the GPU: it and its entry go, and the call is planned by Python. */
  async function storedRunFailed(key, err) {
    warnStore(stored.record.name, `a stored plan failed to run (${err?.message ?? err}); dropped, planned afresh`);
    unverified.delete(key);
    exec.evict(key);
    await stored.record.drop(stored.adapter, signatureOf(key));
  }

  /** Where this kernel's plans persist: {adapter, planning, features, limitNames} of the shared device, or null. */
  async function persisted() {
    const device = shared();
    if (!device || !exec.sources) return null;
    const opened = await device;
    if (opened.device !== exec.device) return null;
    const { features, limitNames } = sharedDevice();
    stored.adapter ??= adapterKey(opened);
    stored.exec ??= exec;
    return { adapter: adapterKey(opened), planning, features, limitNames };
  }

  /** After Python planned a launch: stored for the next visit (the shared device's, under the planning in use). */
  async function keep(key, launch) {
    const context = launch?.spec ? await persisted() : null;
    if (context) await stored.record.keep(context, signatureOf(key), storable(launch.spec, exec.sources), (await calibrationFor())?.tag);
  }

  /** What this kernel plans with of what adaptation measured on this adapter (app/calibration.py), read once
   * Python is up: {source, rates, tag} or null (none yet, or `adapt: false`, which neither applies nor records it). */
  let calibrating = null;
  function calibrationFor() {
    if (calibrating?.planning !== planning) {
      calibrating = { planning, promise: (async () => {
        const context = adapt ? await persisted() : null;
        const rates = context ? stored.record.calibration(context.adapter, planning) : calibrated(calibrationHere.get(planning) ?? {}, []);
        if (!adapt || !Object.keys(rates).length) return null;
        const source = context ? stored.record.name : "this process's adaptation";
        return { source, rates, tag: (await sha256(JSON.stringify(rates))).slice(0, 16) };
      })() };
    }
    return calibrating.promise;
  }

  /** What adaptation learned for a signature: this page's, else the plan record's (a revisit's); or null. */
  function learnedFor(key) {
    const signature = signatureOf(key);
    return learnedHere.get(`${planning}|${signature}`) ??
      (stored?.adapter ? stored.record.learned(stored.adapter, planning, signature) : null);
  }

  /** A trial is over: its winner serves the key from now on (planned by Python as the planner's measured step, so
   * that Python plans the same on a revisit and the stored entry agrees), the other candidates' launches go, and
   * the choice is kept for the page and, where plans persist, the next visits. */
  async function settle(key, trial) {
    trial.alternatives.forEach((_, i) => exec.evict(`${key}|alt${i}`));
    await calibrate(trial);
    const w = trial.winner, report = trial.report();
    const ms = (c) => `${c.ms?.toPrecision(3)} ms`;
    const why = w === trial.first
      ? `adapted on this adapter: the first pick held against ${trial.alternatives.length} candidates timed on this signature's calls (${ms(report.first)})`
      : `adapted on this adapter: the fastest of ${trial.alternatives.length + 1} candidates timed on this signature's calls ` +
        `(${ms(report.chosen)}; the first pick ${trial.first.variant} ${ms(report.first)})`;
    const choice = { variant: w.variant, params: w.params ?? null, why };
    learnedHere.set(`${planning}|${signatureOf(key)}`, choice);
    const out = await callPython("plan_launch", pyKernel, { ...trial.request, learned: choice }, `${key}|learned`);
    if (!out.launch) return;
    exec.rekey(`${key}|learned`, key);
    await keep(key, out.launch);
    const context = await persisted();
    if (context) await stored.record.learn(context, signatureOf(key), choice);
  }

  /** What a trial measured of the cost model calibrates this adapter for the kernels opened from now on. */
  async function calibrate(trial) {
    const samples = trial.samples();
    calibrationHere.set(planning, calibrated(calibrationHere.get(planning) ?? {}, samples));
    const measured = samples.length ? await persisted() : null;
    if (measured) await stored.record.calibrate(measured, samples);
  }

  /** Plans a trial's alternatives while the first pick serves the calls, all at once (their shaders compile side
   * by side on the driver's threads), each explored as soon as it is ready. */
  async function planAlternatives(key, trial) {
    await Promise.all(trial.alternatives.map(async (alt, i) => {
      try {
        const started = performance.now();
        const out = await callPython("plan_launch", pyKernel, { ...trial.request, variant: alt.variant, params: alt.params },
          `${key}|alt${i}`);
        if (trial.released) exec.evict(`${key}|alt${i}`);  // settled (or orphaned) while it compiled
        else if (out.launch) trial.ready(alt, out.launch, performance.now() - started);
        else trial.unplannable(alt, "no single launch");
      } catch (err) {
        trial.unplannable(alt, err?.message ?? String(err));
      }
    }));
    if (trial.done) await settleOnce(key, trial);
  }

  function settleOnce(key, trial) {
    trial.settled ??= settle(key, trial).catch((err) => console.warn(`webgpu-convtranspose: adaptation did not settle (${err?.message ?? err})`));
    return trial.settled;
  }

  /** A call of a signature under trial (`launch`: its first pick's): the candidate the trial picks, timed. */
  async function explore(trial, call, launch) {
    let candidate = trial.pick();
    // an alternative whose launch the executor let go (its LRU, with many signatures under trial at once) would run
    // destroyed: it stops, and the trial picks again
    while (!trial.released && candidate !== trial.first &&
           exec.launches.get(`${trial.key}|alt${trial.alternatives.indexOf(candidate)}`) !== candidate.launch) {
      trial.stop(candidate, "its launch left the executor's cache");
      candidate = trial.pick();
    }
    if (trial.released) {  // that ended it
      const out = await launch.run(call.tensors, call);
      await settleOnce(trial.key, trial);
      return out;
    }
    const started = performance.now();
    const out = await candidate.launch.run(call.tensors, { ...call, timing: true });
    trial.record(candidate, out.meta.gpu_ms ?? performance.now() - started);
    if (candidate !== trial.first) {
      out.meta.reason = `adapting on this adapter: a candidate ran this call (timed, or the fastest so far; the first pick: ${trial.first.variant})`;
    }
    if (trial.planningAt === null && trial.calls >= 2) {
      // a signature called once never pays for its alternatives (Python planning and compiling on the page's
      // thread); from its second call they are planned, after this call's result is out
      if (trial.begin().length) later(() => planAlternatives(trial.key, trial));
      // none within the bound, nothing to time: the first pick's time still calibrates its rate key
      else await calibrate(trial);
    }
    if (trial.done && trial.alternatives.length) await settleOnce(trial.key, trial);
    return out;
  }
  const trials = [];  // every trial this kernel ran, for adaptations()
  /** A trial whose first pick's launch the executor no longer holds (pushed out of its LRU, replaced) never runs
   * again: it lets go of its launches, and its alternatives' go from the executor, as a settled trial's do. */
  const releaseOrphans = () => {
    for (const t of trials) {
      if (t.released || exec.launches.get(t.key) === t.first.launch) continue;
      t.alternatives.forEach((_, i) => exec.evict(`${t.key}|alt${i}`));
      t.release();
    }
  };
  const pending = new Map();  // signature -> the Python planning under way (concurrent first calls share it)
  const special = new Map();  // signatures that never get a launch: empty outputs, requests split into pieces

  /** Python plans `key`, once however many calls wait on it: {launch, ...} kept in the store and weighed for a
   * starter (weighStarter), with a trial where adaptation has candidates; or {empty}/{pieces}, kept in `special`. */
  function planned(key, request) {
    if (!pending.has(key)) {
      const variant = request.variant;
      const job = callPython("plan_launch", pyKernel, { ...request, learned: learnedFor(key),
        // the trial bounds the pool by the first pick's measured time (Trial.begin)
        adapt: adapt && variant === null ? { count: ADAPT.pool } : null }, key)
        .then(async (out) => {
          if (out.executor) adopt(out.executor);
          if (!out.launch) {
            special.set(key, out);
            return out;
          }
          if (out.alternatives?.length) {
            const trial = new Trial({ variant: out.launch.variant, params: null, launch: out.launch, ...out.predicted },
              out.alternatives);
            Object.assign(trial, { key, request });
            releaseOrphans();
            trials.push(trial);
            out.launch.trial = trial;
          }
          // stored before the first result returns (a few ms beside planning), so that a process that exits then keeps it
          await keep(key, out.launch).catch((err) => console.warn(`webgpu-convtranspose: a plan was not stored (${err?.message ?? err})`));
          if (adapt && variant === null && shared()) {
            // once the runtime's rest has loaded: its planning then holds back no first call
            later(() => bootApp().then(() => weighStarter(key, request, out.launch))
              .catch((err) => console.warn(`webgpu-convtranspose: no starter was made (${err?.message ?? err})`)));
          }
          return out;
        })
        .finally(() => pending.delete(key));
      pending.set(key, job);
    }
    return pending.get(key);
  }

  /** A signature seen for the first time on an adapter whose plans compile slowly (a starter is stored beside one of
   * them): its starter planned and compiled, serving the calls while Python plans and compiles the plan itself
   * behind them; null where the signature has none (its plan is the gather kernel, or it is empty or split). */
  async function startQuick(key, request) {
    const made = (async () => {
      const out = await callPython("plan_launch", pyKernel, { ...request, learned: learnedFor(key), starter: true },
        `${key}|starter`);
      if (!out.launch) return null;
      out.launch.starterOf = out.starter.chosen;
      out.launch.timings = out.timings;
      // after its first result (runStarter): planned beside that call, the plan held the thread 0.1-0.25 s
      out.launch.behind = () => planned(key, request)
        .finally(() => { starting.delete(key); exec.evict(`${key}|starter`); })  // destroyed once no call runs it
        .catch(() => {});  // a call of the key meets the error
      return out.launch;
    })();
    starting.set(key, made);
    try {
      return await made;
    } finally {
      if (!(await made.catch(() => null))) starting.delete(key);
    }
  }

  /** A signature seen for the first time on a revisit: its gather kernel judged and planned here (quick-start.mjs),
   * from the WGSL of a stored starter of its rank, dtype and bias, serving its calls from before Python is up; after
   * its first result Python starts, plans the same kernel (another drops the stored source, with a warning) and then
   * the signature's plan, which takes over. null where the judge is unsure, no starter of its kind is stored, or its
   * gather run is predicted past STARTER.quickMs (then Python plans it). */
  async function startBeforePython(key, tensors, attributes, finite) {
    if (starting.has(key)) return starting.get(key);
    const geom = quickGeometry(tensors, attributes);
    const found = geom && await stored.record.starterPipeline(stored.adapter, planning, GATHER[geom.rank], geom.dtype, geom.hasBias);
    const spec = found && quickSpec(geom, found.pipeline, found.checkWorkgroup, exec.device.limits.maxComputeWorkgroupsPerDimension);
    // checked as a stored plan is (buffers past the device's limits run as pieces: Python's), its run predicted from
    // the stored starter's, scaled by their work
    if (!spec || pythonUp || storedSpecFault(spec, { tensors, attributes }, exec.device.limits) !== null ||
        found.runMs * gatherWork(spec) / found.work > STARTER.quickMs) return null;
    const made = (async () => {
      const launch = exec.buildLaunch(await timedPhase("compile a quick starter", () => runnable(spec, exec)), `${key}|starter`);
      launch.starterOf = null;
      launch.behind = async () => {
        firstStoredRun?.release();
        try {
          await python;
          const forced = await callPython("plan_launch", pyKernel, requestMeta(tensors, attributes, spec.variant, finite), `${key}|quick`);
          exec.evict(`${key}|quick`);
          if (!forced.launch || !sameWork(storable(forced.launch.spec, exec.sources), spec)) {
            warnStore(stored.record.name, "a stored starter's kernel differs from the package's own; dropped");
            await stored.record.dropStarter(stored.adapter, found.signature);
            starting.delete(key);
            exec.evict(`${key}|starter`);
          }
          const calibration = await calibrationFor();
          await planned(key, { ...requestMeta(tensors, attributes, null, finite), calibration });
        } catch {
          // a call of the key meets the error (Python's judge refuses what this one would not have served)
        } finally {
          starting.delete(key);
          exec.evict(`${key}|starter`);  // destroyed once no call runs it
        }
      };
      return launch;
    })();
    starting.set(key, made);
    try {
      return await made;
    } catch {
      starting.delete(key);
      return null;  // it did not build: Python plans the signature
    }
  }

  async function plan(key, tensors, attributes, variant, finite, profile) {
    if (!pythonUp && adapt && variant === null && stored?.adapter && exec === stored.exec) {
      const quick = await startBeforePython(key, tensors, attributes, finite);
      if (quick) return quick;
    }
    firstStoredRun?.release();  // a call the store cannot serve waits for Python: it starts now
    await python;
    if (starting.has(key)) return starting.get(key);
    const calibration = variant === null ? await calibrationFor() : null;
    const request = { ...requestMeta(tensors, attributes, variant, finite), calibration };
    if (adapt && variant === null && !pending.has(key) && stored?.adapter && stored.record.slowCompiles(stored.adapter, planning, STARTER.compileMs)) {
      const quick = await startQuick(key, request);
      if (quick) {
        if (profile) Object.assign(profile, { python: quick.timings });
        return quick;
      }
    }
    const out = await planned(key, request);
    if (profile) Object.assign(profile, { python: out.timings });
    return out.launch ?? null;
  }

  /** What runs in Python, on numpy arrays: requests split into pieces past the device's limits, and float16
   * given as plain numbers where JavaScript has no Float16Array. Neither takes GPU tensors. */
  async function slowPath(inputs, output, pieces = null) {
    await python;
    const resident = INPUTS.find((n) => inputs[n]?.buffer !== undefined);
    if (resident || output === "gpu") {
      const why = pieces ? `this request runs as ${pieces} pieces (past the device's limits)`
        : "float16 data given as plain numbers is converted by numpy here (no Float16Array): pass Uint16Array bits";
      throw kernelError("ConvTransposeError", `${why}; GPU-resident tensors and output "gpu" need a request ` +
        "that runs on the GPU in one piece", resident ?? "output");
    }
    const result = await callPython("call", pyKernel, pythonRequest(inputs));
    result.y.data = typedArray(result.y.data, result.y.dtype);
    return result;
  }

  const kernel = async (inputs, { output = "cpu", timing = false, profile = null, into = null } = {}) => {
    if (profile) profile.start = performance.now();
    if (inputs === null || typeof inputs !== "object") {
      throw kernelError("ConvTransposeError", "kernel(inputs): inputs must be an object {x, w, b?, ...attributes}", "inputs");
    }
    if (output !== "cpu" && output !== "gpu") {
      throw kernelError("ConvTransposeError", `output must be "cpu" or "gpu", got ${JSON.stringify(output)}`, "output");
    }
    const tensors = {}, attributes = {};
    let slow = false;
    requestAttributes(inputs, attributes);
    for (const name of INPUTS) {
      if (inputs[name] == null) {
        if (name !== "b") throw kernelError("ConvTransposeError", `input '${name}' is missing`, name);
        continue;
      }
      const t = tensor(name, inputs[name], dtypes);
      if (t === null) slow = true;
      else tensors[name] = t;
    }
    if (into !== null) checkInto(into, output, tensors.x?.dtype);
    if (slow) return intoArray(await slowPath(inputs, output), into);
    const variant = inputs.variant ?? null;
    // the signature, built by hand (a repeat call's cost is mostly here and in the executor)
    let key = `${serial}|${planning}|${variant === null ? "null" : JSON.stringify(variant)}`;
    for (const name of INPUTS) {
      const t = tensors[name];
      key += t ? `|${t.dtype}[${t.shape}]` : "|";
    }
    key += `|${JSON.stringify(attributes)}`;
    if (exec.lost) adopt(await callPython("executor", await python));  // reopened after a loss (or the loss reported)
    if (profile) profile.checked = performance.now();
    // one object per call: runFinite hands it to the policy below, and Launch.run reads its options from it
    try {
      return intoArray(await runFinite(key, { tensors, attributes, variant, inputs, output, timing, profile, weights, into },
        policy), into);
    } finally {
      firstStoredRun?.release();  // a revisit's first result is out: Python may start
    }
  };

  /** A call on a starter, its meta saying so; the first one's end starts what it waits behind (startQuick). */
  async function runStarter(launch, call) {
    try {
      const out = await launch.run(call.tensors, call);
      out.meta.reason = launch.starterOf === null ? "the quick first kernel while Python starts and plans this signature"
        : `the quick first kernel while this signature's plan (${launch.starterOf}) compiles`;
      return out;
    } finally {
      const behind = launch.behind;
      launch.behind = null;
      if (behind) later(behind);
    }
  }

  // runFinite's side of a call (finite.mjs), made once per kernel
  const policy = {
    // a launch from the store is not used past Python's start until Python has planned its key again
    cached: (k) => pythonUp && unverified.has(k) ? undefined : exec.cached(k),
    launchFor: async (k, finite, call) => {
      if (pythonUp && unverified.has(k)) await verify(k);
      return exec.cached(k) ?? (special.has(k) ? null : await fromStore(k, finite, call) ??
        await plan(k, call.tensors, call.attributes, call.variant, finite, call.profile));
    },
    run: async (launch, call) => {
      // explored on calls that read y back, whose timestamps ride along: a resident call that did not wait
      // would have to (output "gpu" runs the first pick)
      if (launch.trial && !launch.trial.released && call.output === "cpu") return explore(launch.trial, call, launch);
      if (launch.starterOf !== undefined) return runStarter(launch, call);
      const key = launch.storedKey;
      if (key === undefined || !unverified.has(key)) return launch.run(call.tensors, call);
      try {
        return await launch.run(call.tensors, call);
      } catch (err) {
        if (err?.name !== "GpuError") throw err;
        await storedRunFailed(key, err);
        const again = await plan(key, call.tensors, call.attributes, call.variant, !key.endsWith(EXACT), call.profile);
        return again ? again.run(call.tensors, call) : policy.without(key, call);
      }
    },
    without: (k, call) => {
      const info = special.get(k);
      if (!info.empty) return slowPath(call.inputs, call.output, info.pieces);
      const { y_shape: shape, dtype, meta } = info.empty;
      const y = call.output === "gpu"
        ? { buffer: exec.upload(new Uint8Array(4)), shape, dtype }
        : { data: new TYPED_ARRAYS[dtype](0), shape, dtype };
      return { y, meta: { ...meta } };
    },
    planned: (call) => { if (call.profile) call.profile.planned = performance.now(); },
  };

  /** Resolves once Python has opened the kernel and numpy has loaded: what device(), validate(), reference() and
   * the runners need (calls never wait for it: a first visit loads numpy after its first call has been planned). */
  let ready = null;  // made when asked for: it loads the runtime's rest, which a first call does without
  Object.defineProperty(kernel, "ready", { get: () => (ready ??= python.then(() => bootApp()).then(() => true)) });
  kernel.device = () => callPythonNow("device_info", pyKernel);
  /** The GPU memory the executor holds (launches, weight caches), its counters, and this kernel's weight cache. */
  kernel.memory = () => exec.memory(serial);
  /** What adaptation did per signature this kernel planned: first pick, candidates, chosen, calls, cost. */
  kernel.adaptations = () => trials.map((t) => ({ signature: signatureOf(t.key), ...t.report() }));
  /** What this kernel plans with of adaptation's calibration on this adapter: {source, rates, tag} or null. */
  kernel.calibration = () => python.then(calibrationFor);
  /** The GPUDevice the kernel runs on (the caller's, or the one the package opened). */
  kernel.gpuDevice = () => exec.device;
  /** Resolves once nothing this kernel set off runs on: no background work (see `background`), no planning, no
   * pipeline compiling on Dawn's threads, the GPU's queue drained. Node's process.exit with a compile under way
   * crashed Dawn (SIGSEGV in its SPIR-V validator as exit tore down its tables: 2 runs of 27 of
   * tests/calibration_probe.mjs). */
  kernel.idle = async () => {
    let work;
    while ((work = [...background, ...pending.values(), ...exec.compiling]).length) await Promise.allSettled(work);
    await exec.device.queue.onSubmittedWorkDone();
  };
  /** A typed array or {data, shape, dtype?} copied once into a GPU buffer of this kernel's device: {buffer, shape, dtype}. */
  kernel.upload = (t) => {
    const checked = tensor("upload", t, dtypes);
    if (!checked?.data) throw kernelError("ConvTransposeError", "upload takes {data: typed array, shape, dtype?}", "upload");
    return { buffer: exec.upload(checked.data), shape: checked.shape, dtype: checked.dtype };
  };
  /** After rewriting, in place, a constant weight array or a weight GPUBuffer (or a tensor holding one): its
   * GPU copy and prepared layouts are dropped (made again on its next call), its finite status scanned again. */
  kernel.forget = (given) => {
    const key = ArrayBuffer.isView(given) ? given : given?.buffer ?? given?.data ?? given;
    forgetFinite(key);
    return weights.forget(key);
  };
  kernel.reference = (inputs) => {
    const y = callPythonNow("reference", pythonRequest(inputs));
    y.data = typedArray(y.data, "float64");
    return y;
  };
  /** {} when the request would run, else {error, field}: every refusal, found without GPU work. */
  kernel.validate = (inputs) => callPythonNow("validate", pyKernel, pythonRequest(inputs));
  kernel.loadCases = (text) => callPythonNow("load_cases", text);
  kernel.runCase = (index, variant = null) => callPython("run_loaded_case", pyKernel, index, variant);
  kernel.loadBench = (text, tier) => callPythonNow("load_bench", text, tier);
  kernel.runBenchCase = (index, { runs = 5, warmup = 1 } = {}) => callPython("run_bench_case", pyKernel, index, runs, warmup);
  // Tunes loaded bench cases on this adapter and applies the table to this page's session.
  kernel.tuneBench = (benchText, indices, { runs = 3, progress = () => {} } = {}) =>
    callPython("tune_loaded", pyKernel, benchText, indices, runs, progress).then(replanned);
  return kernel;
}
