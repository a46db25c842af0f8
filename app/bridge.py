"""The one way from JavaScript into Python: every function here is called by name through web/runtime/python.mjs's
`callPython` (the pages, the Node host, the bench, tune and device runners all come in this way).

JS objects arrive as JsProxy (or as dicts and lists, converted by the caller) and are turned into Python
data with their own `to_py()`; results go back as plain data (dicts of bytes, lists and numbers) and GPU
objects as themselves. The package's exceptions go back as {"__error__": {name, message, field,
traceback}}, which the JS side throws as an Error with that name. No `js` import here.

Launch keys: JS caches launches under its own key (shapes, dtypes, attributes, forced variant,
finiteness) and hands it to `plan_launch`. A plan also depends on the tuning tables in use, so the key must
include `planning`: the string revision of those tables, read from the kernel object `open_kernel`
returns (`kernel.planning`) and returned again by `tune_loaded` and `tune`, whose tables may change it.
"""
from __future__ import annotations

import functools
import inspect
import io
import time
import traceback
import warnings

from . import bench, finite, get_kernel
from .cases import parse_case_file, run_case
from .errors import ConvTransposeError, GpuError, KernelNotFoundError
from .lazy_numpy import np

INPUTS = ("x", "w", "b")
_cases: list[dict] = []
_bench_cases: list[dict] = []


def _plain(value):
    return value.to_py() if hasattr(value, "to_py") else value


def _error(exc: Exception) -> dict:
    return {"__error__": {"name": type(exc).__name__, "message": str(exc).splitlines()[0] if str(exc) else "",
                          "field": getattr(exc, "field", None),
                          "traceback": "".join(traceback.format_exception(exc))}}


KNOWN = (ConvTransposeError, GpuError, KernelNotFoundError)


def entry(fn):
    """A bridge function: the package's exceptions come back as data for JS to throw with their names."""
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def wrapped(*args):
            try:
                return await fn(*args)
            except KNOWN as exc:
                return _error(exc)
    else:
        @functools.wraps(fn)
        def wrapped(*args):
            try:
                return fn(*args)
            except KNOWN as exc:
                return _error(exc)
    return wrapped


def _typed(tensor: dict) -> dict:
    """A JS typed array (a memoryview that keeps its element format) as a numpy array of that element type, so that
    app.tensors.as_array refuses one whose type is not the dtype's, as the JS call's `tensor` does: read as raw
    bytes, an Int32Array passed for float32. Float16 travels as its bits (a Uint16Array; tensors.mjs pythonRequest
    hands a Float16Array over as one)."""
    data = tensor.get("data")
    if isinstance(data, memoryview):
        array = np.asarray(data)
        bits = tensor.get("dtype") == "float16" and array.dtype == np.uint16
        tensor["data"] = array.view(np.float16) if bits else array
    return tensor


def _request_parts(request) -> tuple[dict, str | None, dict]:
    """A JS request -> (input tensors, forced variant or None, attributes)."""
    request = _plain(request)
    inputs = {name: _typed(dict(request.pop(name))) for name in INPUTS if request.get(name) is not None}
    request.pop("b", None)
    variant = request.pop("variant", None)
    return inputs, variant, request


@entry
async def open_kernel(kernel_id: str, version: int, revision=None, limits=None, device=None, autotune=None):
    """The kernel (app/kernel.py ConvTransposeKernel) as a Python object: JS calls it through this module and
    reads `kernel.planning` (the tuning tables' revision, a string) into every launch key. autotune: null, or
    {store (JS object with async get/set), budgetMs}."""
    options = {}
    if autotune is not None:
        options = {"autotune": True, "autotune_store": autotune.store,
                   "autotune_budget_ms": _plain(getattr(autotune, "budgetMs", None))}
    return await get_kernel(kernel_id, version=version, revision=revision, limits=_plain(limits), device=device,
                            **options)


@entry
async def executor(kernel):
    """The executor (web/runtime/executor.mjs) of the kernel's live device: JS runs cached launches on it."""
    return (await kernel.device.current()).executor


@entry
async def plan_launch(kernel, request, key: str) -> dict:
    """A signature's first call from JS: validate the shapes and attributes, plan, render and compile,
    and leave the launch in the executor under `key`. request: {x: {shape, dtype}, w, b?, attributes,
    variant, finite, params?, learned?, adapt?, calibration?, starter?}: `params` forced with `variant` (a candidate
    adaptation times); `learned` {variant, params, why}: the choice adaptation measured fastest for the signature on
    this adapter, taken as the planner's measured step; `adapt` {count}: return that many next-best candidates
    (planner.alternatives) beside a plan of the planner's own, and what the model predicts of that plan
    (`predicted`: {key, model_ms}); `calibration` {source, rates}: what adaptation measured of the cost model on
    this adapter (app/calibration.py; `source` names the store in the warnings for what is dropped); `starter`: the
    variant of the signature's plan (true: the one the planner would choose), for which the quick first kernel is
    planned instead (planner.starter: returned as `starter`, None where there is none; kernel.mjs stores it where that
    plan compiles slowly, and runs it first where this adapter's plans do). `key` includes
    the kernel's `planning`. Returns {launch, alternatives?, predicted?} or, for requests that get none, {empty:
    {...}} (the output is empty) or {pieces: n} (split past the device's limits: JS runs those through `call`); plus
    Python's timings."""
    from . import calibration, planner
    from .shapes import infer

    started = time.perf_counter()
    request = _plain(request)
    tensors = {n: request[n] for n in INPUTS if request.get(n) is not None}
    geom = infer(tensors["x"]["shape"], tensors["w"]["shape"], tensors["b"]["shape"] if "b" in tensors else None,
                 request["attributes"], {n: t["dtype"] for n, t in tensors.items()})
    geom = finite.marked(geom, request["finite"])
    validated = time.perf_counter()
    gpu = await kernel.device.current()
    learned = _learned(request.get("learned"))
    given = request.get("calibration")
    calibrated, dropped = calibration.of_request(given.get("rates") if isinstance(given, dict) else None)
    for why in dropped:
        warnings.warn(f"webgpu-convtranspose: {str(given.get('source'))[:200]}: {why}", stacklevel=2)
    variant, starter = request["variant"], None
    if request.get("starter") is not None:  # the quick first kernel beside the variant named (planner.starter)
        chosen = request["starter"]  # true: beside the plan the planner would make (not made here)
        starter = planner.starter(geom, kernel.device.caps, None if chosen is True else str(chosen), calibrated)
        if starter is None:
            return {"timings": {}, "starter": None}
        variant = starter["variant"]
    made, pieces = await kernel.launch_for(geom, variant, key, params=request.get("params"),
                                           measured=learned, calibration=calibrated)
    timings = {"validate_ms": (validated - started) * 1000, "plan_render_compile_ms": (time.perf_counter() - validated) * 1000}
    out = {"timings": timings, "executor": gpu.executor}
    if starter is not None:
        return out | {"launch": made, "starter": starter}
    if made is not None:
        adapt = request.get("adapt")
        chosen = pieces[0][1] if pieces else None
        if adapt and chosen is not None and request["variant"] is None and kernel.autotuner is None and \
                not (learned and chosen.reason == learned[1]):
            out["alternatives"] = planner.alternatives(geom, kernel.device.caps, chosen, int(adapt["count"]),
                                                       calibration=calibrated)
            out["predicted"] = planner.prediction(geom, kernel.device.caps, chosen, calibrated)
        return out | {"launch": made}
    plan = pieces[0][1]
    if geom.y_size == 0:
        return out | {"empty": {"y_shape": list(geom.y_shape), "dtype": geom.dtype,
                                "meta": {"variant": "none (empty output)", "reason": plan.reason, "gpu_ms": None,
                                         "y_shape": list(geom.y_shape), "pieces": 1}}}
    return out | {"pieces": len(pieces)}


def _learned(given) -> tuple | None:
    """A learned choice as the planner's measured step, (Candidate, why), or None. It comes from a store
    (web/runtime/adapt.mjs): anything but a variant name and integer params is ignored, and the planner takes it
    only where that variant, with those params, covers the request."""
    from . import planner
    from .variants import VARIANTS

    if not isinstance(given, dict) or given.get("variant") not in VARIANTS or not isinstance(given.get("why"), str):
        return None
    params = given.get("params")
    if params is not None and not (isinstance(params, dict) and all(
            isinstance(k, str) and isinstance(v, int) for k, v in params.items())):
        return None
    return planner.Candidate(given["variant"], params, "learned"), given["why"][:200]


@entry
def device_info(kernel) -> dict:
    """The adapter, its features, the limits the package plans with, and the GPU memory it holds now."""
    caps = kernel.device.caps
    return {"vendor": caps.vendor, "architecture": caps.architecture, "device": caps.device,
            "description": caps.description, "is_fallback": caps.is_fallback,
            "features": sorted(caps.features), "adapter_features": sorted(caps.adapter_features),
            "limits": dict(caps.limits),
            "subgroup_sizes": [caps.subgroup_min_size, caps.subgroup_max_size],
            "subgroup_matrix_configs": list(caps.subgroup_matrix_configs),
            "memory": kernel.device.memory()}


@entry
async def call(kernel, request) -> dict:
    """request: {x: {data, shape[, dtype]}, w: ..., b?: ..., variant?: str, <attribute>: value}."""
    inputs, variant, attributes = _request_parts(request)
    out = await kernel(**inputs, variant=variant, **attributes)
    y = out["y"]
    # y's own bytes, not a copy (tobytes): Pyodide copies them once into JavaScript (app/split.py: memory)
    return {"y": {"data": memoryview(np.ascontiguousarray(y)).cast("B"), "shape": list(y.shape), "dtype": str(y.dtype)},
            "meta": out["meta"]}


@entry
def load_cases(text: str) -> list[str]:
    global _cases
    _cases = parse_case_file(text)
    return [case["name"] for case in _cases]


@entry
async def run_loaded_case(kernel, index: int, variant=None) -> dict:
    return await run_case(kernel, _cases[index], variant or None)


@entry
def reference(request) -> dict:
    """The float64 CPU reference for the page's "check against CPU" button."""
    from .kernel import validate
    from .reference import conv_transpose_reference

    inputs, _, attributes = _request_parts(request)
    geom, arrays = validate(**inputs, **attributes)
    y = conv_transpose_reference(geom, arrays["x"], arrays["w"], arrays.get("b"))
    return {"data": y.astype(np.float64).tobytes(), "shape": list(y.shape)}


@entry
def preview(request) -> dict:
    """Output shape (or the validation error and the field it names) for shapes and attributes alone:
    the page's live preview."""
    from .shapes import infer

    request = _plain(request)
    try:
        geom = infer(request.pop("x_shape"), request.pop("w_shape"), request.pop("b_shape", None), request)
    except ConvTransposeError as exc:
        return {"error": str(exc), "field": exc.field}
    return {"y_shape": list(geom.y_shape)}


@entry
def validate(kernel, request) -> dict:
    """Everything the kernel would refuse, data and forced variant included, without GPU work:
    {} when the request would run, else {"error", "field"}, `field` as the call's refusal names it (an input's
    name, "x", "w" or "b", for its shape, dtype and data alike)."""
    from .kernel import validate as validate_request

    inputs, variant, attributes = _request_parts(request)
    try:
        geom, _ = validate_request(**inputs, **attributes)
    except ConvTransposeError as exc:
        return {"error": str(exc), "field": exc.field}
    try:
        kernel.plan(geom, variant)
    except ConvTransposeError as exc:  # the planner's refusals name "variant", a dtype's device-feature gate "x"
        return {"error": str(exc), "field": exc.field}
    return {}


@entry
def variant_names() -> list[str]:
    return bench.all_variants()


@entry
def random_inputs(shapes, seed: int) -> dict:
    """Seeded uniform [-1, 1) float32 data for x, w and b (drawn in that order), as bytes."""
    shapes = _plain(shapes)
    rng = np.random.default_rng(int(seed))
    return {name: rng.uniform(-1, 1, shapes[name]).astype(np.float32).tobytes()
            for name in INPUTS if shapes.get(name) is not None}


@entry
def load_npy(data) -> dict:
    """A .npy file the user picked -> {data (bytes), shape, dtype, note} or {error}.

    float32 and float16 arrays are kept; other real numeric arrays are converted to float32 (the note
    says so); pickled objects are never loaded."""
    raw = bytes(data.to_py() if hasattr(data, "to_py") else data)
    if not raw.startswith(b"\x93NUMPY"):
        return {"error": "not a .npy file (it does not start with the NumPy magic bytes)"}
    try:
        arr = np.load(io.BytesIO(raw), allow_pickle=False)
    except Exception as exc:  # numpy raises ValueError, OSError or EOFError for a file that is not .npy
        return {"error": f"not a readable .npy file ({type(exc).__name__}: {exc})"}
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "fiub":
        return {"error": f"needs a real numeric array, got dtype {getattr(arr, 'dtype', type(arr).__name__)}"}
    note = ""
    if arr.dtype not in (np.float32, np.float16):
        note = f"converted from {arr.dtype} to float32"
        arr = arr.astype(np.float32)
    return {"data": np.ascontiguousarray(arr).tobytes(), "shape": list(arr.shape), "dtype": str(arr.dtype),
            "note": note}


@entry
def to_npy(data, shape, dtype: str = "float32") -> bytes:
    """The page's output as a .npy file (np.save), for the download link."""
    raw = bytes(data.to_py() if hasattr(data, "to_py") else data)
    out = io.BytesIO()
    np.save(out, np.frombuffer(raw, dtype=dtype).reshape(_plain(shape)))
    return out.getvalue()


@entry
def load_bench(text: str, tier: str) -> list[dict]:
    """bench.json's cases of one tier, kept for run_bench_case; returns what the page's table shows."""
    global _bench_cases
    _bench_cases = bench.load(text, tier)
    return [{"name": c["name"], "model": c.get("model", ""), "x": c["x"], "w": c["w"],
             "attributes": c["attributes"], "bias": bool(c.get("bias"))} for c in _bench_cases]


@entry
async def tune_loaded(kernel, text: str, indices, runs: int = 3, progress=None) -> dict:
    """Tunes the loaded bench cases at `indices` on this adapter (tile grids from bench.json's text, and the
    variant per shape class) and applies the table to this session; returns it for the page to show, with
    `planning`, the tables' new revision (launch keys made before it are stale)."""
    from . import tuner, tuning_tables

    chosen = [_bench_cases[i] for i in _plain(indices)]
    table = await tuner.tune(kernel, chosen, progress=progress, runs=runs, grid_for=tuner.grids(text),
                              choose_variants=True)
    tuning_tables.use_table(table)
    kernel.device.release_caches()  # launches planned under the old table
    return {"table": table, "file": tuning_tables.file_name(kernel.device.caps), "planning": kernel.planning}


@entry
async def run_bench_case(kernel, index: int, runs: int = 5, warmup: int = 1) -> list[dict]:
    """Our kernel (the planner's choice) on one loaded bench case: rows of median/min GPU ms."""
    return await bench.run_case(kernel, _bench_cases[index], None, runs=runs, warmup=warmup)


# -- What the command-line runners call (python -m app bench / tune / device, tools/time_variants.py), in the
# page or the Node host: JSON-able arguments in, JSON-able results out.

async def _kernel():
    from . import contract

    return await get_kernel(contract.kernel_id(), version=contract.contract_version())


@entry
async def report_device() -> dict:
    return device_info(await _kernel())


@entry
async def record_compiles() -> None:
    """From now on the shared kernel records every pipeline it uses (its launches dropped, so each call fetches
    its pipelines), each compiled on this device: by that call, or by an earlier one on the same page or host."""
    (await (await _kernel()).device.current()).record_compiles()


@entry
async def recorded_compiles() -> list[str]:
    """The sha256 of each shader the shared kernel used since record_compiles, every one compiled on this device
    (tests/test_node_host.py and the page's tests check what they are credited with compiling:
    tools/wgsl/credited.py)."""
    return (await (await _kernel()).device.current()).recorded()


@entry
async def run_case_at(index: int, variant=None, params=None) -> dict:
    """Case `index` of the case file last given to load_cases, on the shared kernel (`params`: the forced
    variant's tile params)."""
    return await run_case(await _kernel(), _cases[index], variant or None, _plain(params) or None)


@entry
def bench_cases(text: str, tier: str) -> list[dict]:
    """bench.json's cases of one tier, each with the file's fill spec (what the other runner functions take)."""
    return bench.load(text, tier)


@entry
async def bench_rows(case, variants=None, runs: int = 5, warmup: int = 1, repeats: int = 1,
                     autotune: bool = False) -> list[dict]:
    """One bench case timed: the planner's choice, each listed variant, or every variant ("all"); or the
    choice of a first call with autotuning (`autotune`, with its search's cost)."""
    variants = _plain(variants)
    chosen = bench.distinct_kernels() if variants == "all" else variants
    return await bench.run_case(await _kernel(), _plain(case), chosen, runs=runs, warmup=warmup, repeats=repeats,
                                autotune=bool(autotune))


@entry
def bench_inputs(case) -> dict:
    """A bench case's seeded x, w, b as float32 bytes: every implementation timed on a case gets these."""
    return {name: arr.astype("float32").tobytes() for name, arr in bench.make_inputs(_plain(case)).items()}


@entry
def bench_error(case, y) -> float:
    """Max abs difference of a y (float32 bytes or typed array) from the float64 reference of the case."""
    from .kernel import validate
    from .reference import conv_transpose_reference

    case = _plain(case)
    arrays = bench.make_inputs(case)
    geom, arrays = validate(**arrays, **case["attributes"])
    want = conv_transpose_reference(geom, *(arrays.get(n) for n in INPUTS))
    got = np.frombuffer(bytes(_plain(y)), dtype=np.float32)
    if got.size != want.size:
        return float("inf")
    return float(np.max(np.abs(got.reshape(want.shape) - want))) if want.size else 0.0


@entry
async def tune(text: str, tier: str, names=None, runs: int = 3, repeats: int = 1, choose: bool = False) -> dict:
    """The tuning table of bench.json's `tier` (or its cases `names`) on this adapter, not applied:
    {table, file, lines, planning} (planning: the revision of the tables in use, unchanged)."""
    from . import tuner, tuning_tables

    kernel = await _kernel()
    cases = [c for c in bench.load(text, tier) if not names or c["name"] in _plain(names)]
    lines: list[str] = []
    table = await tuner.tune(kernel, cases, progress=lines.append, runs=runs, grid_for=tuner.grids(text),
                              repeats=repeats, choose_variants=choose)
    return {"table": table, "file": tuning_tables.file_name(kernel.device.caps), "lines": lines,
            "planning": kernel.planning}


@entry
async def time_variants(spec, variants, runs: int = 5) -> list[dict]:
    """tools/time_variants.py: one request (shapes, bias, attributes) timed under each listed variant."""
    from .timing import time_call

    spec, rows = _plain(spec), []
    kernel = await _kernel()
    rng = np.random.default_rng(0)
    inputs = {"x": rng.uniform(-1, 1, spec["x"]).astype(np.float32), "w": rng.uniform(-1, 1, spec["w"]).astype(np.float32)}
    if spec.get("bias"):
        inputs["b"] = rng.uniform(-1, 1, spec["w"][1] * spec.get("attributes", {}).get("group", 1)).astype(np.float32)
    for variant in _plain(variants):
        try:
            row = await time_call(lambda: kernel(**inputs, variant=variant, **spec.get("attributes", {})),
                                  warmup=1, runs=runs)
            rows.append({k: v for k, v in row.items() if k != "y"})
        except (ConvTransposeError, GpuError) as exc:
            rows.append({"variant": variant, "error": str(exc)})
    return rows
