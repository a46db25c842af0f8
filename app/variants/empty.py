"""Zero-size input: the output is the bias (or zeros); one cheap fill, no reads of x or w."""
from __future__ import annotations

import math

from ..plan import Plan, dispatch, grid
from .base import Variant

TEMPLATE = "conv-transpose-empty-input.wgsl.jinja"
WORKGROUP = 256


def configure(geom, caps, _params) -> Plan:
    uniforms = [("y_size", geom.y_size), ("out_channels", geom.out_channels),
                ("out_spatial", math.prod(geom.out_spatial))]
    params = {"dtype": geom.dtype, "has_bias": geom.has_bias, "workgroup_size": WORKGROUP}
    workgroups = grid(-(-geom.y_size // WORKGROUP), caps.limit("maxComputeWorkgroupsPerDimension"))
    reads = ("b",) if geom.has_bias else ()
    return Plan((dispatch(TEMPLATE, params, reads, ("y",), uniforms, workgroups),))


VARIANTS = (Variant(
    name="empty_input_fill", templates=(TEMPLATE,),
    summary="zero-size input: y is the bias broadcast (or zeros), x and w are never read",
    conditions={"input": "empty"}, configure=configure),)
