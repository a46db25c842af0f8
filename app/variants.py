"""The implementation variants: each a name, its templates, what it needs, what it covers, and how it
lays out its launch. The planner (planner.py) holds the rules that choose among them."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from .caps import DeviceCaps
from .plan import Dispatch, Plan, grid
from .shapes import ConvGeometry

DTYPE_BYTES = {"float32": 4, "float16": 2}


@dataclass(frozen=True)
class Variant:
    name: str
    templates: tuple[str, ...]
    summary: str
    features: tuple[str, ...]  # WebGPU features it needs
    dtypes: tuple[str, ...]
    conditions: dict  # the shapes it covers, as data (metadata.json publishes it)
    # None when the variant covers the request, else the reason it does not.
    refuses: Callable[[ConvGeometry, DeviceCaps], str | None]
    build: Callable[[ConvGeometry, DeviceCaps], tuple[Dispatch, ...]]

    def why_not(self, geom: ConvGeometry, caps: DeviceCaps) -> str | None:
        missing = [f for f in self.features if not caps.has(f)]
        if missing:
            return f"needs device feature(s) {missing}"
        if geom.dtype not in self.dtypes:
            return f"does not support dtype {geom.dtype}"
        return self.refuses(geom, caps)

    def plan(self, geom: ConvGeometry, caps: DeviceCaps, reason: str) -> Plan:
        return Plan(self.name, reason, self.build(geom, caps))


def io_bindings(geom: ConvGeometry) -> tuple[str, ...]:
    return ("x", "w", "b", "y") if geom.has_bias else ("x", "w", "y")


def axis_uniforms(geom: ConvGeometry) -> list[tuple[str, int]]:
    fields = []
    for a, (i, o, k, s, d, pb) in enumerate(zip(geom.in_spatial, geom.out_spatial, geom.kernel, geom.strides,
                                                 geom.dilations, geom.pads_begin)):
        fields += [(f"in{a}", i), (f"out{a}", o), (f"k{a}", k), (f"s{a}", s), (f"d{a}", d),
                   (f"pad{a}", pb), (f"step{a}", s // math.gcd(s, d))]
    return fields


# --- general gather, one template per rank ----------------------------------------------------------
GATHER_TEMPLATES = {1: "conv-transpose1d-ncl.wgsl.jinja", 2: "conv-transpose2d-nchw.wgsl.jinja",
                    3: "conv-transpose3d-ncdhw.wgsl.jinja"}
GATHER_NAMES = {1: "ncl1d_gather", 2: "nchw2d_gather", 3: "ncdhw3d_gather"}
GATHER_WORKGROUP = 64


def _gather(rank: int) -> Variant:
    def refuses(geom: ConvGeometry, caps: DeviceCaps) -> str | None:
        return None if geom.rank == rank else f"is for rank {rank}, the request has rank {geom.rank}"

    def build(geom: ConvGeometry, caps: DeviceCaps) -> tuple[Dispatch, ...]:
        uniforms = [("y_size", geom.y_size), ("in_channels", geom.in_channels),
                    ("out_channels", geom.out_channels), ("in_per_group", geom.in_per_group),
                    ("out_per_group", geom.out_per_group)] + axis_uniforms(geom)
        params = {"rank": rank, "dtype": geom.dtype, "has_bias": geom.has_bias,
                  "workgroup_size": GATHER_WORKGROUP, "uniform_fields": [n for n, _ in uniforms]}
        workgroups = grid(-(-geom.y_size // GATHER_WORKGROUP), caps.limit("maxComputeWorkgroupsPerDimension"))
        return (Dispatch(GATHER_TEMPLATES[rank], params, io_bindings(geom), tuple(uniforms), workgroups),)

    return Variant(
        name=GATHER_NAMES[rank], templates=("_conv-transpose-gather.wgsl.jinja", GATHER_TEMPLATES[rank]),
        summary=f"general rank-{rank} gather: one invocation per output element, every attribute",
        features=(), dtypes=("float32", "float16"), conditions={"rank": rank, "attributes": "all"},
        refuses=refuses, build=build)


VARIANTS: dict[str, Variant] = {v.name: v for v in (_gather(1), _gather(2), _gather(3))}
