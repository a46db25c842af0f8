"""ONNX models in CPython (the `onnx` package; host side only, never in Pyodide): a file's ConvTranspose layers,
the one-node models cut from it and the ConvTranspose chain model that `python -m app model` runs.

A layer is runnable when its weights (and bias) are initializers and shape inference gives its input a
static shape; every other ConvTranspose node comes back as Skipped with the reason. A file that is not ONNX,
or a model onnx's checker rejects, raises ModelError with one line that names the problem.

A file is untrusted: it is read only if it is a regular file (a FIFO would block, /dev/zero read without end)
within the byte budget; its external data (tensors stored in other files) is read from the model's own folder
only, each location checked (relative, no `..`, no link out of the folder, a regular file, offset and length
inside it, exactly the tensor's bytes) and all of it within that budget, before onnx's checker sees the
model; `check` runs the package's own validation on a layer's shapes and attributes (app/shapes.py), so that a
bad attribute is named before any runtime sees it.

Chains: consecutive runnable layers form a chain when the next layer's x is computed from the previous
layer's y (directly or through other ops) and has its shape. The chain model keeps the ConvTranspose nodes
alone, with their weights, each feeding the next: the ops between them (Relu, Add, ...) are dropped, on both
sides of the comparison, because the package implements ConvTranspose only (docs/models.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import ExternalDataInfo

from .cases import FileRefused, open_regular, read_regular
from .errors import ConvTransposeError
from .shapes import ConvGeometry, infer

DTYPES = {TensorProto.FLOAT: "float32", TensorProto.FLOAT16: "float16"}
ELEM = {name: elem for elem, name in DTYPES.items()}
OPSET_DOMAINS = ("", "ai.onnx")
READ_BUDGET = 1 << 30  # bytes of model file and external data read by default (the tool's --budget)


class ModelError(ValueError):
    """The file cannot be used at all (one line, naming the problem)."""


@dataclass(frozen=True)
class Layer:
    index: int  # among the model's ConvTranspose nodes, in graph order
    name: str
    x: str
    w: str
    b: str | None
    y: str
    x_shape: tuple
    w_shape: tuple
    y_shape: tuple | None
    dtype: str
    attributes: dict  # plain values, for display and for the kernel
    node: onnx.NodeProto = field(repr=False, compare=False)

    def describe(self) -> str:
        attrs = "".join(f" {k}={','.join(map(str, v)) if isinstance(v, list) else v}"
                        for k, v in self.attributes.items())
        dims = lambda s: ",".join(map(str, s))  # noqa: E731
        out = f" -> y[{dims(self.y_shape)}]" if self.y_shape else ""
        return f"x[{dims(self.x_shape)}] w[{dims(self.w_shape)}]{' +b' if self.b else ''}{attrs}{out}"


@dataclass(frozen=True)
class Skipped:
    index: int
    name: str
    reason: str


@dataclass
class ModelLayers:
    path: str
    model: onnx.ModelProto  # with inferred shapes
    layers: list[Layer]
    skipped: list[Skipped]

    @property
    def opset(self) -> int:
        return next(o.version for o in self.model.opset_import if o.domain in OPSET_DOMAINS)


def read(path: str | Path, budget: int = READ_BUDGET) -> ModelLayers:
    """The ConvTranspose layers of an ONNX file (ModelError: not a regular file, not ONNX, past `budget` bytes
    with its external data, external data that is not the model folder's, rejected by the checker)."""
    try:
        data = read_regular(path, budget)
    except FileRefused as exc:
        raise ModelError(f"{path}: {exc}") from None
    size = len(data)
    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError, RecursionError) as exc:
        raise ModelError(f"{path}: not an ONNX model (protobuf could not parse it: {_first_line(exc)})") from None
    del data
    if not model.HasField("graph") or not model.ir_version or not model.opset_import:
        raise ModelError(f"{path}: not an ONNX model (no graph, IR version or opset in the file)")
    load_external_data(model, Path(path).absolute().parent, budget - size, str(path))
    try:
        onnx.checker.check_model(model)
    except (onnx.checker.ValidationError, ValueError) as exc:
        raise ModelError(f"{path}: rejected by onnx.checker: {_first_line(exc)}") from None
    if not any(o.domain in OPSET_DOMAINS for o in model.opset_import):
        raise ModelError(f"{path}: the model imports no ai.onnx opset")
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except (onnx.shape_inference.InferenceError, ValueError, RuntimeError) as exc:
        raise ModelError(f"{path}: onnx shape inference failed: {_first_line(exc)}") from None
    layers, skipped = _conv_transposes(inferred)
    return ModelLayers(str(path), inferred, layers, skipped)


def _tensors(graph: onnx.GraphProto):
    """Every TensorProto of a graph that may hold external data: initializers and node attributes, subgraphs
    included."""
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from _tensors(attr.g)
            for g in attr.graphs:
                yield from _tensors(g)


def _tensor_bytes(tensor: onnx.TensorProto) -> int | None:
    """The bytes a tensor's data must have (None: a type of no fixed size, such as strings)."""
    try:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except (KeyError, TypeError, ValueError):
        return None
    if tensor.data_type == TensorProto.STRING:
        return None
    return math.prod(tensor.dims) * itemsize


def load_external_data(model: onnx.ModelProto, folder: Path, budget: int, label: str) -> int:
    """Reads every tensor's external data into the model, from `folder` only (ModelError otherwise); returns
    the bytes read. Nothing outside the folder is opened: the location is checked before any file is."""
    root = folder.resolve()
    total = 0
    for tensor in _tensors(model.graph):
        if tensor.data_location != TensorProto.EXTERNAL:
            continue
        name = tensor.name or "a tensor"
        try:
            info = ExternalDataInfo(tensor)
            location, offset, length = info.location, int(info.offset or 0), info.length
        except (ValueError, TypeError) as exc:
            raise ModelError(f"{label}: {name}'s external data entries are not valid ({_first_line(exc)})") from None
        rel = Path(location)
        if not location or rel.is_absolute() or ".." in rel.parts or "\\" in location or ":" in location \
                or "\0" in location:
            raise ModelError(f"{label}: {name}'s external data location {location!r} is not a file name inside the "
                             "model's folder")
        target = (root / rel).resolve()
        if not target.is_relative_to(root):
            raise ModelError(f"{label}: {name}'s external data {location!r} leads out of the model's folder")
        if not target.is_file():
            raise ModelError(f"{label}: {name}'s external data {location!r} is not a regular file beside the model")
        want = _tensor_bytes(tensor)
        size = target.stat().st_size
        if length is None or length == "":
            length = size - offset
        length = int(length)
        if want is None:
            raise ModelError(f"{label}: {name} is {TensorProto.DataType.Name(tensor.data_type)}, which cannot be "
                             "stored as external data")
        if offset < 0 or length < 0 or offset + length > size:
            raise ModelError(f"{label}: {name}'s external data (offset {offset}, length {length}) is past the end of "
                             f"{location!r} ({size} bytes)")
        if length != want:
            raise ModelError(f"{label}: {name}'s external data has {length} bytes, its dims {list(tensor.dims)} "
                             f"need {want}")
        total += length
        if total > budget:
            raise ModelError(f"{label}: the external data is past the budget of {budget} bytes")
        try:
            with open_regular(target) as f:  # swapped for a FIFO or a device since the checks: refused, not read
                f.seek(offset)
                raw = f.read(length)
        except (FileRefused, OSError) as exc:
            raise ModelError(f"{label}: {name}'s external data {location!r}: {exc}") from None
        if len(raw) != length:
            raise ModelError(f"{label}: {location!r} changed while it was read")
        tensor.raw_data = raw
        del tensor.external_data[:]
        tensor.data_location = TensorProto.DEFAULT
    return total


def check(layer: "Layer", ml: "ModelLayers") -> ConvGeometry:
    """The package's own validation of a layer (ConvTransposeError naming the attribute or input at fault), and
    its initializers' data against their dims: before any runtime, ours or onnxruntime's, sees the layer."""
    inits = {t.name: t for t in ml.model.graph.initializer}
    b_shape = tuple(inits[layer.b].dims) if layer.b else None
    geom = infer(layer.x_shape, layer.w_shape, b_shape, dict(layer.attributes),
                 {"x": layer.dtype, "w": layer.dtype} | ({"b": layer.dtype} if layer.b else {}))
    for name, tensor in (("w", inits[layer.w]), ("b", inits.get(layer.b))):
        if tensor is None:
            continue
        elem = _tensor_bytes(tensor)
        held = _held_bytes(tensor)
        if elem is not None and held is not None and held != elem:
            raise ConvTransposeError(f"{name} ({tensor.name!r}) holds {held} bytes, its dims {list(tensor.dims)} "
                                     f"need {elem}", name)
    return geom


def _held_bytes(tensor: onnx.TensorProto) -> int | None:
    """The bytes of data a float tensor holds (None: held in a field we do not measure)."""
    if tensor.HasField("raw_data"):
        return len(tensor.raw_data)
    if tensor.data_type == TensorProto.FLOAT:
        return len(tensor.float_data) * 4
    if tensor.data_type == TensorProto.FLOAT16:
        return len(tensor.int32_data) * 2
    return None


def layer_bytes(geom: ConvGeometry, dtype: str) -> int:
    """Host memory one layer's run takes at its peak, estimated: x, w, b and y in the dtype, each held about
    three times (ours, onnxruntime's, and the text or copy they travel as)."""
    item = np.dtype(dtype).itemsize
    count = math.prod(geom.x_shape) + math.prod(geom.w_shape) + (geom.out_channels if geom.has_bias else 0) \
        + math.prod(geom.y_shape)
    return 3 * count * item


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _shapes(graph: onnx.GraphProto) -> dict:
    """name -> (elem type, dims with None for every dim that is not a number) of every typed tensor."""
    out = {}
    for info in (*graph.input, *graph.value_info, *graph.output):
        t = info.type.tensor_type
        if info.type.HasField("tensor_type") and t.HasField("shape"):
            out[info.name] = (t.elem_type, tuple(d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim))
    return out


def _conv_transposes(model: onnx.ModelProto) -> tuple[list[Layer], list[Skipped]]:
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    inputs = {i.name for i in graph.input} - set(inits)
    producers = {out: node.op_type for node in graph.node for out in node.output}
    shapes = _shapes(graph)
    layers, skipped = [], []
    nodes = [n for n in graph.node if n.op_type == "ConvTranspose" and n.domain in OPSET_DOMAINS]
    for index, node in enumerate(nodes):
        name = node.name or f"ConvTranspose_{index}"

        def where(tensor: str) -> str:
            if tensor in inputs:
                return "a graph input, not an initializer"
            return f"computed by a {producers.get(tensor, 'unknown')} node, not an initializer"

        x, w = node.input[0], node.input[1]
        b = node.input[2] if len(node.input) > 2 and node.input[2] else None
        reason = None
        if w not in inits:
            reason = f"w ({w!r}) is {where(w)}"
        elif b is not None and b not in inits:
            reason = f"b ({b!r}) is {where(b)}"
        elif x not in shapes:
            reason = f"x ({x!r}) has no shape after shape inference"
        elif None in shapes[x][1]:
            dims = ",".join("?" if d is None else str(d) for d in shapes[x][1])
            reason = f"x ({x!r}) stays dynamic after shape inference: [{dims}]"
        elif inits[w].data_type not in DTYPES:
            reason = f"w is {TensorProto.DataType.Name(inits[w].data_type)}; the kernel takes float32 and float16"
        if reason:
            skipped.append(Skipped(index, name, reason))
            continue
        y = node.output[0]
        y_shape = shapes.get(y, (None, None))[1]
        attributes = {a.name: _plain(helper.get_attribute_value(a)) for a in node.attribute}
        layers.append(Layer(index, name, x, w, b, y, shapes[x][1], tuple(inits[w].dims),
                            y_shape if y_shape and None not in y_shape else None,
                            DTYPES[inits[w].data_type], attributes, node))
    return layers, skipped


def _plain(value):
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, (list, tuple)):
        return [int(v) for v in value]
    return value


def weights(ml: ModelLayers, layer: Layer, dtype: str) -> dict:
    """The layer's initializers as numpy arrays of `dtype`: {"w": ..., "b"?: ...}."""
    inits = {t.name: t for t in ml.model.graph.initializer}
    out = {"w": numpy_helper.to_array(inits[layer.w]).astype(dtype)}
    if layer.b:
        out["b"] = numpy_helper.to_array(inits[layer.b]).astype(dtype)
    return out


def _model(ml: ModelLayers, nodes, initializers, first: Layer, last: Layer, dtype: str, name: str) -> onnx.ModelProto:
    elem = ELEM[dtype]
    y_shape = list(last.y_shape) if last.y_shape else [None] * len(last.x_shape)  # None: left to the runtime
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", elem, list(first.x_shape))],
                              [helper.make_tensor_value_info(nodes[-1].output[0], elem, y_shape)], initializers)
    opsets = [helper.make_opsetid("", ml.opset)]
    # The lowest IR version the opset allows: the cut model loads in every runtime that loads the opset.
    model = helper.make_model(graph, opset_imports=opsets, ir_version=helper.find_min_ir_version_for(opsets),
                              producer_name="webgpu-convtranspose model")
    onnx.checker.check_model(model)
    return model


def _node(layer: Layer, x: str, w: str, b: str | None, y: str) -> onnx.NodeProto:
    node = helper.make_node("ConvTranspose", [x, w] + ([b] if b else []), [y], name=layer.name)
    node.attribute.extend(layer.node.attribute)  # the file's own attribute protos, unchanged
    return node


def one_node(ml: ModelLayers, layer: Layer, dtype: str = "float32") -> onnx.ModelProto:
    """The layer alone: input "x" (its inferred shape), initializers "w" (and "b") with the file's weights in
    `dtype`, the node with the file's attributes, output "y"."""
    arrays = weights(ml, layer, dtype)
    inits = [numpy_helper.from_array(a, name) for name, a in arrays.items()]
    return _model(ml, [_node(layer, "x", "w", "b" if layer.b else None, "y")], inits, layer, layer, dtype,
                  layer.name)


def linked(ml: ModelLayers, a: Layer, b: Layer) -> bool:
    """Whether b's x is computed from a's y (directly or through ops other than ConvTranspose), shape kept."""
    if a.y_shape != b.x_shape or a.dtype != b.dtype:
        return False
    reached, frontier = {a.y}, [a.y]
    while frontier:
        tensor = frontier.pop()
        if tensor == b.x:
            return True
        for node in ml.model.graph.node:
            if node.op_type != "ConvTranspose" and tensor in node.input:
                for out in node.output:
                    if out not in reached:
                        reached.add(out)
                        frontier.append(out)
    return False


def chain(ml: ModelLayers) -> list[Layer]:
    """The longest run (at least 2) of consecutive runnable layers each feeding the next; [] if none."""
    best, run = [], ml.layers[:1]
    for prev, layer in zip(ml.layers, ml.layers[1:]):
        run = run + [layer] if layer.index == prev.index + 1 and linked(ml, prev, layer) else [layer]
        if len(run) > len(best):
            best = run
    return best if len(best) >= 2 else []


def dropped_between(ml: ModelLayers, layers: list[Layer]) -> list[str]:
    """The op types of the nodes between the chain's first and last ConvTranspose (dropped from the chain model)."""
    nodes = list(ml.model.graph.node)
    first, last = nodes.index(layers[0].node), nodes.index(layers[-1].node)
    return sorted({n.op_type for n in nodes[first:last] if n.op_type != "ConvTranspose"})


def chain_model(ml: ModelLayers, layers: list[Layer], dtype: str = "float32") -> onnx.ModelProto:
    """The chain's ConvTranspose nodes alone, in order, each feeding the next ("x" -> t1 -> ... -> "y"),
    weights "w{i}" / "b{i}" from the file in `dtype`."""
    nodes, inits = [], []
    for i, layer in enumerate(layers):
        arrays = weights(ml, layer, dtype)
        inits += [numpy_helper.from_array(a, f"{name}{i}") for name, a in arrays.items()]
        x = "x" if i == 0 else f"t{i}"
        y = "y" if i == len(layers) - 1 else f"t{i + 1}"
        nodes.append(_node(layer, x, f"w{i}", f"b{i}" if layer.b else None, y))
    return _model(ml, nodes, inits, layers[0], layers[-1], dtype, "convtranspose_chain")


def seeded_input(shape, dtype: str, seed: int) -> np.ndarray:
    """x for a layer: numpy's default_rng(seed).uniform(-1, 1), in `dtype`."""
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)
