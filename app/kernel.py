"""The callable kernel: request -> validated geometry (`validate`) -> plan (app/planner.py, split past the
device's limits) -> executor launch (app/gpu.py, cached per call signature) -> result.

Callers that validate and plan a request themselves (case runner, bench, tuner, fuzzer) hand the geometry
and pieces to `ConvTransposeKernel.call`, so a request is validated and planned once. What decides a plan
travels as arguments, one way (caller -> kernel -> planner -> variants): the forced `variant`, its forced
tile `params` (the tuner's candidates) and the tuning `tables` (None: the tables in use; []: none); the
call signature that keys cached launches carries all of them."""
from __future__ import annotations

from . import contract, finite, planner, tuning_tables
from .errors import ConvTransposeError
from .lazy_numpy import np
from .shapes import ConvGeometry, infer
from .split import plan_pieces, run_pieces
from .tensors import GpuTensor, as_array

OUTPUTS = ("cpu", "gpu")


def validate(x, w, b=None, **attributes) -> tuple[ConvGeometry, dict]:
    """Validates a request (no GPU involved) and returns its geometry and the inputs: numpy arrays, or
    GpuTensors as given (their data is not read: they count as finite unless marked `finite=False`)."""
    arrays = {"x": x, "w": w} | ({"b": b} if b is not None else {})
    arrays = {name: t if isinstance(t, GpuTensor) else as_array(name, t) for name, t in arrays.items()}
    geom = infer(arrays["x"].shape, arrays["w"].shape, arrays["b"].shape if b is not None else None,
                 attributes, {name: str(arr.dtype) for name, arr in arrays.items()})
    geom = finite.marked(geom, finite.request_finite(arrays))  # NaN or Inf: only variants exact on any data
    return geom, {n: a if isinstance(a, GpuTensor) else np.ascontiguousarray(a) for n, a in arrays.items()}


def signature(arrays: dict, attributes: dict, variant: str | None, finite_data: bool, params: dict | None = None,
              tables: list[dict] | None = None) -> str:
    """What decides a call's plan: shapes, dtypes, attributes as given, forced variant and params, finiteness,
    and the tuning tables' revision."""
    return repr(([(n, tuple(a.shape), str(a.dtype)) for n, a in arrays.items()],
                 sorted(attributes.items()), variant, sorted(params.items()) if params is not None else None,
                 finite_data, tuning_tables.revision(tables)))


class ConvTransposeKernel:
    """`await kernel(x=..., w=..., b=None, variant=None, output="cpu", timing=False, **attributes)`
    -> {"y": ndarray (or GpuTensor with output="gpu"), "meta": {...}}."""

    def __init__(self, device, autotuner=None):
        self.device = device  # a DeviceHandle (app/device.py): the live Gpu, reopened after a loss, and the caps
        self.autotuner = autotuner  # app/autotune.py Autotuner: the best predicted candidates timed on first use

    @property
    def planning(self) -> str:
        """The revision of the tuning tables in use, as a string: part of every launch key, Python's
        (`signature`) and JS's (app/bridge.py), so that no launch planned under older tables is reused."""
        return tuning_tables.revision()

    def plan(self, geom: ConvGeometry, variant: str | None = None, params: dict | None = None,
             tables: list[dict] | None = None, measured=None, calibration=None):
        missing = [f for f in contract.dtype_features()[geom.dtype] if not self.device.caps.has(f)]
        if missing:
            # the request's dtype is x's (the others must match it): x is the input to change
            raise ConvTransposeError(
                f"dtype {geom.dtype} needs the device feature(s) {missing}, which this adapter lacks", field="x")
        return planner.plan(geom, self.device.caps, variant, params, tables, measured, calibration)

    def pieces(self, geom: ConvGeometry, variant: str | None = None, params: dict | None = None,
               tables: list[dict] | None = None, measured=None, calibration=None):
        """The request's plan, split into pieces past the device's buffer or dispatch limits (app/split.py);
        `measured`: the autotune store's (planner.Candidate, why) for the signature; `calibration`: what
        adaptation measured on this adapter (app/calibration.py Calibration)."""
        return plan_pieces(geom, self.device.caps,
                           lambda piece: self.plan(piece, variant, params, tables, measured, calibration))

    async def launch_for(self, geom: ConvGeometry, variant: str | None, key: str, pieces=None,
                         params: dict | None = None, tables: list[dict] | None = None, measured=None,
                         calibration=None):
        """(executor launch, pieces): the launch cached under `key`, or None when the request runs as
        several pieces (or has an empty output); planned (unless `pieces` are given) and compiled only on
        the signature's first call. `measured`, `calibration`: as `pieces` takes them."""
        gpu = await self.device.current()
        launch = gpu.cached(key)
        if launch is not None:
            return launch, None
        pieces = pieces if pieces is not None else self.pieces(geom, variant, params, tables, measured, calibration)
        if len(pieces) > 1 or geom.y_size == 0:
            return None, pieces
        if self.autotuner is not None and variant is None and params is None:
            pieces = await self.autotuner.pieces(self, geom, tables)
        return await gpu.compile_launch(pieces[0][1], geom, key), pieces

    async def __call__(self, x, w, b=None, variant: str | None = None, output: str = "cpu", timing: bool = False,
                       **attributes) -> dict:
        if output not in OUTPUTS:
            raise ConvTransposeError(f"output must be one of {list(OUTPUTS)}, got {output!r}", "output")
        geom, arrays = validate(x, w, b, **attributes)
        return await self.call(geom, arrays, attributes, variant, output, timing)

    async def call(self, geom: ConvGeometry, arrays: dict, attributes: dict, variant: str | None = None,
                   output: str = "cpu", timing: bool = False, pieces=None, params: dict | None = None,
                   tables: list[dict] | None = None) -> dict:
        """A validated request (`validate`'s geometry and arrays, the attributes as given; `output` one of
        OUTPUTS, as __call__ checks); `pieces`: the caller's own `self.pieces(geom, variant, params, tables)`,
        so that it is not planned twice; `params`, `tables`: as `plan` takes them."""
        resident = [n for n, a in arrays.items() if isinstance(a, GpuTensor)]
        key = f"py{id(self)}:" + signature(arrays, attributes, variant, geom.finite_data, params, tables)
        launch, pieces = await self.launch_for(geom, variant, key, pieces, params, tables)
        gpu = await self.device.current()
        if launch is None:
            plan = pieces[0][1]
            meta = {"variant": plan.variant, "reason": plan.reason, "gpu_ms": None, "y_shape": list(geom.y_shape),
                    "pieces": len(pieces)}
            if geom.y_size == 0:
                meta["variant"] = "none (empty output)"
                y = np.zeros(geom.y_shape, dtype=geom.dtype)
                return {"y": gpu.upload(y) if output == "gpu" else y, "meta": meta}
            if resident or output == "gpu":
                raise ConvTransposeError(
                    f"this request runs as {len(pieces)} pieces (past the device's limits); GPU-resident tensors "
                    f"need a request that fits in one piece: pass numpy arrays and output='cpu'",
                    resident[0] if resident else "output")
            y, meta["gpu_ms"] = await run_pieces(gpu, geom, arrays, pieces)
            return {"y": y, "meta": meta}
        y, gpu_ms = await gpu.run(launch, arrays, output, timing)
        spec = launch.spec
        meta = {"variant": str(spec.variant), "reason": str(spec.reason), "gpu_ms": gpu_ms,
                "y_shape": list(geom.y_shape), "pieces": 1}
        if self.autotuner is not None and variant is None and params is None:
            meta["autotune"] = self.autotuner.meta(geom)
        return {"y": y, "meta": meta}

    async def upload(self, array) -> GpuTensor:
        """A numpy array (or {"data", "shape"}) copied into a new GPU buffer the caller owns."""
        return (await self.device.current()).upload(as_array("x", array) if not isinstance(array, np.ndarray) else array)

    def forget(self, weights) -> None:
        """After rewriting a GpuTensor's buffer that served as w: its prepared layouts are rebuilt next call."""
        self.device.executor.forget(weights.buffer if isinstance(weights, GpuTensor) else weights)
