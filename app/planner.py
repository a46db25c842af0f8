"""Chooses the variant for a request: validated geometry -> Plan (app/plan.py).

The rules are the ordered table RULES, data in one place: (variant, when, why). Going down the rules, a
rule whose `when` conditions hold (the shape class where measurement showed it wins; same vocabulary as the
variants' conditions, plus `adapter`: "hardware" or "software", for rules measured on one kind) has its
variant configured (app/variants/base.py Variant.configured: the variant's own conditions, features, then
its pure `configure`, once); the first that returns a Plan, not a Refusal, is kept. The general gather
kernels come last and cover everything, so a request always has a plan.

The planner is the only reader of tuning tables (app/tuning_tables.py): `tables` (None: the tables in use;
[]: none, as the tuner measures) may hold, for this adapter and the request's shape class, a variant's tile
params, which the planner hands to Variant.configured as `tuned`, and a variant that beat the rules' choice
there, which is taken instead when it covers the request. Params a caller forces (`params`, with a forced
`variant`) win over the table's. The measurements behind each rule are in the README's variant table.
"""
from __future__ import annotations

from . import tuning_tables
from .caps import DeviceCaps
from .errors import ConvTransposeError
from .plan import Plan, Refusal
from .shapes import ConvGeometry
from .variants import VARIANTS
from .variants.base import Variant, unmet
from .variants.phase_gemm import FILL

_HALO_WHEN = {"adapter": "hardware", "group": ["dense"], "stride": 1, "min_taps": 2, "min_output": 1048576,
              "max_tall_gemm_tiles": FILL, "min_in_per_group": 8, "min_out_per_group": 8}
_HALO_WHY = ("a GPU with subgroup matrices of the storage type, stride 1, a large output, where the stride-phase "
             "GEMM on matrices does not configure: x staged once per chunk of in-channels as a halo that every tap's "
             "matrices read")
_COLS_WHEN = {"adapter": "hardware", "min_in_per_group": 256, "min_out_per_group": 8, "min_phase_taps": 2,
              "min_output": 262144}
_COLS_WHY = ("a GPU, float32, stride phases of 2+ taps that are unequal or too few rows to fill it: GEMM + col2im, "
             "every tile of the column GEMM as deep")
_GROUPED_2D_WHY = "2D grouped/depthwise with stride >= 2: stride-phase taps unrolled, consecutive outputs stored wide"

RULES: list[tuple[str, dict, str]] = [
    ("empty_input_fill", {}, "the input is empty: y is the bias (or zeros), no reads of x or w"),
    # Few out-channels, several stride phases, every phase as deep (kernel a multiple of the stride): every phase in
    # one GEMM whose rows are out-channels x phases. The phase GEMMs below put the out-channels in their columns,
    # one GEMM a phase: where those fill at most 2/3 of a 32-column tile, that many columns idle, and their stores
    # land a stride apart. H200, session 22, the `full` layers of this class, the rules with and without this one
    # side by side, two rounds (docs/h200/session22/call3/ab.md), float32 and float16 ms: fcn8s_upscore8_k16s8 (21
    # out-channels, 64 phases) 0.125 -> 0.081 and 0.089 -> 0.084, vnet_up_k2s2_c16 (16, 8) 0.450 -> 0.252 and 0.332
    # -> 0.294, fsrcnn_deconv_k9s3p4 (1, 9) 0.952 -> 0.089 and 0.674 -> 0.095, dcgan_rgb_k4s2p1 (3, 4) 0.263 -> 0.062
    # and 0.185 -> 0.066. With 32 out-channels it lost, forced on its first tiles (call1): hifigan_v3_up3_k8s4p2
    # 0.030 -> 0.032 and 0.015 -> 0.031, vocoder_64 0.071 -> 0.111. Small outputs keep the phase GEMMs, whose
    # reduction splits fill the GPU: the `small` tier's layers of this class (16K-32K outputs) ran 1.15-1.40x slower
    # (call3/ab.md); the bound is the tensor-core rule's.
    ("uniform_phase_gemm", {"adapter": "hardware", "group": ["dense"], "min_phases": 2, "max_column_fill": 2 / 3,
                            "min_output": 262144},
     "a GPU, dense, few out-channels, stride phases as deep as each other: every phase in one GEMM whose rows are "
     "out-channels x phases, its stores along y's rows"),
    # The stride-phase GEMMs: tensor cores where the device has matrices for the dtype and the output fills
    # the GPU; below that (a DCGAN head: 32K outputs) the scalar GEMM with its split reduction is faster (0.08
    # ms against 0.16).
    ("phase_gemm_sgmat", {"adapter": "hardware", "group": ["dense"], "min_output": 262144,
                          "min_in_per_group": 8, "min_out_per_group": 8},
     "a GPU with subgroup matrices for the dtype, dense, enough outputs: stride-phase GEMMs on tensor cores"),
    # Real GPUs. The stride-1 halo kernel (x staged once per chunk of in-channels) won three stride-1 float16 shapes
    # in session 11 against the stride-phase GEMM on its small tiles: 1M outputs whose 128 x 64 tiles make under FILL
    # workgroups, 2D 3x3 and 5x5 and 3D 3x3x3 (docs/h200/session11/s1.txt: 0.075 ms against 0.081, 0.150 against
    # 0.187, 0.172 against 0.220); it lost 1.25-2.4x where those tiles filled the GPU, 1.3x at 256K outputs and 3x
    # on 1x1 kernels. Since session 16 the GEMM spreads and splits those tiles (phase_gemm_sgmat's
    # SPREAD_MIN_WORKGROUPS) and was faster on all 16 shapes, both forced in one call (docs/h200/session16/call2/x/
    # bench-s1.txt): those three 0.057 ms against 0.075, 0.119 against 0.151, 0.136 against 0.172. So the halo comes
    # after the dense GEMM rule: the plan where that GEMM does not configure, and autotuning's candidate (covering)
    # where its `when` holds.
    # The seed's names of a rule's variant (app/variants/seed.py) come just before it with the same `when`:
    # where the seed's variant covers the request, the plan is the successor's under the seed's name.
    ("ncdhw3d_implicit_sgmat", _HALO_WHEN, _HALO_WHY),
    ("ncdhw3d_implicit_sgmat_bias", _HALO_WHEN, _HALO_WHY),
    ("stride1_halo_sgmat", _HALO_WHEN, _HALO_WHY),
    # float32 on GPUs (the column GEMM takes no other dtype): GEMM + col2im where the stride-phase GEMMs are uneven
    # or thin. Each stride phase's GEMM reduces its own taps, and one launch lasts as long as its deepest tiles
    # (cyclegan_up's k3 s2: phases of 1, 2, 2 and 4 taps; every phase cut to 2 taps ran 0.096 ms against 0.132,
    # session 19); with few rows a phase cannot fill the GPU unsplit (hifigan_k16s8p4: 8 phases of 256 rows).
    # The column GEMM's tiles all reduce the in-channels alone, and it has taps / stride-phases times the
    # phases' outputs to spread. Its costs: a column buffer written and read back, and a second pass, paid off
    # with 2+ taps a phase (else the columns are y and nothing is gained), 256+ in-channels and 256K+ outputs.
    # H200, session 20, side by side through the bench path (docs/h200/session20/call3/ab-*/ab.md, two rounds):
    # `large` cyclegan_up 0.1324 -> 0.1075 ms, stride1_256_3x3 0.1905 -> 0.1785; `full` hifigan_k16s8p4 0.0763 ->
    # 0.0627, stride1_3x3 0.0884 -> 0.0680, dcgan_batch8 0.0454 -> 0.0451. The holdout was not looked at first.
    ("col2im_gemm_vec4", _COLS_WHEN | {"max_tall_gemm_tiles": FILL}, _COLS_WHY),
    ("col2im_gemm_vec4", _COLS_WHEN | {"min_phase_imbalance": 1.5}, _COLS_WHY),
    ("phase_gemm", {"adapter": "hardware", "group": ["dense"], "min_in_per_group": 8, "min_out_per_group": 8},
     "a GPU, dense with enough channels: one implicit GEMM per stride phase, 8x8 register blocks, weights "
     "packed once, the reduction split where outputs are few"),
    # Grouped with wide groups is dense GEMMs side by side (StyleGAN2's g2 upsampler: 1.0 ms against the
    # grouped stride-phase kernel's 1.9); narrow groups (16 channels: 10x slower here) keep the grouped kernel.
    # On tensor cores where the dtype has matrices, by the dense rule's output bound (`large`
    # grouped_g2_wide_k4s2p1, 256 channels a group, float16: 0.090 ms against phase_gemm's 0.363).
    ("phase_gemm_sgmat", {"adapter": "hardware", "min_output": 262144, "min_in_per_group": 64, "min_out_per_group": 64},
     "a GPU with subgroup matrices for the dtype, grouped with wide groups: the stride-phase GEMMs per group on "
     "tensor cores"),
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
    # GPUs only: software adapters' defaults never block (app/variants/seed.py), a forced seed name's do.
    ("nchw2d_grouped_stride_phase_blocked", {"adapter": "hardware"}, _GROUPED_2D_WHY),
    ("nchw2d_grouped_stride_phase_blocked_bias", {"adapter": "hardware"}, _GROUPED_2D_WHY),
    ("nchw2d_grouped_stride_phase", {}, _GROUPED_2D_WHY),
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


def _configured(name: str, geom: ConvGeometry, caps: DeviceCaps, reason: str, params: dict | None,
                tables: list[dict] | None) -> Plan | Refusal:
    return VARIANTS[name].configured(geom, caps, reason, forced=params,
                                     tuned=tuning_tables.lookup(VARIANTS[name].tuning_name, geom, caps, tables))


def _forced(geom: ConvGeometry, caps: DeviceCaps, variant: str, params: dict | None,
            tables: list[dict] | None) -> Plan | Refusal:
    if variant not in VARIANTS:
        raise ConvTransposeError(f"unknown variant {variant!r}; known: {sorted(VARIANTS)}")
    return _configured(variant, geom, caps, "forced by the caller", params, tables)


def refusal(geom: ConvGeometry, caps: DeviceCaps, variant: str, params: dict | None = None,
            tables: list[dict] | None = None) -> str | None:
    """Why `variant`, forced, does not cover the request on this device (None when it does)."""
    out = _forced(geom, caps, variant, params, tables)
    return out.reason if isinstance(out, Refusal) else None


def covering(geom: ConvGeometry, caps: DeviceCaps, tables: list[dict] | None = None) -> list[Variant]:
    """The variants whose rules cover the request and that configure for it, the planner's choice first, then
    the rules' order; one per kernel (a seed name and its successor run the same shaders): autotune's
    candidates (app/autotune.py)."""
    chosen = VARIANTS[plan(geom, caps, tables=tables).variant]
    out, kernels = [chosen], {chosen.tuning_name}
    for name, when, why in RULES:
        shapes = {k: v for k, v in when.items() if k != "adapter"}
        variant = VARIANTS[name]
        if (variant.tuning_name in kernels or not _adapter_fits(when, caps) or unmet(shapes, geom) is not None
                or isinstance(_configured(name, geom, caps, why, None, tables), Refusal)):
            continue
        out.append(variant)
        kernels.add(variant.tuning_name)
    return out


def plan(geom: ConvGeometry, caps: DeviceCaps, variant: str | None = None, params: dict | None = None,
         tables: list[dict] | None = None) -> Plan:
    """The request's plan: `variant` forced (with `params` forced over its defaults and the table's), else
    the rules' choice (or the table's faster one); `tables` None: the tables in use, []: none."""
    if variant is not None:
        out = _forced(geom, caps, variant, params, tables)
        if isinstance(out, Refusal):
            raise ConvTransposeError(f"variant {variant!r} does not cover this request: it {out.reason}")
        return out
    if params is not None:
        raise ConvTransposeError("forced params need a forced variant", "variant")
    for name, when, why in RULES:
        shapes = {k: v for k, v in when.items() if k != "adapter"}
        if not _adapter_fits(when, caps) or unmet(shapes, geom) is not None:
            continue
        chosen = _configured(name, geom, caps, why, None, tables)
        if isinstance(chosen, Refusal):
            continue
        measured = VARIANTS[name].tuning_name  # a seed name: its successor's measurements
        preferred = tuning_tables.preferred_variant(geom, caps, measured, tables)
        if preferred in VARIANTS:
            faster = _configured(preferred, geom, caps, f"measured faster than {measured} for this shape class on "
                                                        f"this adapter (tuning/{tuning_tables.file_name(caps)})", None,
                                 tables)
            if not isinstance(faster, Refusal):
                return faster
        return chosen
    raise AssertionError("the general kernels cover every valid request")
