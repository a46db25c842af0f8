"""The GPU layer: the only module that talks to WebGPU (through Pyodide's JS interop).

It opens a device (optional features when offered, limits raised to the adapter's) or adopts the caller's,
renders and compiles a Plan's passes (app/plan.py) once and hands them to the executor (web/runtime/executor.mjs)
as a launch, with the plan's finite-data policy (app/finite.py);
the executor runs every call and every timing. Errors the executor raises come back as GpuError or
ConvTransposeError. Everything above this module is plain Python and numpy.
"""
from __future__ import annotations

import js  # noqa: F401  (Pyodide only; importing this module in CPython fails by design)
from pyodide.ffi import JsException, to_js

from .caps import DEFAULT_LIMITS, DeviceCaps, matrix_configs
from .errors import ConvTransposeError, GpuError
from .lazy_numpy import np
from .plan import Plan, bindings_params
from .render import NONFINITE_CHECK, render, source_digest
from .shapes import ConvGeometry
from .split import buffer_bytes, host_refusal
from .tensors import GpuTensor

OPTIONAL_FEATURES = ("shader-f16", "subgroups", "timestamp-query", "chromium-experimental-subgroup-matrix")
RAISED_LIMITS = tuple(DEFAULT_LIMITS)
TYPED = {"float32": "Float32Array", "float16": "Uint16Array"}
CHECK_WORKGROUP = 256


def _js(value):
    return to_js(value, dict_converter=js.Object.fromEntries)


def _executor_module():
    import convtranspose_executor  # registered by web/runtime/boot.mjs (pyodide.registerJsModule)

    return convtranspose_executor


def python_error(exc: JsException) -> Exception:
    """A JS error from the executor -> the package's exception of the same name (others: GpuError)."""
    name, message = getattr(exc, "name", ""), str(getattr(exc, "message", exc))
    if name == "ConvTransposeError":
        return ConvTransposeError(message, getattr(exc, "field", None))
    return GpuError(message)


def to_typed(arr: np.ndarray):
    """A numpy array -> a JS typed array of its bytes (one copy; float16 travels as Uint16Array bits)."""
    flat = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    u8 = js.Uint8Array.new(flat.size)
    if flat.size:
        u8.assign(flat)
    return getattr(js, TYPED[str(arr.dtype)]).new(u8.buffer)


def _js_tensors(tensors: dict):
    """name -> numpy array or GpuTensor, as the executor takes them: {buffer, shape} or {data}. A numpy
    array travels as a new typed array each call, written every call (never constant: nothing would come
    back to hit the weight cache); a GpuTensor's buffer keeps its prepared weight layouts in the executor's
    weight cache until `forget`."""
    return _js({name: {"buffer": t.buffer, "shape": list(t.shape)} if isinstance(t, GpuTensor)
                else {"data": to_typed(t)} for name, t in tensors.items()})


def from_typed(data, dtype: str, shape, into: np.ndarray | None = None) -> np.ndarray:
    """A JS typed array -> a numpy array of `shape`, in one copy straight from JS memory: into `into` (a
    C-contiguous array of the shape: a piece's place in the whole y) when given, else a new array. (to_bytes
    made a bytes object and then a copy of it: three copies of y at once in the WebAssembly heap.)"""
    out = np.empty(shape, dtype=dtype) if into is None else into
    if int(data.byteLength) != out.nbytes:
        raise GpuError(f"the GPU read back {int(data.byteLength)} bytes for an output of {out.nbytes}")
    if out.nbytes:
        # assign_to wants the typed array's own element format: float16 travels as Uint16Array bits
        data.assign_to(out.reshape(-1).view(np.uint16 if out.dtype == np.float16 else out.dtype))
    return out


def heap_max() -> int | None:
    """The WebAssembly heap's maximum size (Pyodide: 4 GiB less a page), or None where it cannot be read."""
    try:
        import pyodide_js

        return int(pyodide_js._module._emscripten_get_heap_max())
    except Exception:  # noqa: BLE001 - another runtime's build: no bound known, numpy's MemoryError remains
        return None


def _caps(features, adapter_features, limits, info, is_fallback: bool = False) -> DeviceCaps:
    def text(name):
        return str(getattr(info, name, "") or "") if info is not None else ""

    return DeviceCaps(
        features=frozenset(features), adapter_features=frozenset(adapter_features), limits=limits,
        vendor=text("vendor"), architecture=text("architecture"), device=text("device"),
        description=text("description"),
        is_fallback=is_fallback or bool(info is not None and getattr(info, "isFallbackAdapter", False)),
        subgroup_min_size=int(getattr(info, "subgroupMinSize", 0) or 0) if info is not None else 0,
        subgroup_max_size=int(getattr(info, "subgroupMaxSize", 0) or 0) if info is not None else 0,
        subgroup_matrix_configs=matrix_configs(getattr(info, "subgroupMatrixConfigs", None)
                                               if info is not None and "chromium-experimental-subgroup-matrix" in features
                                               else ()))


def pipeline_key(template: str, source: str) -> str:
    """The executor's cache key of a pipeline: its WGSL's sha256 (params that only size the grid or the
    uniforms, such as split-K's kz, share one pipeline), after the template for reading."""
    return f"{template}|{source_digest(source)}"


class _Shape:
    """What host_refusal reads of a geometry: a launch's y shape and dtype."""

    def __init__(self, y_shape: tuple, dtype: str):
        self.y_shape, self.dtype = y_shape, dtype
        self.y_size = int(np.prod(y_shape, dtype=np.int64)) if y_shape else 1


class Gpu:
    """One WebGPU device and the executor that holds its pipelines and launches."""

    reads_into = True  # run and execute read y straight into the caller's array (app/split.py run_pieces)

    def __init__(self, device, caps: DeviceCaps):
        self.device = device
        self.caps = caps
        self.executor = _executor_module().executorFor(device)  # one per device, shared with the JS side

    @classmethod
    async def open(cls) -> "Gpu":
        """The device the package opens (web/runtime/device.mjs, shared with the JS side): optional features when
        offered, limits raised to the adapter's; no adapter is a GpuError whose hint fits the host."""
        try:
            opened = await _executor_module().openDevice(_js(list(OPTIONAL_FEATURES)), _js(list(RAISED_LIMITS)))
        except JsException as exc:
            raise python_error(exc) from None
        return cls(opened.device, _caps(opened.features.to_py(), opened.adapterFeatures.to_py(),
                                        opened.limits.to_py(), opened.info, bool(opened.isFallback)))

    @classmethod
    def adopt(cls, device) -> "Gpu":
        """The caller's GPUDevice: its own features and limits (what it was created with) are what we plan with."""
        features = [f for f in OPTIONAL_FEATURES if device.features.has(f)]
        limits = {name: getattr(device.limits, name) for name in RAISED_LIMITS}
        info = getattr(device, "adapterInfo", None)
        return cls(device, _caps(features, [str(f) for f in device.features], limits, info))

    async def current(self) -> "Gpu":
        """This Gpu (a DeviceHandle reopens lost devices; a bare Gpu reports the loss)."""
        if self.lost_reason:
            raise GpuError(f"the WebGPU device was lost ({self.lost_reason})")
        return self

    # Counters and state live in the executor; tests read (and reset) them here.
    @property
    def lost_reason(self) -> str | None:
        return self.executor.lost or None

    @property
    def executions(self) -> int:
        return int(self.executor.executions)

    @property
    def weight_preparations(self) -> int:
        return int(self.executor.weightPreparations)

    @property
    def largest_buffer(self) -> int:
        return int(self.executor.largest)

    @largest_buffer.setter
    def largest_buffer(self, value: int) -> None:
        self.executor.largest = value

    def memory(self) -> dict:
        """GPU memory the package holds (live bytes, the part launches and weight caches keep between calls),
        cache sizes and counters, and the weight cache of Python's calls (weight_cache_*)."""
        return self.executor.memory().to_py()

    def release_caches(self) -> None:
        """Drops every cached launch and pipeline (their GPU memory goes back to the device)."""
        self.executor.clear()

    def cached(self, signature: str):
        return self.executor.cached(signature)

    def record_compiles(self) -> None:
        """Drops every cached launch and records the shader of every pipeline used from then on (`recorded`):
        each compiled on this device, by that call or an earlier one (the executor's `record`)."""
        self.executor.record()

    def recorded(self) -> list[str]:
        """The sha256 of each shader used since record_compiles, which stops recording."""
        return sorted({key.split("|")[1] for key in self.executor.recorded().to_py()})

    async def compile_launch(self, plan: Plan, geom: ConvGeometry, signature: str | None = None):
        """Compiles the plan's passes (pipelines cached by their WGSL source: params that only size the grid or
        the uniforms, such as split-K's kz, share one) and hands the executor a launch; cached under `signature`
        (None: the caller destroys it after use)."""
        async def passes(dispatches):
            out = []
            for d in dispatches:
                source = render(d.template, d.render_params)
                try:
                    pipeline = await self.executor.pipeline(pipeline_key(d.template, source), source, plan.variant)
                except JsException as exc:
                    raise python_error(exc) from None
                out.append({"pipeline": pipeline, "bindings": list(d.bindings),
                            "uniforms": [v for _, v in d.uniforms], "workgroups": list(d.workgroups)})
            return out

        sizes = buffer_bytes(geom)
        bound = {n for d in plan.weight_passes + plan.dispatches for n in d.bindings}
        check = None
        if plan.finite_only:
            # Bound by the executor as (data, flag, the word count): declared here like any pass.
            params = {"dtype": geom.dtype, "workgroup_size": CHECK_WORKGROUP} | bindings_params(
                ("data",), ("flag",), ("words",))
            source = render(NONFINITE_CHECK, params)
            check = await self.executor.pipeline(pipeline_key(NONFINITE_CHECK, source), source, "nonfinite_check")
        spec = {"variant": plan.variant, "reason": plan.reason, "dtype": geom.dtype,
                "finite_only": plan.finite_only, "finite_check": check, "finite_scanned": list(plan.scanned),
                "check_workgroup": CHECK_WORKGROUP,
                "y_shape": list(geom.y_shape), "y_bytes": sizes["y"],
                "inputs": {n: sizes[n] for n in ("x", "w", "b") if n in bound},
                "scratch": dict(plan.scratch), "prepared": dict(plan.prepared),
                "prepare": await passes(plan.weight_passes), "passes": await passes(plan.dispatches)}
        if signature is not None and (made := self.executor.cached(signature)) is not None:
            return made  # a concurrent first call of the same signature finished first: share its launch
        return self.executor.buildLaunch(_js(spec), signature)

    def heap_max(self) -> int | None:
        return heap_max()

    async def run(self, launch, tensors: dict, output: str = "cpu", timing: bool = False,
                  into: np.ndarray | None = None):
        """One call of a launch. tensors: name -> numpy array or GpuTensor. Returns (y, gpu_ms): y a numpy
        array (`into` when given), or a GpuTensor the caller owns with output="gpu". A y that this runtime's
        memory cannot hold is refused before the GPU runs (field "y")."""
        if output == "cpu" and into is None:
            shape = tuple(launch.spec.y_shape.to_py())
            refusal = host_refusal(_Shape(shape, str(launch.spec.dtype)), heap_max())
            if refusal is not None:
                raise refusal
        try:
            out = await launch.run(_js_tensors(tensors), _js({"output": output, "timing": timing}))
        except JsException as exc:
            raise python_error(exc) from None
        y, meta = out.y, out.meta
        gpu_ms = None if meta.gpu_ms is None else float(meta.gpu_ms)
        if output == "gpu":
            return GpuTensor(y.buffer, tuple(y.shape.to_py()), str(y.dtype)), gpu_ms
        return from_typed(y.data, str(y.dtype), tuple(y.shape.to_py()), into), gpu_ms

    async def execute(self, plan: Plan, geom: ConvGeometry, inputs: dict,
                      into: np.ndarray | None = None) -> tuple[np.ndarray, float | None]:
        """One uncached run of a plan (a piece of a split request): launched, run (y read into `into` when
        given), destroyed."""
        launch = await self.compile_launch(plan, geom)
        try:
            return await self.run(launch, {n: a for n, a in inputs.items() if n in launch.spec.inputs.to_py()},
                                  into=into)
        finally:
            launch.destroy()

    def upload(self, arr: np.ndarray) -> GpuTensor:
        """A numpy array copied into a new GPU buffer (STORAGE | COPY_SRC | COPY_DST) that the caller owns."""
        return GpuTensor(self.executor.upload(to_typed(arr)), tuple(arr.shape), str(arr.dtype))

    async def output(self, launch, geom: ConvGeometry) -> np.ndarray:
        """y as the launch's last run (a timing one included) left it on the GPU."""
        try:
            data = await launch.output()
        except JsException as exc:
            raise python_error(exc) from None
        return from_typed(data, geom.dtype, geom.y_shape)

    async def time_launch(self, launch, tensors: dict, warmup: int = 1, runs: int = 5, repeats: int = 1,
                          busy_ms: float = 0):
        """Benchmarks: [(wall ms, GPU ms or None)] per run, per repetition (web/runtime/executor.mjs Launch.time);
        busy_ms: untimed work right before each timed run, so that a real GPU is at its working clocks."""
        try:
            samples = await launch.time(_js_tensors(tensors),
                                        _js({"warmup": warmup, "runs": runs, "repeats": repeats, "busyMs": busy_ms}))
        except JsException as exc:
            raise python_error(exc) from None
        return [(float(wall), None if gpu is None else float(gpu)) for wall, gpu in samples.to_py()]
