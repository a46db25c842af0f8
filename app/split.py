"""Splits a request that does not fit the device into pieces that do, before any GPU work.

A piece is a sub-request: a range of images, of output channels (whole groups, or one group's output
channels) and of output rows along the first spatial axis, with the input slices that reach them and
the pads that place them. Each piece is planned on its own; the GPU layer only runs pieces, and the
kernel writes each piece's output at its offsets. A piece fits when every buffer it binds (x, w, b, y
and the plan's intermediate buffers) is within maxStorageBufferBindingSize and maxBufferSize and every
dispatch's grid is within maxComputeWorkgroupsPerDimension (plan.grid folds counts into 2D first, so on
real limits, 65535^2 workgroups, only byte limits ever split). Pieces are found by bisecting the piece
that does not fit along the axis that shrinks the buffer at fault; when a piece of one image, one output
channel and one output row still does not fit, the request is refused with ConvTransposeError.

Pure Python: unit-tested in CPython (tests/test_split.py), used by app/kernel.py in the page.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

from .caps import DeviceCaps
from .errors import ConvTransposeError
from .lazy_numpy import np
from .plan import DispatchTooLarge, Plan
from .shapes import ConvGeometry
from .variants.base import DTYPE_BYTES

BYTE_LIMITS = ("maxStorageBufferBindingSize", "maxBufferSize")
READ_PARTS = 8  # a split request's y comes back in pieces of at most this fraction of it (plan_pieces) ...
READ_PARTS_FROM = 8 * 2**20  # ... once y is this large: below, a piece's transient copies cost nothing
MAX_PIECES = 4096  # past this the request is refused: that many submissions would be a hang, not a result


class Unfittable(ConvTransposeError):
    """A valid request that no split fits into this device's limits (a refusal, not a coverage question)."""


@dataclass(frozen=True)
class Piece:
    """One sub-request. Ranges are [start, stop) in the full request's coordinates."""

    geom: ConvGeometry
    images: tuple[int, int]
    groups: tuple[int, int]  # groups of the full request this piece covers
    channels: tuple[int, int]  # output channels within one group; (0, out_per_group) when whole groups
    rows: tuple[int, int]  # output rows along the first spatial axis
    in_rows: tuple[int, int]  # input rows along the first spatial axis that reach them

    def x_index(self, full: ConvGeometry) -> tuple[slice, ...]:
        cg = full.in_per_group
        return (slice(*self.images), slice(self.groups[0] * cg, self.groups[1] * cg), slice(*self.in_rows))

    def w_index(self, full: ConvGeometry) -> tuple[slice, ...]:
        cg = full.in_per_group
        return (slice(self.groups[0] * cg, self.groups[1] * cg), slice(*self.channels))

    def y_channels(self, full: ConvGeometry) -> slice:
        mg = full.out_per_group
        if self.channels == (0, mg):
            return slice(self.groups[0] * mg, self.groups[1] * mg)
        return slice(self.groups[0] * mg + self.channels[0], self.groups[0] * mg + self.channels[1])

    def y_index(self, full: ConvGeometry) -> tuple[slice, ...]:
        return (slice(*self.images), self.y_channels(full), slice(*self.rows))

    def inputs(self, full: ConvGeometry, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The piece's input arrays, contiguous (the whole arrays when the piece is the whole request)."""
        out = {"x": arrays["x"][self.x_index(full)], "w": arrays["w"][self.w_index(full)]}
        if "b" in arrays:
            out["b"] = arrays["b"][self.y_channels(full)]
        return {name: np.ascontiguousarray(arr) for name, arr in out.items()}


def whole(geom: ConvGeometry) -> Piece:
    rows = geom.out_spatial[0]
    return Piece(geom, (0, geom.batch), (0, geom.group), (0, geom.out_per_group), (0, rows),
                 (0, geom.in_spatial[0]))


def _sub(full: ConvGeometry, images, groups, channels, rows) -> Piece:
    """The piece of `full` over these ranges, with its own geometry."""
    mg = full.out_per_group
    n_groups = groups[1] - groups[0]
    if channels != (0, mg):
        assert n_groups == 1, "a split inside a group's output channels covers one group"
    group, out_channels = (n_groups, n_groups * mg) if channels == (0, mg) else (1, channels[1] - channels[0])
    i_full, s, d, k, pb = (full.in_spatial[0], full.strides[0], full.dilations[0], full.kernel[0],
                           full.pads_begin[0])
    o0, o1 = rows
    if (o0, o1) == (0, full.out_spatial[0]):
        in_rows, pad_begin, pad_end, out_pad = (0, i_full), pb, full.pads_end[0], full.output_padding[0]
    else:
        if i_full == 0:
            i0 = i1 = 0
        else:
            # Input rows that can reach output rows [o0, o1): o = i*s + t*d - pb for some tap t. The floor
            # keeps the piece's begin pad >= the full one's lower bound; a row that reaches nothing is harmless
            # (kernels compute per output), and at least one row stays so the piece is never "empty input".
            i0 = min(max((o0 + pb - (k - 1) * d) // s, 0), i_full - 1)
            i1 = min(max((o1 - 1 + pb) // s + 1, i0 + 1), i_full)
        in_rows = (i0, i1)
        pad_begin = pb + o0 - i0 * s
        natural = s * (i1 - i0 - 1) + (k - 1) * d + 1 if i1 > i0 else 0
        pad_end, out_pad = natural - pad_begin - (o1 - o0), 0
    geom = replace(full, batch=images[1] - images[0], in_channels=n_groups * full.in_per_group,
                   out_channels=out_channels, group=group,
                   in_spatial=(in_rows[1] - in_rows[0], *full.in_spatial[1:]),
                   out_spatial=(o1 - o0, *full.out_spatial[1:]),
                   pads_begin=(pad_begin, *full.pads_begin[1:]), pads_end=(pad_end, *full.pads_end[1:]),
                   output_padding=(out_pad, *full.output_padding[1:]))
    return Piece(geom, images, groups, channels, rows, in_rows)


def _halves(lo: int, hi: int) -> tuple[tuple[int, int], tuple[int, int]]:
    mid = (lo + hi) // 2
    return (lo, mid), (mid, hi)


def bisect(full: ConvGeometry, piece: Piece, axes: tuple[str, ...]) -> tuple[Piece, Piece] | None:
    """Two pieces that together cover `piece`, cut along the first of `axes` that has more than one entry."""
    for axis in axes:
        if axis == "images" and piece.images[1] - piece.images[0] > 1:
            a, b = _halves(*piece.images)
            return (_sub(full, a, piece.groups, piece.channels, piece.rows),
                    _sub(full, b, piece.groups, piece.channels, piece.rows))
        if axis == "groups" and piece.groups[1] - piece.groups[0] > 1:
            a, b = _halves(*piece.groups)
            return (_sub(full, piece.images, a, piece.channels, piece.rows),
                    _sub(full, piece.images, b, piece.channels, piece.rows))
        if axis == "channels" and piece.groups[1] - piece.groups[0] == 1 and piece.channels[1] - piece.channels[0] > 1:
            a, b = _halves(*piece.channels)
            return (_sub(full, piece.images, piece.groups, a, piece.rows),
                    _sub(full, piece.images, piece.groups, b, piece.rows))
        if axis == "rows" and piece.rows[1] - piece.rows[0] > 1:
            a, b = _halves(*piece.rows)
            return (_sub(full, piece.images, piece.groups, piece.channels, a),
                    _sub(full, piece.images, piece.groups, piece.channels, b))
    return None


# Which cuts shrink which buffer, in the order tried (the cheapest to run first: whole images, whole groups).
SHRINKS = {
    "x": ("images", "groups", "rows"),
    "w": ("groups", "channels"),
    "b": ("groups", "channels"),
    "y": ("images", "groups", "channels", "rows"),
    "scratch": ("images", "groups", "channels", "rows"),
    "grid": ("images", "groups", "channels", "rows"),
}


def byte_limit(caps: DeviceCaps) -> int:
    return min(caps.limit(name) for name in BYTE_LIMITS)


def buffer_bytes(geom: ConvGeometry) -> dict[str, int]:
    item = DTYPE_BYTES[geom.dtype]
    sizes = {"x": geom.x_size * item, "w": math.prod(geom.w_shape) * item, "y": geom.y_size * item}
    if geom.has_bias:
        sizes["b"] = geom.out_channels * item
    return sizes


def overflow(geom: ConvGeometry, plan: Plan | None, limit: int) -> tuple[str, str] | None:
    """(buffer kind, words) for the first buffer of the piece over `limit` bytes, or None."""
    for name, nbytes in buffer_bytes(geom).items():
        if nbytes > limit:
            return name, f"input/output '{name}' needs {nbytes} bytes"
    if plan is not None:
        for name, nbytes in {**plan.scratch, **plan.prepared}.items():
            if nbytes > limit:
                return "scratch", f"variant {plan.variant}'s buffer '{name}' needs {nbytes} bytes"
    return None


def plan_pieces(geom: ConvGeometry, caps: DeviceCaps, plan: Callable[[ConvGeometry], Plan]) -> list[tuple[Piece, Plan]]:
    """The pieces (with their plans) whose outputs tile the request's output; [(whole, plan)] when it fits.

    `plan` plans one piece (the planner, with the caller's forced variant); it may raise DispatchTooLarge.
    Raises ConvTransposeError, before any GPU work, when a smallest piece still does not fit."""
    if geom.y_size == 0:  # nothing runs on the GPU
        return [(whole(geom), plan(geom))]
    limit = byte_limit(caps)
    y_bytes = buffer_bytes(geom)["y"]
    read_part = -(-y_bytes // READ_PARTS) if y_bytes >= READ_PARTS_FROM else 0
    split = False
    done: list[tuple[Piece, Plan]] = []
    todo = [whole(geom)]
    while todo:
        piece = todo.pop()
        fault = overflow(piece.geom, None, limit)
        piece_plan = None
        if fault is None:
            try:
                piece_plan = plan(piece.geom)
            except DispatchTooLarge as exc:
                fault = ("grid", str(exc))
            else:
                fault = overflow(piece.geom, piece_plan, limit)
        if fault is None and split and read_part and buffer_bytes(piece.geom)["y"] > read_part:
            # A request that splits anyway reads y back in parts of at most a READ_PARTS-th of it: what a piece
            # holds outside y while it is read (its GPU buffers, the mapped copy) stays a fraction of y.
            halves = bisect(geom, piece, SHRINKS["y"])
            if halves is not None:
                todo += [halves[1], halves[0]]
                continue
        if fault is None:
            done.append((piece, piece_plan))
            continue
        split = True
        kind, words = fault
        halves = bisect(geom, piece, SHRINKS[kind])
        if halves is None:
            raise Unfittable(
                f"the request does not fit this device even split into pieces: a piece of "
                f"{piece.images[1] - piece.images[0]} image(s), output channels {_channel_words(geom, piece)} and "
                f"output rows {list(piece.rows)} still does not fit: {words}, over the limit of {limit} bytes "
                f"(min of {', '.join(BYTE_LIMITS)})" if kind != "grid" else
                f"the request does not fit this device even split into pieces: {words}")
        if len(done) + len(todo) + 2 > MAX_PIECES:
            raise Unfittable(f"the request would need more than {MAX_PIECES} pieces to fit this device's "
                                     f"limits ({words}, limit {limit} bytes)")
        todo += [halves[1], halves[0]]  # the first half is popped next: pieces come out in output order
    return done


def _channel_words(full: ConvGeometry, piece: Piece) -> str:
    s = piece.y_channels(full)
    return f"[{s.start}, {s.stop})"


# y as numpy, and as much again: the inputs, the piece being read, numpy's temporaries (a JavaScript caller's y
# leaves the heap as one copy made straight from numpy's: app/bridge.py call)
HOST_COPIES = 2


def host_refusal(geom: ConvGeometry, heap_max: int | None) -> ConvTransposeError | None:
    """Why y cannot be read back to this runtime's memory, or None: in Pyodide the WebAssembly heap (heap_max,
    4 GiB, less what the runtime itself holds) must take HOST_COPIES copies of y; None (CPython) checks
    nothing here."""
    if heap_max is None:
        return None
    y_bytes = geom.y_size * DTYPE_BYTES[geom.dtype]
    room = heap_max - RUNTIME_BYTES
    if HOST_COPIES * y_bytes <= room:
        return None
    return ConvTransposeError(
        f"the output {list(geom.y_shape)} is {y_bytes / 2**20:.0f} MiB: read to the CPU it needs {HOST_COPIES} copies in "
        f"this runtime's {heap_max / 2**30:.0f} GiB WebAssembly memory, which has room for about "
        f"{room / HOST_COPIES / 2**20:.0f} MiB of output; take output='gpu' (in one piece) or call it on fewer images",
        "y")


RUNTIME_BYTES = 512 * 2**20  # of the WebAssembly heap: Pyodide, numpy and the package, with room to spare


async def run_pieces(gpu, geom: ConvGeometry, arrays: dict[str, np.ndarray],
                     pieces: list[tuple[Piece, Plan]]) -> tuple[np.ndarray, float | None]:
    """Runs each piece's plan on `gpu` (anything with execute(plan, geom, inputs) -> (y, gpu_ms)) and
    assembles y. Returns y and the summed GPU time (None when any piece had no timestamp).

    Memory: y is allocated once; a gpu with `reads_into` reads each piece straight into its place in y where
    that place is contiguous (whole images, groups or channels), else into one piece-sized array copied in,
    so the host holds y plus at most one piece. An output the runtime cannot hold is refused first."""
    refusal = host_refusal(geom, gpu.heap_max() if hasattr(gpu, "heap_max") else None)
    if refusal is not None:
        raise refusal
    try:
        y = np.empty(geom.y_shape, dtype=geom.dtype)
    except MemoryError:
        raise ConvTransposeError(f"the output {list(geom.y_shape)} does not fit in this runtime's memory", "y") from None
    total: float | None = 0.0
    for piece, plan in pieces:
        place = y[piece.y_index(geom)]
        if getattr(gpu, "reads_into", False) and place.flags.c_contiguous:
            _, gpu_ms = await gpu.execute(plan, piece.geom, piece.inputs(geom, arrays), into=place)
        else:
            part, gpu_ms = await gpu.execute(plan, piece.geom, piece.inputs(geom, arrays))
            place[...] = part
            del part
        total = None if gpu_ms is None or total is None else total + gpu_ms
    return y, total
