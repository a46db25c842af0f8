"""What a variant is: a declaration (name, templates, features, dtypes, the shapes it covers as data,
its tunable tile shape) and one pure function, `configure(geometry, caps, params) -> Plan | Refusal`.

`Variant.configured` is the one door between a variant and the rest (the planner, the tuner, the shader
matrix): it checks the declaration (features, dtype, the CONDITIONS below), resolves the tile params once
(`params`: forced by the caller, else this adapter's tuning-table entry, which the planner looks up and
hands in, else the variant's defaults) and calls configure with them. Coverage is checked by one evaluator
over the CONDITIONS vocabulary, so the same data decides selection and is published in metadata.json; what
only the plan can tell (tiles, workgroup memory, intermediate buffers, subgroup-matrix shapes) is resolved
inside configure. Functions named `*_refusal` say in words why something cannot run (None when it can).
The per-axis stride arithmetic every stride-phase kernel shares (gcd steps, modular inverses) is
`axis_phase` here."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, NamedTuple

from ..caps import DeviceCaps
from .. import finite
from ..plan import Plan, Refusal
from ..shapes import ConvGeometry

DTYPE_BYTES = {"float32": 4, "float16": 2}
NARROWEST_COLUMNS = 32  # the narrowest column tile of phase_gemm and phase_gemm_sgmat (2 subgroups of 16 x 16)
WORKGROUP_STORAGE = "maxComputeWorkgroupStorageSize"
INVOCATIONS_LIMIT = "maxComputeInvocationsPerWorkgroup"


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
    "kernel_multiple_of_stride": ("every kernel dim is a multiple of its stride (given {}): every stride phase has as "
                                  "many taps",
                                  lambda g, v: not v or all(k % s == 0 for k, s in zip(g.kernel, g.strides))),
    "min_taps": ("the kernel has at least {} taps", lambda g, v: math.prod(g.kernel) >= v),
    "no_padding": ("pads and output_padding are all 0 (given {})",
                   lambda g, v: not v or (not any(g.pads_begin) and not any(g.pads_end) and not any(g.output_padding))),
    "min_phases": ("the strides make at least {} stride phases", lambda g, v: math.prod(g.strides) >= v),
    "max_column_fill": ("out-channels fill at most {} of the stride-phase GEMMs' narrowest column tiles (32 wide)",
                        lambda g, v: g.out_per_group / computed_columns(g.out_per_group, NARROWEST_COLUMNS) <= v),
    "min_in_per_group": ("each group has at least {} input channels", lambda g, v: g.in_per_group >= v),
    "min_out_per_group": ("each group has at least {} output channels", lambda g, v: g.out_per_group >= v),
    "min_output": ("the output has at least {} elements", lambda g, v: g.y_size >= v),
    "max_tall_gemm_tiles": ("the stride-phase GEMMs' 128 x 64 tiles make fewer than {} workgroups",
                            lambda g, v: tall_gemm_tiles(g) < v),
    "min_phase_imbalance": ("the deepest stride phase reduces at least {} times the mean phase's taps",
                            lambda g, v: phase_imbalance(g) >= v),
    "min_phase_taps": ("the deepest stride phase has at least {} taps", lambda g, v: max_phase_taps(g) >= v),
    "bias": ("the request has a bias: {}", lambda g, v: g.has_bias == v),
    "input": ("the input is {} (empty: some dim of x is 0)", lambda g, v: (g.x_size == 0) == (v == "empty")),
    # Kernels that multiply padding zeros are exact only on finite data (app/finite.py).
    finite.CONDITION: ("x and w hold only finite values (given {}): the kernel multiplies padding zeros",
                    lambda g, v: not v or g.finite_data),
}

# What configure checks beyond the conditions, in words (published in metadata.json's requirements).
WORKGROUP_MEMORY = {"workgroup_memory": "fits maxComputeWorkgroupStorageSize"}
BUFFERS = {"buffers": "intermediate buffers fit maxStorageBufferBindingSize and maxBufferSize"}


def describe(conditions: dict) -> list[str]:
    return [CONDITIONS[name][0].format(value) for name, value in conditions.items()]


def unmet(conditions: dict, geom: ConvGeometry) -> str | None:
    """The first condition the request does not meet, in words, or None."""
    for name, value in conditions.items():
        words, test = CONDITIONS[name]
        if not test(geom, value):
            return words.format(value)
    return None


def reaches(value: int, threshold: int | None) -> bool:
    """Whether a default rule's `threshold` (an adapter table's: app/tuning_tables.py thresholds) is reached; a
    threshold of None turns its rule off (a variant's NEUTRAL, where no table of the adapter's class has any)."""
    return threshold is not None and value >= threshold


def below(value: int, threshold: int | None) -> bool:
    """Whether `value` is under a default rule's `threshold`; never where the threshold is None (the rule is off)."""
    return threshold is not None and value < threshold


def rules(name: str, caps: DeviceCaps, neutral: dict) -> dict:
    """The thresholds variant `name`'s default rules read on this adapter: its table's or its class's, over
    `neutral`."""
    from ..tuning_tables import thresholds

    return thresholds(name, caps, neutral)


SPLIT = "-split"  # a structure's name suffix where it splits across kz workgroups (a second pass adds the partial sums)


def split_structure(base: str, tiles: dict) -> str:
    """The structure name of `base` run with `tiles`: split where its reduction is spread over kz workgroups."""
    return base + (SPLIT if tiles.get("kz", 1) > 1 else "")


@dataclass(frozen=True)
class Configuration:
    """One named configuration of a tunable variant: the shader structure it runs, the tiles it fixes (render
    params over what each request derives, such as columns fitted to the out-channels) and where it is valid:
    `refusal(geom, caps)` (None where it runs; `valid` says where in words), then the Tunable's refusal of the
    params it resolves to (`Tunable.resolve`)."""

    name: str
    structure: str
    tiles: dict
    valid: str = "wherever the variant's refusal accepts its params"
    refusal: Callable[[ConvGeometry, DeviceCaps], str | None] = lambda geom, caps: None


@dataclass(frozen=True)
class Tunable:
    """A variant's tile shape as render params: its built-in choice, what it refuses, the shader structure a
    resolved set of params runs (`structure`: one of `structures`; the cost model keeps a rate per variant,
    structure and dtype) and its declared configurations. Variant.params resolves a request's params with them;
    the tuner (app/tuner.py) and the planner's candidates enumerate the same."""

    defaults: Callable[[ConvGeometry, DeviceCaps], dict]
    refusal: Callable[[dict, ConvGeometry, DeviceCaps], str | None]
    structure: Callable[[dict], str] = lambda params: ""
    structures: dict = field(default_factory=dict)  # name -> what it is, in words
    configurations: tuple[Configuration, ...] = ()

    def names(self, geom: ConvGeometry, caps: DeviceCaps) -> dict:
        """Every param this variant takes for the request, each with a value of its kind: its defaults' and its
        configurations' switches (a switch the defaults leave off goes unnamed there). What a plan reports beside
        them (`col2im_gemm_vec4`'s splits) is not a param."""
        switches = {k: v for c in self.configurations for k, v in c.tiles.items()}
        return switches | dict(self.defaults(geom, caps))

    def resolve(self, configuration: Configuration, geom: ConvGeometry, caps: DeviceCaps) -> dict | None:
        """The configuration's params for this request (its tiles over the request's defaults), or None where
        the variant refuses them."""
        if configuration.refusal(geom, caps) is not None:
            return None
        defaults = dict(self.defaults(geom, caps))
        # A switch off that the defaults do not name stays unnamed: params that leave a switch off leave it out
        # (phase_gemm's cl, rv, ri), so that a stored choice names only params the defaults name.
        params = defaults | {k: v for k, v in configuration.tiles.items() if v or k in defaults}
        return params if self.refusal(params, geom, caps) is None else None


@dataclass(frozen=True)
class Variant:
    name: str
    templates: tuple[str, ...]
    summary: str
    conditions: dict  # CONDITIONS name -> value: the shapes it covers
    # Pure: (geometry, caps, resolved params; {} for a variant with no Tunable) -> its passes and buffers.
    configure: Callable[[ConvGeometry, DeviceCaps, dict], Plan | Refusal]
    features: tuple[str, ...] = ()  # WebGPU features it needs
    dtypes: tuple[str, ...] = ("float32", "float16")
    tunable: Tunable | None = None
    requires: dict = field(default_factory=dict)  # what configure checks, in words (WORKGROUP_MEMORY, ...)
    # With finite_data: the inputs whose NaN or Inf it would turn into wrong values (scanned on the GPU
    # during a call on CPU data); the rest it multiplies only by their real factors.
    unsafe_nonfinite: tuple[str, ...] = finite.INPUTS
    # The variant whose tuning-table entries and measured choices this one shares: a seed name shares its
    # successor's (app/variants/seed.py), whose plans it makes under its own name.
    tuned_as: str = ""

    @property
    def tuning_name(self) -> str:
        """The name tuning tables file this variant's params and choices under."""
        return self.tuned_as or self.name

    def params(self, geom: ConvGeometry, caps: DeviceCaps, forced: dict | None = None,
               tuned: dict | None = None) -> dict:
        """The tile params for this request: `forced` (the caller's, the tuner's candidates) if given, else
        `tuned` (this adapter's table entry), over the defaults; params the Tunable refuses for this request
        fall back to the defaults: no table or caller can make a variant plan an invalid launch."""
        if self.tunable is None:
            return {}
        defaults = dict(self.tunable.defaults(geom, caps))
        override = forced if forced is not None else tuned
        if not override:
            return defaults
        params = defaults | override
        return params if self.tunable.refusal(params, geom, caps) is None else defaults

    def configured(self, geom: ConvGeometry, caps: DeviceCaps, reason: str = "", forced: dict | None = None,
                   tuned: dict | None = None) -> Plan | Refusal:
        """The declaration's checks (features, dtype, conditions), then configure with the resolved params
        (`params`), then the plan completed with this variant's name, `reason` and finite-data policy."""
        missing = [f for f in self.features if not caps.has(f)]
        if missing:
            return Refusal(f"needs device feature(s) {missing}")
        if geom.dtype not in self.dtypes:
            return Refusal(f"does not support dtype {geom.dtype}")
        failed = unmet(self.conditions, geom)
        if failed:
            return Refusal("covers only requests where " + failed)
        plan = self.configure(geom, caps, self.params(geom, caps, forced, tuned))
        if isinstance(plan, Refusal):
            return plan
        finite_only, scanned = finite.policy(self.conditions, self.unsafe_nonfinite)
        return replace(plan, variant=self.name, reason=reason, finite_only=finite_only, scanned=scanned)

    def structure(self, tiles: dict) -> str:
        """The shader structure a plan of these tiles runs ("" for a variant of one structure)."""
        return self.tunable.structure(tiles) if self.tunable is not None and tiles else ""

    def why_not(self, geom: ConvGeometry, caps: DeviceCaps) -> str | None:
        """None when the variant covers the request on this device with its default params, else the reason
        in words (app/planner.py `refusal` asks the same with this adapter's tuning table)."""
        out = self.configured(geom, caps)
        return out.why_not if isinstance(out, Refusal) else None

    def requirements(self) -> dict:
        return {"features": list(self.features), "dtypes": list(self.dtypes), "shapes": dict(self.conditions),
                "shapes_in_words": describe(self.conditions), "workgroup_memory": None, "buffers": None} | self.requires


def loads_split_evenly(edge: int, threads: int, k: int) -> bool:
    """Whether `threads` invocations can stage a tile edge of `edge` rows (or columns) by `k` reduction steps, each the
    same number of loads: the edge is a multiple of the invocation count, or the invocation count a multiple of the edge
    whose quotient divides k (the invocations past the edge take further steps)."""
    return edge % threads == 0 or (threads % edge == 0 and k % (threads // edge) == 0)


def workgroup_memory_refusal(need: int, caps: DeviceCaps) -> str | None:
    """Why `need` bytes of workgroup memory do not fit the device (None when they do)."""
    limit = caps.limit(WORKGROUP_STORAGE)
    return f"needs {need} bytes of workgroup memory, the device allows {limit}" if need > limit else None


def io(geom: ConvGeometry) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(reads, writes) of a pass that computes y from x, w and the bias."""
    return ("x", "w", "b") if geom.has_bias else ("x", "w"), ("y",)


class AxisPhase(NamedTuple):
    """One axis's stride-phase arithmetic: g = gcd(s, d); the taps reaching an output are k = first,
    first + step, ... with step = s/g; di = d/g; inv = di^-1 mod step (0 when step is 1) finds `first`
    in closed form."""

    g: int
    step: int
    di: int
    inv: int


def axis_phase(s: int, d: int) -> AxisPhase:
    g = math.gcd(s, d)
    step, di = s // g, d // g
    return AxisPhase(g, step, di, pow(di, -1, step) if step > 1 else 0)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def padded_depth(channels: int, step: int, taps: int = 1, splits: int = 1) -> int:
    """Multiply-adds one output of a tile runs (Plan.tile_depth) where the reduction walks `taps` x chunks of `step`
    in-channels, the last chunk padded, and `splits` workgroups share the steps."""
    return ceil_div(ceil_div(channels, step) * taps, splits) * step


def phase_rows(geom: ConvGeometry) -> int:
    """Outputs of the largest stride phase: batch x ceil(out / s) along every axis (a phase GEMM's rows)."""
    return geom.batch * math.prod(-(-o // s) for o, s in zip(geom.out_spatial, geom.strides))


def workgroup_count(geom: ConvGeometry, t: dict) -> int:
    """Workgroups of the stride-phase GEMMs on tiles of t["tm"] rows x t["tn"] columns."""
    return (geom.group * math.prod(geom.strides) * -(-phase_rows(geom) // t["tm"])
            * -(-geom.out_per_group // t["tn"]))


def computed_columns(columns: int, width: int) -> int:
    """The columns that tiles `width` wide compute over `columns` out-channels, the last tile's padding included."""
    return -(-columns // width) * width


def fitted_width(columns: int, widths: tuple[int, ...]) -> int:
    """The widest of `widths` whose column tiles compute the fewest columns over `columns` out-channels: 192 of them
    take three 64-column tiles (192 computed), not two of 128 (256, a quarter of the work thrown away)."""
    return min(widths, key=lambda w: (computed_columns(columns, w), -w))


def tall_gemm_tiles(geom: ConvGeometry) -> int:
    """Workgroups of the stride-phase GEMMs on tiles of 128 rows x 64 columns: phase_gemm_sgmat's narrowest tile
    of 4 result matrices per subgroup (2 x 2 subgroups of 16 x 16 matrices), its fastest structure."""
    return workgroup_count(geom, {"tm": 128, "tn": 64})


def channels_last_pays(geom: ConvGeometry) -> bool:
    """Whether the stride-phase GEMMs should read A from x repacked channels-last (`cl`): at stride 1 with a
    kernel of 2+ taps. There every tap reads the same pixels shifted, and the GEMM's rows fetch 16-byte runs of
    in-channels from the copy; at stride 2+ and on 1x1 kernels the rows are already runs of x's pixels, and the
    copy is a pass of its own (docs/decisions.md#channels-last). phase_gemm_sgmat gathers A where it splits a
    stride-1 GEMM across workgroups (its own rule)."""
    return all(s == 1 for s in geom.strides) and math.prod(geom.kernel) >= 2


def _axis_phase_taps(geom: ConvGeometry) -> list[int]:
    """Taps of the stride phase with the most, along each axis: ceil(k / step)."""
    return [ceil_div(k, axis_phase(s, d).step) for k, s, d in zip(geom.kernel, geom.strides, geom.dilations)]


def max_phase_taps(geom: ConvGeometry) -> int:
    """Taps of the stride phase with the most: ceil(k / step) along every axis (what one output sums per
    in-channel)."""
    return math.prod(_axis_phase_taps(geom))


def reaching_taps(geom: ConvGeometry) -> int:
    """Taps that reach the output reached by the most: its stride phase's, and never more than the input's positions
    along an axis (each tap of a phase reads its own): a 1x1 input reaches every output through one tap."""
    return math.prod(min(taps, i) for taps, i in zip(_axis_phase_taps(geom), geom.in_spatial))


def phase_imbalance(geom: ConvGeometry) -> float:
    """The deepest stride phase's taps over the mean of the phases that have any (1 where all reduce as many: k a
    multiple of the stride; cyclegan's k3 s2 in 2D: 4 against 2.25). A launch of all the phase GEMMs at once
    lasts as long as its deepest tiles."""
    phases = math.prod(axis_phase(s, d).step for s, d in zip(geom.strides, geom.dilations))
    return max_phase_taps(geom) * phases / math.prod(geom.kernel)


def axis_uniforms(geom: ConvGeometry, closed_form: bool = False) -> list[tuple[str, int]]:
    """Per-axis sizes as i32 uniform fields: in0, out0, k0, s0, d0, pad0, step0 (and gcd0, inv0 with
    `closed_form`), in1, ..."""
    fields = []
    for a, (i, o, k, s, d, pb) in enumerate(zip(geom.in_spatial, geom.out_spatial, geom.kernel, geom.strides,
                                                 geom.dilations, geom.pads_begin)):
        phase = axis_phase(s, d)
        fields += [(f"in{a}", i), (f"out{a}", o), (f"k{a}", k), (f"s{a}", s), (f"d{a}", d),
                   (f"pad{a}", pb), (f"step{a}", phase.step)]
        if closed_form:
            fields += [(f"gcd{a}", phase.g), (f"inv{a}", phase.inv)]
    return fields


def channel_uniforms(geom: ConvGeometry) -> list[tuple[str, int]]:
    return [("batch", geom.batch), ("y_size", geom.y_size), ("in_channels", geom.in_channels),
            ("out_channels", geom.out_channels), ("in_per_group", geom.in_per_group),
            ("out_per_group", geom.out_per_group)]
