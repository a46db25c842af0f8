"""Chooses the variant for a request: validated geometry -> configured Launch.

The rules are the ordered table RULES, data in one place: (variant, when, why). Going down the rules, a
rule whose `when` conditions hold (the shape class where measurement showed it wins; same vocabulary as the
variants' conditions, plus `adapter`: "hardware" or "software", for rules measured on one kind) has its
variant configured (app/variants/base.py Variant.configured: the variant's own conditions, features, then
its `configure`, once); the first that returns a Launch, not a Refusal, is kept. The general gather kernels come last and cover everything, so a request always
has a plan. A tuning table measured on this very adapter may name, for the request's shape class, a variant
that beat the rules' choice there (app/tuning_tables.py): it is taken instead when it covers the request. The
measurements behind each rule are in the README's variant table.
"""
from __future__ import annotations

from . import tuning_tables
from .caps import DeviceCaps
from .errors import ConvTransposeError
from .launch import Launch, Refusal
from .shapes import ConvGeometry
from .variants import VARIANTS
from .variants.base import unmet

RULES: list[tuple[str, dict, str]] = [
    ("empty_input_fill", {}, "the input is empty: y is the bias (or zeros), no reads of x or w"),
    # Real GPUs (measured on an H200, docs/h200/). At stride 1 with a real kernel and a large output, x staged
    # once per chunk as a halo beats the stride-phase GEMM's per-tap gather (float16: stride1_3d 0.113 ms
    # against 0.162, stride1_256_3x3 0.076 against 0.102). It lost where its tiles are few (256K outputs: 0.076
    # against 0.057 split) and on 1x1 kernels (one tap: nothing to share, 0.231 ms against 0.079).
    ("stride1_halo_sgmat", {"adapter": "hardware", "group": ["dense"], "stride": 1, "min_taps": 2,
                            "min_output": 1048576, "min_in_per_group": 8, "min_out_per_group": 8},
     "a GPU with subgroup matrices of the storage type, stride 1, a large output: x staged once per chunk of "
     "in-channels as a halo that every tap's matrices read"),
    # The stride-phase GEMMs: tensor cores where the device has matrices for the dtype and the output fills
    # the GPU; below that (a DCGAN head: 32K outputs) the scalar GEMM with its split reduction is faster (0.08
    # ms against 0.16).
    ("phase_gemm_sgmat", {"adapter": "hardware", "group": ["dense"], "min_output": 262144,
                          "min_in_per_group": 8, "min_out_per_group": 8},
     "a GPU with subgroup matrices for the dtype, dense, enough outputs: stride-phase GEMMs on tensor cores"),
    ("phase_gemm", {"adapter": "hardware", "group": ["dense"], "min_in_per_group": 8, "min_out_per_group": 8},
     "a GPU, dense with enough channels: one implicit GEMM per stride phase, 8x8 register blocks, weights "
     "packed once, the reduction split where outputs are few"),
    # Grouped with wide groups is dense GEMMs side by side (StyleGAN2's g2 upsampler: 1.0 ms against the
    # grouped stride-phase kernel's 1.9); narrow groups (16 channels: 10x slower here) keep the grouped kernel.
    ("phase_gemm", {"adapter": "hardware", "min_in_per_group": 64, "min_out_per_group": 64},
     "a GPU, grouped with wide groups: the same GEMMs per group"),
    # Every adapter from here on: all requests on software adapters (measured on SwiftShader, where these ran
    # 2-5x faster than phase_gemm's shapes), and what the rules above leave on GPUs.
    ("ncl1d_phase_tiled", {"min_in_per_group": 8, "min_out_per_group": 4},
     "1D with enough channels per group: stride-phase taps, input tile and weights in workgroup memory"),
    ("ncl1d_grouped_stride_phase", {},
     "1D grouped/depthwise with stride >= 2: stride-phase taps unrolled, consecutive outputs stored wide"),
    ("ncl1d_col2im", {"min_in_per_group": 32},
     "1D with many in-channels and few output channels per group (the phase kernel needs 4), as an iSTFT: "
     "a GEMM over in-channels into every tap's columns, then an overlap-add fold"),
    ("nchw2d_grouped_stride_phase", {},
     "2D grouped/depthwise with stride >= 2: stride-phase taps unrolled, consecutive outputs stored wide"),
    ("ncdhw3d_grouped_stride_phase", {},
     "3D grouped/depthwise with stride >= 2: stride-phase taps unrolled, consecutive outputs stored wide"),
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


def _adapter_fits(when: dict, caps: DeviceCaps) -> bool:
    """A rule's `adapter` ("hardware" or "software", app/caps.py is_software): rules measured on one kind."""
    kind = when.get("adapter")
    return kind is None or (kind == "software") == caps.is_software


def plan(geom: ConvGeometry, caps: DeviceCaps, variant: str | None = None) -> Launch:
    if variant is not None:
        chosen = VARIANTS.get(variant)
        if chosen is None:
            raise ConvTransposeError(f"unknown variant {variant!r}; known: {sorted(VARIANTS)}")
        launch = chosen.configured(geom, caps, "forced by the caller")
        if isinstance(launch, Refusal):
            raise ConvTransposeError(f"variant {variant!r} does not cover this request: it {launch.reason}")
        return launch
    for name, when, why in RULES:
        shapes = {k: v for k, v in when.items() if k != "adapter"}
        if not _adapter_fits(when, caps) or unmet(shapes, geom) is not None:
            continue
        launch = VARIANTS[name].configured(geom, caps, why)
        if isinstance(launch, Refusal):
            continue
        preferred = tuning_tables.preferred_variant(geom, caps, name)
        if preferred in VARIANTS:
            faster = VARIANTS[preferred].configured(geom, caps, f"measured faster than {name} for this shape class "
                                                                f"on this adapter (tuning/{tuning_tables.file_name(caps)})")
            if not isinstance(faster, Refusal):
                return faster
        return launch
    raise AssertionError("the general kernels cover every valid request")
