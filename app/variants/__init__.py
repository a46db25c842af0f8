"""Every implementation variant, by name. Each family lives in its own module."""
from __future__ import annotations

from . import (cols_gemm, empty, gather, gemm, grouped, halo_sgmat, implicit, phase1d, phase_gemm, phase_gemm2d,
               phase_gemm_sgmat, seed, uniform_phase)
from .base import Variant

FAMILIES = (empty, uniform_phase, halo_sgmat, phase_gemm_sgmat, phase_gemm, phase1d, grouped, phase_gemm2d, gemm,
            cols_gemm, implicit, gather, seed)
VARIANTS: dict[str, Variant] = {v.name: v for module in FAMILIES for v in module.VARIANTS}
