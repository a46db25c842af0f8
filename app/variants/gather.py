"""The general gather kernels, one template per rank: every attribute, the fallback for everything."""
from __future__ import annotations

from ..plan import Plan, dispatch, grid
from .base import Variant, axis_uniforms, channel_uniforms, io, reaching_taps

TEMPLATES = {1: "conv-transpose1d-ncl.wgsl.jinja", 2: "conv-transpose2d-nchw.wgsl.jinja",
             3: "conv-transpose3d-ncdhw.wgsl.jinja"}
NAMES = {1: "ncl1d_gather", 2: "nchw2d_gather", 3: "ncdhw3d_gather"}
WORKGROUP = 64


def _gather(rank: int) -> Variant:
    def configure(geom, caps, _params) -> Plan:
        uniforms = channel_uniforms(geom) + axis_uniforms(geom)
        params = {"rank": rank, "dtype": geom.dtype, "has_bias": geom.has_bias, "workgroup_size": WORKGROUP}
        workgroups = grid(-(-geom.y_size // WORKGROUP), caps.limit("maxComputeWorkgroupsPerDimension"))
        # One output an invocation: a workgroup lasts as long as its deepest output's reduction (the cost model's
        # tile_depth), not the layer's mean (a 1x1 input reaches a quarter of a k4 s2 d2 layer's outputs, each through
        # all its in-channels: docs/decisions.md#cost-model).
        return Plan((dispatch(TEMPLATES[rank], params, *io(geom), uniforms, workgroups),), tile_outputs=WORKGROUP,
                    tile_depth=geom.in_per_group * reaching_taps(geom))

    return Variant(
        name=NAMES[rank], templates=("_conv-transpose-gather.wgsl.jinja", TEMPLATES[rank]),
        summary=f"general rank-{rank} gather: one invocation per output element, visiting only the taps that reach it",
        conditions={"rank": [rank]}, configure=configure)


VARIANTS = (_gather(1), _gather(2), _gather(3))
