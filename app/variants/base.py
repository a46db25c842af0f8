"""What a variant is: a name, its templates, what it needs, the shapes it covers (as data), and how it
lays out its launch. Coverage is checked by one evaluator over the CONDITIONS vocabulary below, so the
same data decides selection and is published in metadata.json."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ..caps import DeviceCaps
from ..plan import Dispatch, Plan
from ..shapes import ConvGeometry

DTYPE_BYTES = {"float32": 4, "float16": 2}
WORKGROUP_STORAGE = "maxComputeWorkgroupStorageSize"


def _group_kind(geom: ConvGeometry) -> str:
    if geom.group == 1:
        return "dense"
    return "depthwise" if geom.in_per_group == 1 else "grouped"


# name -> (words, test(geom, value) -> bool). Values are plain JSON data.
CONDITIONS: dict[str, tuple[str, Callable[[ConvGeometry, object], bool]]] = {
    "rank": ("the number of spatial axes is one of {}", lambda g, v: g.rank in v),
    "group": ("the grouping is one of {} (dense: group 1; grouped: group > 1; depthwise: 1 in-channel per group)",
              lambda g, v: _group_kind(g) in v or ("grouped" in v and _group_kind(g) == "depthwise")),
    "min_stride": ("every stride is >= {}", lambda g, v: min(g.strides) >= v),
    "stride": ("every stride is {}", lambda g, v: all(s == v for s in g.strides)),
    "dilation": ("every dilation is {}", lambda g, v: all(d == v for d in g.dilations)),
    "kernel": ("every kernel dim is {}", lambda g, v: all(k == v for k in g.kernel)),
    "no_padding": ("pads and output_padding are all 0 (given {})",
                   lambda g, v: not v or (not any(g.pads_begin) and not any(g.pads_end) and not any(g.output_padding))),
    "min_in_per_group": ("each group has at least {} input channels", lambda g, v: g.in_per_group >= v),
    "min_out_per_group": ("each group has at least {} output channels", lambda g, v: g.out_per_group >= v),
    "min_output": ("the output has at least {} elements", lambda g, v: g.y_size >= v),
    "bias": ("the request has a bias: {}", lambda g, v: g.has_bias == v),
    "input": ("the input is {} (empty: some dim of x is 0)", lambda g, v: (g.x_size == 0) == (v == "empty")),
    # Kernels that multiply zeros padded into their tiles (absent taps, positions outside x) turn a NaN or
    # an Inf of the other factor into a NaN that IEEE arithmetic on the real products would not produce.
    "finite_data": ("x and w hold only finite values (given {}): the kernel multiplies padding zeros",
                    lambda g, v: not v or g.finite_data),
}


def describe(conditions: dict) -> list[str]:
    return [CONDITIONS[name][0].format(value) for name, value in conditions.items()]


def unmet(conditions: dict, geom: ConvGeometry) -> str | None:
    """The first condition the request does not meet, in words, or None."""
    for name, value in conditions.items():
        words, test = CONDITIONS[name]
        if not test(geom, value):
            return words.format(value)
    return None


@dataclass(frozen=True)
class Variant:
    name: str
    templates: tuple[str, ...]
    summary: str
    conditions: dict  # CONDITIONS name -> value: the shapes it covers
    plan_passes: Callable[[ConvGeometry, DeviceCaps], Plan]  # returns the plan (variant/reason filled later)
    features: tuple[str, ...] = ()  # WebGPU features it needs
    dtypes: tuple[str, ...] = ("float32", "float16")
    # Workgroup memory the launch needs for a request; checked against the device limit when given.
    workgroup_bytes: Callable[[ConvGeometry, DeviceCaps], int] | None = None
    # Other request-dependent resources (intermediate buffers vs binding limits): a refusal in words, or None.
    fits: Callable[[ConvGeometry, DeviceCaps], str | None] | None = None

    def why_not(self, geom: ConvGeometry, caps: DeviceCaps) -> str | None:
        """None when the variant covers the request on this device, else the reason in words."""
        missing = [f for f in self.features if not caps.has(f)]
        if missing:
            return f"needs device feature(s) {missing}"
        if geom.dtype not in self.dtypes:
            return f"does not support dtype {geom.dtype}"
        failed = unmet(self.conditions, geom)
        if failed:
            return "covers only requests where " + failed
        if self.workgroup_bytes is not None:
            need, limit = self.workgroup_bytes(geom, caps), caps.limit(WORKGROUP_STORAGE)
            if need > limit:
                return f"needs {need} bytes of workgroup memory, the device allows {limit}"
        if self.fits is not None:
            return self.fits(geom, caps)
        return None

    def plan(self, geom: ConvGeometry, caps: DeviceCaps, reason: str) -> Plan:
        plan = self.plan_passes(geom, caps)
        return Plan(self.name, reason, plan.dispatches, plan.scratch, plan.prepare, plan.prepared, plan.prepare_key)

    def requirements(self) -> dict:
        return {"features": list(self.features), "dtypes": list(self.dtypes), "shapes": dict(self.conditions),
                "shapes_in_words": describe(self.conditions),
                "workgroup_memory": "fits maxComputeWorkgroupStorageSize" if self.workgroup_bytes else None,
                "buffers": "intermediate buffers fit maxStorageBufferBindingSize and maxBufferSize" if self.fits else None}


def io_bindings(geom: ConvGeometry) -> tuple[str, ...]:
    return ("x", "w", "b", "y") if geom.has_bias else ("x", "w", "y")


def axis_uniforms(geom: ConvGeometry) -> list[tuple[str, int]]:
    """Per-axis sizes as i32 uniform fields: in0, out0, k0, s0, d0, pad0, step0, in1, ..."""
    fields = []
    for a, (i, o, k, s, d, pb) in enumerate(zip(geom.in_spatial, geom.out_spatial, geom.kernel, geom.strides,
                                                 geom.dilations, geom.pads_begin)):
        fields += [(f"in{a}", i), (f"out{a}", o), (f"k{a}", k), (f"s{a}", s), (f"d{a}", d),
                   (f"pad{a}", pb), (f"step{a}", s // math.gcd(s, d))]
    return fields


def channel_uniforms(geom: ConvGeometry) -> list[tuple[str, int]]:
    return [("batch", geom.batch), ("y_size", geom.y_size), ("in_channels", geom.in_channels),
            ("out_channels", geom.out_channels), ("in_per_group", geom.in_per_group),
            ("out_per_group", geom.out_per_group)]


def dispatch(template: str, params: dict, bindings, uniforms: list[tuple[str, int]],
             workgroups: tuple[int, int, int]) -> Dispatch:
    """A Dispatch whose template receives `uniform_fields` (the Params struct's field names, in order)."""
    return Dispatch(template, params | {"uniform_fields": [n for n, _ in uniforms]}, tuple(bindings),
                    tuple(uniforms), workgroups)
