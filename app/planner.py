"""Chooses the variant for a request. The rules are the ordered table RULES: the first rule whose
variant covers the request (and whose feature/limit needs the device meets) wins. The general gather
kernels come last and cover everything, so a request always has a plan."""
from __future__ import annotations

from .caps import DeviceCaps
from .errors import ConvTransposeError
from .plan import Plan
from .shapes import ConvGeometry
from .variants import VARIANTS

# (variant name, why it is preferred when it applies)
RULES: list[tuple[str, str]] = [
    ("empty_input_fill", "the input is empty: y is the bias (or zeros), no reads of x or w"),
    ("ncl1d_gather", "general 1D gather kernel"),
    ("nchw2d_gather", "general 2D gather kernel"),
    ("ncdhw3d_gather", "general 3D gather kernel"),
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
    for name, why in RULES:
        if VARIANTS[name].why_not(geom, caps) is None:
            return VARIANTS[name].plan(geom, caps, why)
    raise AssertionError("the general kernels cover every valid request")
