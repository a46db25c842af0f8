"""Validation and shape inference for ConvTranspose, in pure Python.

Everything here runs before any GPU work. Each refusal raises ConvTransposeError with a message that
names the input or attribute at fault. The rules follow ../shared/notes/semantics.md; where the spec
and onnxruntime disagree (SAME_* with a kernel smaller than the stride) we follow the spec: the output
is I * stride and the pads go negative. An output_shape longer than the input reaches is refused, as onnxruntime
refuses it (docs/decisions.md, output-shape-bound).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import contract
from .errors import ConvTransposeError

# Indices are computed in 32-bit integers on the GPU; past this an index would wrap.
MAX_ELEMENTS = 2**31 - 1


@dataclass(frozen=True)
class ConvGeometry:
    """A validated request: every size the planner and the kernels need, pads already resolved."""

    dtype: str
    batch: int
    in_channels: int
    out_channels: int
    group: int
    in_spatial: tuple[int, ...]
    out_spatial: tuple[int, ...]
    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    output_padding: tuple[int, ...]
    has_bias: bool
    # False when x or w holds a NaN or an Inf (set by the kernel from the data): the planner then keeps to
    # variants whose every product is a real one, so non-finite values spread exactly as IEEE says.
    finite_data: bool = True

    @property
    def rank(self) -> int:
        return len(self.in_spatial)

    @property
    def in_per_group(self) -> int:
        return self.in_channels // self.group

    @property
    def out_per_group(self) -> int:
        return self.out_channels // self.group

    @property
    def x_shape(self) -> tuple[int, ...]:
        return (self.batch, self.in_channels, *self.in_spatial)

    @property
    def w_shape(self) -> tuple[int, ...]:
        return (self.in_channels, self.out_per_group, *self.kernel)

    @property
    def y_shape(self) -> tuple[int, ...]:
        return (self.batch, self.out_channels, *self.out_spatial)

    @property
    def x_size(self) -> int:
        return math.prod(self.x_shape)

    @property
    def y_size(self) -> int:
        return math.prod(self.y_shape)

    def multiply_adds(self) -> int:
        """Multiply-adds that land inside the output (taps that fall into padding are not counted)."""
        per_axis = 1
        for i, k, s, d, pb, o in zip(self.in_spatial, self.kernel, self.strides, self.dilations,
                                     self.pads_begin, self.out_spatial):
            per_axis *= sum(1 for a in range(i) for t in range(k) if 0 <= a * s + t * d - pb < o)
        return self.batch * self.in_channels * self.out_per_group * per_axis


def _shape(name: str, shape) -> tuple[int, ...]:
    if not isinstance(shape, (list, tuple)):
        raise ConvTransposeError(f"input '{name}': shape must be a list of integers, got {shape!r}", field=name)
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int):
            raise ConvTransposeError(f"input '{name}': shape entries must be integers, got {shape!r}", field=name)
        if d < 0:
            raise ConvTransposeError(f"input '{name}': shape {list(shape)} has a negative dimension", field=name)
    if math.prod(shape) > MAX_ELEMENTS or any(d > MAX_ELEMENTS for d in shape):
        raise ConvTransposeError(f"input '{name}': shape {list(shape)} has more than 2^31-1 elements", field=name)
    return tuple(shape)


def _ints(name: str, value, length: int, minimum: int) -> tuple[int, ...]:
    if not isinstance(value, (list, tuple)) or any(isinstance(v, bool) or not isinstance(v, int)
                                                   for v in value):
        raise ConvTransposeError(f"attribute '{name}' must be a list of integers, got {value!r}", field=name)
    if len(value) != length:
        raise ConvTransposeError(
            f"attribute '{name}' must have {length} entries for this rank, got {len(value)}: {list(value)}",
            field=name)
    if any(v < minimum for v in value):
        raise ConvTransposeError(f"attribute '{name}' entries must be >= {minimum}, got {list(value)}", field=name)
    if any(v > MAX_ELEMENTS for v in value):
        raise ConvTransposeError(f"attribute '{name}' entries must be <= 2^31-1 (32-bit on the GPU), got {list(value)}",
                                 field=name)
    return tuple(value)


def normalize_attributes(attributes: dict, rank: int) -> dict:
    """Fill the manifest's defaults in and check every attribute's type, length and range."""
    specs = contract.attribute_specs()
    unknown = sorted(set(attributes) - set(specs))
    if unknown:
        # a misspelt name would otherwise be dropped and its default used in its place
        raise ConvTransposeError(f"unknown attribute(s) {unknown}; known: {sorted(specs)}", field=unknown[0])
    out = {}
    for name, spec in specs.items():
        value = attributes.get(name)
        if value is None:
            default = spec["default"]
            if default is None and "per_axis_default" in spec:
                count = 2 * rank if spec["length"] == "2n" else rank
                default = [spec["per_axis_default"]] * count
            out[name] = default
            continue
        if spec["type"] == "string":
            if value not in spec["allowed"]:
                raise ConvTransposeError(f"attribute '{name}' must be one of {spec['allowed']}, got {value!r}",
                                         field=name)
            out[name] = value
        elif spec["type"] == "int":
            if isinstance(value, bool) or not isinstance(value, int) or not spec["min"] <= value <= MAX_ELEMENTS:
                raise ConvTransposeError(
                    f"attribute '{name}' must be an integer from {spec['min']} to 2^31-1, got {value!r}", field=name)
            out[name] = value
        elif name == "output_shape":
            # onnxruntime's kernel also takes the full [N, M, O1..On]; its head is checked against y in infer
            if isinstance(value, (list, tuple)) and len(value) == rank + 2:
                out[name] = tuple(value[:2]) + _ints(name, value[2:], rank, spec["min"])
            else:
                out[name] = _ints(name, value, rank, spec["min"])
        else:
            length = 2 * rank if spec["length"] == "2n" else rank
            out[name] = _ints(name, value, length, spec["min"])
    return out


def _auto_pads(total: int, auto_pad: str) -> tuple[int, int]:
    if auto_pad == "SAME_UPPER":
        begin = total // 2
        return begin, total - begin
    return total - total // 2, total // 2


def _output_shape_targets(output_shape, batch, out_channels, spatial, kernel, strides, dilations):
    """output_shape's spatial dims, refused where onnxruntime refuses them (docs/decisions.md, output-shape-bound)."""
    given = list(output_shape)
    if len(given) == len(spatial) + 2:
        head = given[:2]
        if any(isinstance(v, bool) or not isinstance(v, int) for v in head) or head != [batch, out_channels]:
            raise ConvTransposeError(
                f"attribute 'output_shape' = {given}: its full form [N, M, spatial...] must start with y's "
                f"N = {batch} and M = {out_channels}; or give the spatial dims alone", field="output_shape")
        given = given[2:]
    for axis, (o, i, s, k, d) in enumerate(zip(given, spatial, strides, kernel, dilations)):
        # past s*I + (k-1)*d only a longer input produces the output: onnxruntime refuses it in every auto_pad
        # mode, ONNX's reference in NOTSET and VALID
        most = s * i + (k - 1) * d
        if o > most:
            raise ConvTransposeError(
                f"attribute 'output_shape' = {list(output_shape)}: axis {axis} asks for {o} outputs, past the "
                f"{most} = stride*I + (k-1)*dilation that an input of {i} reaches (a longer output needs a longer "
                f"input; onnxruntime refuses it too)", field="output_shape")
    return given


def _check_dtype(dtypes: dict[str, str]) -> str:
    allowed = contract.dtype_features()
    for name, dtype in dtypes.items():
        if dtype not in allowed:
            raise ConvTransposeError(f"input '{name}': dtype {dtype!r} is not supported; allowed: {sorted(allowed)}",
                                     field=name)
    if len(set(dtypes.values())) != 1:
        # x's dtype is the request's (the output's too): the first input that differs from it is at fault
        odd = next(name for name, dtype in dtypes.items() if dtype != dtypes["x"])
        raise ConvTransposeError(f"inputs must share one dtype (type constraint T), got {dtypes}", field=odd)
    return dtypes["x"]


def infer(x_shape, w_shape, b_shape=None, attributes: dict | None = None,
          dtypes: dict[str, str] | None = None) -> ConvGeometry:
    """Validate a request and infer its output; raises ConvTransposeError naming what is wrong."""
    x = _shape("x", x_shape)
    w = _shape("w", w_shape)
    ranks = contract.supported_ranks()
    if len(x) - 2 not in ranks:
        raise ConvTransposeError(
            f"input 'x' must have rank {min(ranks) + 2} to {max(ranks) + 2} ([N, C, spatial...]), got shape {list(x)}",
            field="x")
    rank = len(x) - 2
    if len(w) != len(x):
        raise ConvTransposeError(f"input 'w' must have the same rank as 'x' ({len(x)}), got shape {list(w)}", field="w")
    dtype = _check_dtype(dtypes or {"x": "float32"})
    attrs = normalize_attributes(attributes or {}, rank)

    batch, channels = x[0], x[1]
    if w[0] != channels:
        raise ConvTransposeError(f"input 'w': w.shape[0] = {w[0]} must equal the input channels C = {channels}",
                                 field="w")
    group = attrs["group"]
    if channels % group:
        raise ConvTransposeError(f"attribute 'group' = {group} does not divide the input channels C = {channels}",
                                 field="group")
    kernel = w[2:]
    if any(k < 1 for k in kernel):
        raise ConvTransposeError(f"input 'w': kernel dims {list(kernel)} must be >= 1", field="w")
    if attrs["kernel_shape"] is not None and tuple(attrs["kernel_shape"]) != kernel:
        raise ConvTransposeError(
            f"attribute 'kernel_shape' = {list(attrs['kernel_shape'])} does not match w's spatial dims {list(kernel)}",
            field="kernel_shape")
    out_channels = w[1] * group
    if b_shape is not None:
        b = _shape("b", b_shape)
        if len(b) != 1 or b[0] != out_channels:
            raise ConvTransposeError(f"input 'b' must be 1-D of length M = {out_channels}, got shape {list(b)}",
                                     field="b")

    strides, dilations = attrs["strides"], attrs["dilations"]
    output_padding = attrs["output_padding"]
    for axis, (op, s, d) in enumerate(zip(output_padding, strides, dilations)):
        if op >= max(s, d):
            raise ConvTransposeError(
                f"attribute 'output_padding' = {list(output_padding)}: axis {axis} must be < max(stride, dilation) = {max(s, d)}",
                field="output_padding")

    spatial = x[2:]
    natural = [s * (i - 1) + op + (k - 1) * d + 1
               for i, s, op, k, d in zip(spatial, strides, output_padding, kernel, dilations)]
    for axis, n in enumerate(natural):
        if n > MAX_ELEMENTS:  # every kernel index i*s + t*d - pad stays below this extent
            raise ConvTransposeError(
                f"axis {axis}: the full output extent s*(I-1) + output_padding + (k-1)*d + 1 = {n} is past 2^31-1 "
                f"(32-bit indices on the GPU); check 'strides' {list(strides)} and 'dilations' {list(dilations)}",
                field="y")  # no one input or attribute: the output y itself is too long to index
    auto_pad = attrs["auto_pad"]
    if attrs["output_shape"] is not None:
        targets, source = _output_shape_targets(attrs["output_shape"], batch, out_channels, spatial, kernel,
                                                strides, dilations), "output_shape"
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        targets, source = [i * s for i, s in zip(spatial, strides)], "auto_pad"
    else:
        targets, source = None, "pads"

    if targets is not None:
        begins, ends = zip(*(_auto_pads(n - t, auto_pad) for n, t in zip(natural, targets)))
    elif auto_pad == "VALID":
        begins, ends = (0,) * rank, (0,) * rank
    else:
        begins, ends = attrs["pads"][:rank], attrs["pads"][rank:]
    out_spatial = tuple(n - b - e for n, b, e in zip(natural, begins, ends))
    if any(o <= 0 for o in out_spatial):
        raise ConvTransposeError(f"output spatial shape {list(out_spatial)} (from '{source}') has a dim <= 0",
                                 field=source)
    if math.prod((batch, out_channels, *out_spatial)) > MAX_ELEMENTS:
        raise ConvTransposeError(f"output shape {[batch, out_channels, *out_spatial]} has more than 2^31-1 elements",
                                 field="y")

    return ConvGeometry(
        dtype=dtype, batch=batch, in_channels=channels, out_channels=out_channels, group=group,
        in_spatial=spatial, out_spatial=out_spatial, kernel=kernel, strides=tuple(strides),
        dilations=tuple(dilations), pads_begin=tuple(begins), pads_end=tuple(ends),
        output_padding=tuple(output_padding), has_bias=b_shape is not None)
