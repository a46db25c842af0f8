"""The general gather kernels, one template per rank: every attribute, the fallback for everything."""
from __future__ import annotations

from ..plan import Plan, dispatch, grid
from .base import Variant, axis_uniforms, channel_uniforms, io

TEMPLATES = {1: "conv-transpose1d-ncl.wgsl.jinja", 2: "conv-transpose2d-nchw.wgsl.jinja",
             3: "conv-transpose3d-ncdhw.wgsl.jinja"}
NAMES = {1: "ncl1d_gather", 2: "nchw2d_gather", 3: "ncdhw3d_gather"}
WORKGROUP = 64


def _gather(rank: int) -> Variant:
    def configure(geom, caps, _params) -> Plan:
        uniforms = channel_uniforms(geom) + axis_uniforms(geom)
        params = {"rank": rank, "dtype": geom.dtype, "has_bias": geom.has_bias, "workgroup_size": WORKGROUP}
        workgroups = grid(-(-geom.y_size // WORKGROUP), caps.limit("maxComputeWorkgroupsPerDimension"))
        return Plan((dispatch(TEMPLATES[rank], params, *io(geom), uniforms, workgroups),))

    return Variant(
        name=NAMES[rank], templates=("_conv-transpose-gather.wgsl.jinja", TEMPLATES[rank]),
        summary=f"general rank-{rank} gather: one invocation per output element, visiting only the taps that reach it",
        conditions={"rank": [rank]}, configure=configure)


VARIANTS = (_gather(1), _gather(2), _gather(3))
