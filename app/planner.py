"""Chooses the variant for a request.

The rules are the ordered table RULES, data in one place: (variant, when, why). The first rule whose
variant covers the request on this device (its own conditions, features and limits) and whose `when`
conditions hold (the shape class where measurement showed it wins; same vocabulary as the variants'
conditions) is chosen. The general gather kernels come last and cover everything, so a request always
has a plan. A tuning table measured on this very adapter may name, for the request's shape class, a variant
that beat the rules' choice there (app/tuned.py): it is taken instead when it covers the request. The
measurements behind each rule are in the README's variant table.
"""
from __future__ import annotations

from . import tuned
from .caps import DeviceCaps
from .errors import ConvTransposeError
from .plan import Plan
from .shapes import ConvGeometry
from .variants import VARIANTS
from .variants.base import unmet

RULES: list[tuple[str, dict, str]] = [
    ("empty_input_fill", {}, "the input is empty: y is the bias (or zeros), no reads of x or w"),
    ("ncl1d_phase_tiled", {"min_in_per_group": 8, "min_out_per_group": 4},
     "1D with enough channels per group: stride-phase taps, input tile and weights in workgroup memory"),
    ("nchw2d_grouped_stride_phase", {},
     "2D grouped/depthwise with stride >= 2: each output visits only its stride phase's taps"),
    ("nchw2d_phase_gemm_tiled", {},
     "2D dense with stride >= 2: an implicit GEMM per stride phase, no zero multiplies, register-blocked tiles"),
    ("conv1x1_gemm_tiled_reg", {"min_in_per_group": 16, "min_out_per_group": 16},
     "1x1 kernel, stride 1, no padding, enough channels: a register-blocked GEMM"),
    ("stride1_implicit_gemm", {},
     "stride 1: a forward convolution with tap-reversed weights as an implicit GEMM, no columns, no scatter"),
    ("nchw2d_col2im", {"min_in_per_group": 32},
     "2D with many in-channels: weights packed once, register-blocked GEMM into columns, col2im fold"),
    ("ncdhw3d_col2im", {"min_in_per_group": 16},
     "3D with many in-channels: weights packed once, register-blocked GEMM into columns, col2im fold"),
    ("ncl1d_gather", {}, "general 1D gather kernel"),
    ("nchw2d_gather", {}, "general 2D gather kernel"),
    ("ncdhw3d_gather", {}, "general 3D gather kernel"),
]


def plan(geom: ConvGeometry, caps: DeviceCaps, variant: str | None = None) -> Plan:
    if variant is not None:
        chosen = VARIANTS.get(variant)
        if chosen is None:
            raise ConvTransposeError(f"unknown variant {variant!r}; known: {sorted(VARIANTS)}")
        refusal = chosen.why_not(geom, caps)
        if refusal:
            raise ConvTransposeError(f"variant {variant!r} does not cover this request: it {refusal}")
        return chosen.plan(geom, caps, "forced by the caller")
    for name, when, why in RULES:
        if VARIANTS[name].why_not(geom, caps) is None and unmet(when, geom) is None:
            preferred = tuned.preferred_variant(geom, caps, name)
            if preferred in VARIANTS and VARIANTS[preferred].why_not(geom, caps) is None:
                return VARIANTS[preferred].plan(geom, caps, f"measured faster than {name} for this shape class "
                                                            f"on this adapter (tuning/{tuned.file_name(caps)})")
            return VARIANTS[name].plan(geom, caps, why)
    raise AssertionError("the general kernels cover every valid request")
