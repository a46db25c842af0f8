"""Every WGSL shader the package can render, for checking with both WGSL compilers (tools/wgsl/check.py).

The parameter sets are not listed by hand: they come from the variants' own planning. Every variant in
VARIANTS plans every request of GEOMETRIES (ranks 1-3, float32 and float16, with and without bias, dense,
grouped and depthwise, strides, dilations, pads, 1x1, empty input, channel counts past every threshold,
and bench.json's cases of both tiers) on every device of DEVICES that it covers; every tunable variant
also plans with every candidate of its bench.json tuning grid (as the tuner would) and with every entry
of the shipped tuning tables. Each launch's dispatches (weight passes included) give (template,
params); the rendered sources are deduplicated. A new variant, template or tuning grid is covered
without editing this file; `coverage_gaps` says when the geometries miss a structural choice.

DEVICES holds device capabilities as data (no GPU is asked): SwiftShader as Chromium reports it, Firefox
on lavapipe, the H200 (docs/results/h200-device.json: subgroup-matrix configurations, 48 KiB workgroup memory,
1024 invocations), and GPUs with other subgroup-matrix configurations (f32 components, as Metal offers;
small f16 matrices), so that every configuration shape the sgmat variants can be given is rendered.
"""
from __future__ import annotations

import functools
import itertools
import json
from dataclasses import dataclass, field

import ast

from app import tuner
from app.caps import DEFAULT_LIMITS, DeviceCaps
from app.contract import ROOT
from app.errors import ConvTransposeError
from app.plan import Refusal, bindings_params
from app.render import NONFINITE_CHECK, TEMPLATES, render
from app.shapes import infer
from app.variants import VARIANTS

F32_ONLY = ("float32",)
DTYPES = ("float32", "float16")
SGMAT = "chromium-experimental-subgroup-matrix"


def _config(component: str, m: int, n: int, k: int, result: str = "f32") -> dict:
    return {"componentType": component, "resultComponentType": result, "M": m, "N": n, "K": k}


def caps_from_report(info: dict) -> DeviceCaps:
    """The caps of an adapter as `python -m app device` reported it (a device.json)."""
    return DeviceCaps(features=frozenset(info["features"]), adapter_features=frozenset(info["adapter_features"]),
                      limits=dict(info["limits"]), vendor=info["vendor"], architecture=info["architecture"],
                      device=info["device"], is_fallback=info["is_fallback"],
                      subgroup_min_size=info["subgroup_sizes"][0], subgroup_max_size=info["subgroup_sizes"][1],
                      subgroup_matrix_configs=tuple(info.get("subgroup_matrix_configs", ())))


def _h200() -> DeviceCaps:
    return caps_from_report(json.loads((ROOT / "docs" / "results" / "h200-device.json").read_text()))


_SOFTWARE_LIMITS = DEFAULT_LIMITS | {"maxComputeWorkgroupStorageSize": 32768,
                                     "maxStorageBufferBindingSize": 1 << 30, "maxBufferSize": 1 << 30}
_GPU_LIMITS = DEFAULT_LIMITS | {"maxComputeInvocationsPerWorkgroup": 1024, "maxComputeWorkgroupSizeX": 1024,
                                "maxComputeWorkgroupStorageSize": 32768}


def devices() -> dict[str, DeviceCaps]:
    """Device capabilities the variants plan for, by name (data only)."""
    sgmat = frozenset({"shader-f16", "subgroups", "timestamp-query", SGMAT})
    return {
        "swiftshader": DeviceCaps(features=frozenset({"subgroups", "timestamp-query"}), limits=dict(_SOFTWARE_LIMITS),
                                  vendor="google", architecture="swiftshader", is_fallback=True,
                                  subgroup_min_size=4, subgroup_max_size=4),
        # The f16 twin of SwiftShader: the software-adapter tile choices with float16 requests.
        "software-f16": DeviceCaps(features=frozenset({"shader-f16", "subgroups", "timestamp-query"}),
                                   limits=dict(_SOFTWARE_LIMITS), vendor="google", architecture="swiftshader",
                                   is_fallback=True, subgroup_min_size=4, subgroup_max_size=4),
        "firefox-lavapipe": DeviceCaps(features=frozenset({"shader-f16", "timestamp-query"}),
                                       limits=dict(_SOFTWARE_LIMITS), is_fallback=True,
                                       subgroup_min_size=4, subgroup_max_size=128),
        "webgpu-defaults": DeviceCaps(features=frozenset({"shader-f16"})),
        "h200": _h200(),
        # Subgroup-matrix configurations other GPUs report: f32 components (Metal: 8x8x8), small f16 ones,
        # and subgroups of 16 and 64.
        "gpu-sgmat-f32-8x8x8": DeviceCaps(features=sgmat, limits=dict(_GPU_LIMITS), vendor="apple",
                                          subgroup_min_size=32, subgroup_max_size=32,
                                          subgroup_matrix_configs=(_config("f32", 8, 8, 8),
                                                                   _config("f16", 8, 8, 8, "f16"))),
        "gpu-sgmat-f16-8x8x8": DeviceCaps(features=sgmat, limits=dict(_GPU_LIMITS), vendor="apple",
                                          subgroup_min_size=32, subgroup_max_size=32,
                                          subgroup_matrix_configs=(_config("f16", 8, 8, 8),)),
        "gpu-sgmat-sub16": DeviceCaps(features=sgmat, limits=dict(_GPU_LIMITS), vendor="intel",
                                      subgroup_min_size=8, subgroup_max_size=16,
                                      subgroup_matrix_configs=(_config("f16", 8, 16, 16), _config("f32", 8, 16, 8))),
        "gpu-sgmat-sub64": DeviceCaps(features=sgmat, limits=dict(_GPU_LIMITS), vendor="amd",
                                      subgroup_min_size=64, subgroup_max_size=64,
                                      subgroup_matrix_configs=(_config("f16", 16, 16, 16),)),
    }


@functools.cache
def _devices() -> dict[str, DeviceCaps]:
    """devices(), made once: read-only use (each shader's limits and adapters)."""
    return devices()


# Requests as (x shape, w shape, attributes); each is planned in both dtypes, with and without bias.
_SHAPES: list[tuple[list[int], list[int], dict]] = []
for _rank in (1, 2, 3):
    _sp = [5] * _rank
    _k3, _k4, _k1, _k2 = [3] * _rank, [4] * _rank, [1] * _rank, [2] * _rank
    _SHAPES += [
        ([1, 2, *_sp], [2, 3, *_k3], {}),                                           # small: the gather kernels
        ([0, 2, *_sp], [2, 3, *_k3], {}),                                           # empty input
        ([1, 16, *_sp], [16, 16, *_k4], {"strides": [2] * _rank, "pads": [1] * 2 * _rank}),
        ([1, 48, *_sp], [48, 24, *_k4], {"strides": [2] * _rank, "pads": [1] * 2 * _rank}),
        ([1, 16, *_sp], [16, 16, *_k3], {"pads": [1] * 2 * _rank}),                 # stride 1: implicit GEMM
        ([1, 16, *_sp], [16, 16, *_k3], {"dilations": [2] * _rank}),
        ([1, 32, *_sp], [32, 4, *_k3], {"group": 4, "pads": [1] * 2 * _rank}),     # 8 out-channels per group
        ([1, 64, *_sp], [64, 64, *_k3], {}),
        ([1, 32, *_sp], [32, 32, *_k3], {"group": 1}),
        ([1, 128, *_sp], [128, 32, *_k3], {"group": 2}),                            # 16 out per group
        ([1, 32, *_sp], [32, 32, *_k1], {}),                                        # 1x1
        ([2, 32, *_sp], [32, 16, *_k1], {"group": 2}),
        ([1, 256, *_sp], [256, 64, *_k1], {}),
        ([1, 16, *_sp], [16, 2, *_k4], {"group": 8, "strides": [2] * _rank}),      # grouped
        ([1, 16, *_sp], [16, 1, *_k3], {"group": 16, "strides": [2] * _rank}),     # depthwise
        ([1, 8, *_sp], [8, 3, *_k3], {"group": 2, "strides": [3] * _rank, "dilations": [2] * _rank}),
        ([1, 8, *_sp], [8, 5, *_k2], {"group": 4, "strides": [5] * _rank, "output_padding": [1] * _rank}),
        ([1, 40, *_sp], [40, 8, *_k3], {"group": 5, "strides": [2] * _rank, "pads": [1] * 2 * _rank}),
        ([2, 64, *_sp], [64, 32, *_k2], {"strides": [2] * _rank}),                 # col2im
        ([1, 8, *_sp], [8, 8, *_k3], {"strides": [3] * _rank, "dilations": [2] * _rank}),
    ]
_SHAPES += [
    ([1, 8, 5, 5, 6], [8, 4, 2, 2, 2], {"group": 2, "strides": [2, 2, 2]}),        # 3D grouped: 4 channels a block
    ([1, 16, 64], [16, 8, 16], {"strides": [8], "pads": [4, 4]}),                    # vocoder phase tiles
    ([1, 8, 32], [8, 4, 300], {"strides": [100]}),                                   # phases split, long kernel
    ([1, 16, 16], [16, 2, 2], {"strides": [3], "auto_pad": "SAME_LOWER"}),          # negative pads
    ([1, 12, 7], [12, 9, 4], {"group": 3, "strides": [2]}),
    ([2, 32, 40], [32, 64, 1025], {"strides": [2]}),                                # huge kernel: shrunk tiles
]


def _bench_shapes() -> list[tuple[list[int], list[int], dict, bool, str]]:
    doc = json.loads((ROOT / "bench.json").read_text())
    return [(c["x"], c["w"], c.get("attributes", {}), c.get("bias", False), c.get("dtype", "float32"))
            for c in doc["cases"]]


def geometries() -> list:
    out = []
    for x, w, attrs in _SHAPES:
        for dtype, bias in itertools.product(DTYPES, (False, True)):
            out.append(_geom(x, w, attrs, bias, dtype))
    for x, w, attrs, bias, dtype in _bench_shapes():
        for dtype in DTYPES:
            for b in (bias, not bias):
                out.append(_geom(x, w, attrs, b, dtype))
    return out


def _geom(x, w, attrs, bias, dtype):
    m = w[1] * dict(attrs).get("group", 1)
    dtypes = {"x": dtype, "w": dtype} | ({"b": dtype} if bias else {})
    return infer(x, w, [m] if bias else None, attrs, dtypes)


@dataclass
class Shader:
    template: str
    render_params: dict
    source: str
    features: tuple[str, ...]  # what the device needs for the source to compile
    uses: set = field(default_factory=set)  # (variant, device, geometry label) that render it


def _needs(source: str) -> tuple[str, ...]:
    needs = []
    if "enable f16;" in source:
        needs.append("shader-f16")
    if "enable subgroups;" in source:
        needs.append("subgroups")
    if "enable chromium_experimental_subgroup_matrix;" in source:
        needs.append(SGMAT)
    return tuple(needs)


# The limits a pipeline's validity depends on (workgroup memory and size); the buffer sizes are the plan's.
PIPELINE_LIMITS = ("maxComputeWorkgroupStorageSize", "maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupSizeX")


def planned_limits(shader: Shader) -> dict:
    """The limits the shader's pipeline can need at most: the smallest of the devices it was planned for
    (each plan fits the device it was made for)."""
    caps = _devices()
    return {k: min(caps[d].limit(k) for _, d, _ in shader.uses) for k in PIPELINE_LIMITS}


def planned_for_software(shader: Shader) -> bool:
    """Whether a software adapter (SwiftShader, lavapipe) would run the shader: some plan for one made it."""
    caps = _devices()
    return any(caps[d].is_fallback for _, d, _ in shader.uses)


@dataclass
class Matrix:
    shaders: dict = field(default_factory=dict)  # source -> Shader
    covered: dict = field(default_factory=dict)  # variant -> {(dtype, has_bias, rank)}
    params_seen: dict = field(default_factory=dict)  # variant -> {param: {values}}

    # (template, params as JSON) -> Shader: most plans repeat params already rendered (1M dispatches, 11K
    # distinct params), so each (template, params) is rendered once.
    _rendered: dict = field(default_factory=dict, repr=False)
    _params_recorded: set = field(default_factory=set, repr=False)  # (variant, params key) in params_seen
    # Every template a pass named: a thin entry (a seed name) renders its generic template's exact source, so
    # its shader is found under the generic name and the source alone does not say that the entry rendered.
    _named: set = field(default_factory=set, repr=False)

    def add(self, variant: str, device: str, geom, launch, label: str | None = None) -> None:
        use = (variant, device, label or _label(geom))
        for dispatch in (*launch.weight_passes, *launch.dispatches):
            self._named.add(dispatch.template)
            # repr: exact for the params' plain data (ints, bools, strings, lists), and cheaper than JSON; a
            # dict built in another key order only costs one more render (shaders are keyed by source).
            key = (dispatch.template, repr(dispatch.render_params))
            shader = self._rendered.get(key)
            if shader is None:
                source = render(dispatch.template, dispatch.render_params)
                shader = self.shaders.get(source)
                if shader is None:
                    shader = self.shaders[source] = Shader(dispatch.template, dict(dispatch.render_params), source,
                                                           _needs(source))
                self._rendered[key] = shader
            shader.uses.add(use)
            if (variant, key) not in self._params_recorded:
                self._params_recorded.add((variant, key))
                seen = self.params_seen.setdefault(variant, {})
                for k, v in dispatch.render_params.items():
                    seen.setdefault(k, set()).add(json.dumps(v, sort_keys=True))
        self.covered.setdefault(variant, set()).add((geom.dtype, geom.has_bias, geom.rank))

    def add_shared(self, template: str, params: dict, dtype: str) -> None:
        """A pass every launch may add besides its variant's own (app/render.py SHARED_TEMPLATES)."""
        source = render(template, params)
        shader = self.shaders.setdefault(source, Shader(template, dict(params), source, _needs(source)))
        shader.uses.add(("(every finite-data variant)", "swiftshader" if dtype == "float32" else "software-f16",
                         dtype))

    @property
    def templates(self) -> set[str]:
        rendered = {s.template for s in self.shaders.values()} | self._named
        return rendered | {inc for name in rendered for inc in _includes(name)}


def _includes(template: str) -> set[str]:
    text = (TEMPLATES / template).read_text()
    return {name for name in (p.name for p in TEMPLATES.glob("*.wgsl.jinja")) if f'"{name}"' in text}


def _check_workgroup() -> int:
    """app/gpu.py's CHECK_WORKGROUP, read from its source (that module imports Pyodide's `js`)."""
    tree = ast.parse((ROOT / "app" / "gpu.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "CHECK_WORKGROUP" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("app/gpu.py no longer defines CHECK_WORKGROUP")


def _label(geom) -> str:
    return (f"x{list(geom.x_shape)} w{list(geom.w_shape)} g{geom.group} s{list(geom.strides)} "
            f"d{list(geom.dilations)} {geom.dtype}{' bias' if geom.has_bias else ''}")


def _tables() -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((ROOT / "tuning").glob("*.json"))]


def _params_key(params: dict) -> str:
    return repr(sorted(params.items()))


def build() -> Matrix:
    """Plans every variant over GEOMETRIES x DEVICES (and the tuning grids and tables); renders each plan."""
    matrix = Matrix()
    grids = tuner.grids()
    table_params: dict[str, list[dict]] = {}
    for table in _tables():
        for name, classes in table.get("variants", {}).items():
            table_params.setdefault(name, []).extend(entry["params"] for entry in classes.values())
    # configured looks up no table (the planner does): the tables' params are forced below, on every device.
    tunable = set(tuner.tunable_variants())
    for (device_name, caps), geom in itertools.product(devices().items(), geometries()):
        label = _label(geom)
        for name, variant in VARIANTS.items():
            launch = variant.configured(geom, caps)
            if isinstance(launch, Refusal):
                continue
            matrix.add(name, device_name, geom, launch, label)
            if name not in tunable:
                continue
            defaults = tuner.defaults(name, geom, caps)
            options = tuner.candidates(name, grids.get(name, {}), geom, caps)[1:]
            options += [defaults | p for p in table_params.get(name, [])
                        if tuner.refusal(name, defaults | p, geom, caps) is None]
            # configure is pure in (geometry, caps, resolved params): params planned once are not planned again
            # (a table's entry often equals a grid candidate or the defaults).
            planned = {_params_key(defaults)}
            for params in options:
                if _params_key(params) in planned:
                    continue
                planned.add(_params_key(params))
                try:
                    launch = variant.configured(geom, caps, forced=params)
                except ConvTransposeError:
                    continue
                if not isinstance(launch, Refusal):
                    matrix.add(name, device_name, geom, launch, label)
    for dtype in DTYPES:  # the launch-wide NaN/Inf check (app/gpu.py declares its pass the same way)
        params = {"dtype": dtype, "workgroup_size": _check_workgroup()} | bindings_params(("data",), ("flag",),
                                                                                          ("words",))
        matrix.add_shared(NONFINITE_CHECK, params, dtype)
    return matrix


def coverage_gaps(matrix: Matrix) -> list[str]:
    """Structural choices the geometries never reached, in words (empty when every one is rendered)."""
    gaps = []
    every_template = {p.name for p in TEMPLATES.glob("*.wgsl.jinja")}
    for name in sorted(every_template - matrix.templates):
        gaps.append(f"template {name} is never rendered")
    for name, variant in VARIANTS.items():
        ranks = variant.conditions.get("rank", [1, 2, 3])
        biases = [variant.conditions["bias"]] if "bias" in variant.conditions else [False, True]
        wanted = set(itertools.product(variant.dtypes, biases, ranks))
        missing = wanted - matrix.covered.get(name, set())
        if missing:
            gaps.append(f"variant {name} never planned for (dtype, bias, rank) in {sorted(missing)}")
    grids = tuner.grids()
    for name, grid in grids.items():
        seen = matrix.params_seen.get(name, {})
        for param, values in grid.items():
            missed = [v for v in values if json.dumps(v) not in seen.get(param, set())]
            if missed:
                gaps.append(f"variant {name}: tuning-grid values {param}={missed} never rendered")
    return gaps
