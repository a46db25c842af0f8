"""Rank-1 ConvTranspose in stride-phase form with workgroup-memory tiles (vocoder-style upsampling).

Output t = o + pad_begin = q*s + r takes taps k = r + j*s from inputs i = q - j, so each phase is a dense
correlation: no products with inserted zeros, no per-output tap search. A workgroup stages the input
window of its q-range and its phases' taps per in-channel chunk, then each invocation accumulates a
positions x channels block of outputs in registers. Dilation 1 only (the phase taps of a dilated kernel
are not an arithmetic progression of k, and vocoders do not dilate their upsampling layers).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..plan import Plan, Refusal, dispatch, grid
from .base import WORKGROUP_MEMORY, WORKGROUP_STORAGE, Tunable, Variant, io, padded_depth, workgroup_memory_refusal

NAME = "ncl1d_phase_tiled"
TEMPLATE = "conv-transpose1d-phase-tiled.wgsl.jinja"
TARGET_INVOCATIONS = 64  # the workgroup size aimed for
MAX_PHASES = 64     # phases per workgroup; larger strides split their phases over several workgroups
POSITIONS = 4       # consecutive q (same phase) per invocation, at least
ACCUMULATORS = 16   # outputs per invocation to aim for
CHANNELS = 4        # consecutive out-channels per invocation
MAX_M_LANES = 4     # out-channel block <= 16
CHUNK = 8           # in-channels staged per barrier pair


@dataclass(frozen=True)
class Tiles:
    taps: int       # ceil(kernel / stride): the most taps any phase has
    phases: int     # phases per workgroup
    q_lanes: int
    positions: int
    m_lanes: int
    channels: int
    chunk: int

    @property
    def q_tile(self) -> int:
        return self.q_lanes * self.positions

    @property
    def m_block(self) -> int:
        return self.m_lanes * self.channels

    @property
    def workgroup_bytes(self) -> int:
        window = self.q_tile + self.taps - 1
        return 4 * self.chunk * (window + self.m_block * self.phases * self.taps)

    def params(self) -> dict:
        return {"taps": self.taps, "phases": self.phases, "q_lanes": self.q_lanes, "positions": self.positions,
                "m_lanes": self.m_lanes, "channels": self.channels, "chunk": self.chunk}


def _q_range(geom) -> tuple[int, int]:
    """First and last q (Python floor division: pad_begin may be negative) over the output."""
    s, pad, out_len = geom.strides[0], geom.pads_begin[0], geom.out_spatial[0]
    return pad // s, (out_len - 1 + pad) // s


def _default_tiles(geom, limit: int) -> Tiles:
    s, kernel = geom.strides[0], geom.kernel[0]
    taps = -(-kernel // s)
    phases = -(-s // -(-s // MAX_PHASES))
    channels = max(1, min(CHANNELS, geom.out_per_group))
    # Staging costs about 1/(phases*m_block) x loads and 1/q_tile weight loads per multiply-add:
    # balance them within the invocation budget.
    lanes = max(1, TARGET_INVOCATIONS // phases)
    m_lanes = max(1, min(MAX_M_LANES, 8 // phases, -(-geom.out_per_group // channels), lanes))
    q_lo, q_hi = _q_range(geom)
    # Fewer out-channels per invocation (small groups) take more positions, to keep ~16 accumulators.
    positions = min(max(POSITIONS, ACCUMULATORS // channels), q_hi - q_lo + 1)
    # Short outputs get fewer q lanes (a power of two, so that few pipelines serve many lengths).
    q_lanes = max(1, min(lanes // m_lanes, 1 << (-(-(q_hi - q_lo + 1) // positions) - 1).bit_length()))
    tiles = Tiles(taps, phases, q_lanes, positions, m_lanes, channels, min(CHUNK, geom.in_per_group))
    # A large kernel shrinks the chunk, the out-channel block, then the q tile; past that the variant refuses.
    while tiles.workgroup_bytes > limit and tiles.chunk > 1:
        tiles = Tiles(**(tiles.params() | {"chunk": max(1, tiles.chunk // 2)}))
    while tiles.workgroup_bytes > limit and tiles.m_lanes > 1:
        tiles = Tiles(**(tiles.params() | {"m_lanes": max(1, tiles.m_lanes // 2)}))
    while tiles.workgroup_bytes > limit and tiles.q_lanes > 1:
        tiles = Tiles(**(tiles.params() | {"q_lanes": max(1, tiles.q_lanes // 2)}))
    return tiles


def default_params(geom, caps) -> dict:
    return _default_tiles(geom, caps.limit(WORKGROUP_STORAGE)).params()


def params_refusal(t: dict, geom, caps) -> str | None:
    """Why a tile shape cannot run this request on this device (None when it can). taps and phases follow
    from the kernel and stride (the plan depends on them), so only the other sizes are free."""
    names = ("taps", "phases", "q_lanes", "positions", "m_lanes", "channels", "chunk")
    if set(t) != set(names) or any(not isinstance(t[k], int) or t[k] < 1 for k in names):
        return f"tile params must be the positive integers {names}"
    structural = default_params(geom, caps)
    if (t["taps"], t["phases"]) != (structural["taps"], structural["phases"]):
        return "taps and phases follow from the kernel and the stride"
    invocations = t["phases"] * t["q_lanes"] * t["m_lanes"]
    if invocations > caps.limit("maxComputeInvocationsPerWorkgroup") or invocations > caps.limit("maxComputeWorkgroupSizeX"):
        return f"{invocations} invocations per workgroup exceed the device's limit"
    if Tiles(**t).workgroup_bytes > caps.limit(WORKGROUP_STORAGE):
        return "the tiles exceed the device's workgroup memory"
    return None


TUNABLE = Tunable(default_params, params_refusal)


def configure(geom, caps, params: dict) -> Plan | Refusal:
    tiles = Tiles(**params)
    refusal = workgroup_memory_refusal(tiles.workgroup_bytes, caps)
    if refusal:
        return Refusal(refusal)
    q_lo, q_hi = _q_range(geom)
    q_tiles = -(-(q_hi - q_lo + 1) // tiles.q_tile)
    phase_blocks = -(-geom.strides[0] // tiles.phases)
    m_blocks = -(-geom.out_per_group // tiles.m_block)
    workgroups = geom.batch * geom.group * m_blocks * phase_blocks * q_tiles
    uniforms = [("in_len", geom.in_spatial[0]), ("out_len", geom.out_spatial[0]), ("kernel", geom.kernel[0]),
                ("stride", geom.strides[0]), ("pad", geom.pads_begin[0]), ("in_channels", geom.in_channels),
                ("out_channels", geom.out_channels), ("in_per_group", geom.in_per_group),
                ("out_per_group", geom.out_per_group), ("group", geom.group), ("q_lo", q_lo),
                ("q_tiles", q_tiles), ("phase_blocks", phase_blocks), ("m_blocks", m_blocks),
                ("workgroups", workgroups)]
    render = {"dtype": geom.dtype, "has_bias": geom.has_bias} | tiles.params()
    folded = grid(workgroups, caps.limit("maxComputeWorkgroupsPerDimension"))
    invocations = tiles.phases * tiles.q_lanes * tiles.m_lanes
    # every phase of a workgroup runs the deepest phase's taps over whole chunks (absent ones staged as zeros)
    return Plan((dispatch(TEMPLATE, render, *io(geom), uniforms, folded, invocations=invocations),),
                tiles=tiles.params(), workgroup_bytes=tiles.workgroup_bytes,
                tile_outputs=tiles.phases * tiles.q_tile * tiles.m_block,
                tile_depth=padded_depth(geom.in_per_group, tiles.chunk, tiles.taps))


VARIANTS = (Variant(
    name=NAME, templates=(TEMPLATE,),
    summary="rank-1 stride-phase tiles: input window and phase taps staged in workgroup memory per "
            "in-channel chunk, a positions x out-channels block of outputs per invocation (dilation 1)",
    conditions={"rank": [1], "dilation": 1, "input": "nonempty", "finite_data": True},
    configure=configure, tunable=TUNABLE, requires=WORKGROUP_MEMORY),)
