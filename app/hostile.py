"""Hostile inputs, seeded: malformed requests, stored autotune entries, caller stores, ONNX models and HTTP
requests, each drawn from a seed so that a failure is reproduced by its (kind, seed, index).

Every case says what a correct ending is: a documented error class (ConvTransposeError for requests,
EntryError / a warning for stored entries, ModelError or a per-layer FAIL for models, an HTTP status for the
server) or a correct result (a request that stays valid is computed by the float64 reference, in y's shape).
tests/test_hostile.py runs 600+ of them in CPython under a time bound each, the model cases in a child
process (onnx's checker is C++), and tests/test_hostile_browser.py a few dozen through the page's JS API.
Pure Python and numpy (the model and server generators import onnx lazily): the request and store generators
run in Pyodide too.
"""
from __future__ import annotations

import copy
import json
import math

import numpy as np

from .fuzz import random_request

# Values that break assumptions: types, signs, sizes past 32 and 64 bits, non-finite floats.
HOSTILE_SCALARS = [0, -1, -(2**31), 2**31, 2**63, 2**64 + 1, 10**30, 1.5, float("nan"), float("inf"), "2", "", None,
                   True, False, [], {}, [[1]], b"\x00"]
HOSTILE_DIMS = [-1, 2**31, 2**40, 1.0, True, "3", None, [2]]
HOSTILE_DTYPES = ["float64", "int32", "bfloat16", "FLOAT32", 5, None, ["float32"], ""]
ATTRIBUTE_NAMES = ["strides", "dilations", "pads", "output_padding", "output_shape", "kernel_shape", "group", "auto_pad"]


def _pick(rng, seq):
    return seq[int(rng.integers(len(seq)))]


def hostile_request(rng) -> tuple[str, dict]:
    """(what was done, request): a valid fuzz request with one hostile change. The request holds "x", "w", "b"
    (numpy arrays or {"data", "shape", "dtype"} dicts) and "attributes"."""
    req = random_request(rng)
    x, w, b, attrs = req["x"], req["w"], req["b"], dict(req["attributes"])
    kind = _pick(rng, ["attribute", "attribute", "list_length", "shape", "data", "dtype", "array_dtype", "name",
                       "huge_list", "nested"])
    what = kind
    as_dict = lambda a: {"data": a.reshape(-1).tolist(), "shape": list(a.shape)}  # noqa: E731
    if kind == "attribute":
        name, value = _pick(rng, ATTRIBUTE_NAMES), _pick(rng, HOSTILE_SCALARS)
        rank = x.ndim - 2
        if name in ("group", "auto_pad") or rng.random() < 0.5:
            attrs[name] = value
        else:
            length = 2 * rank if name == "pads" else rank
            entries = [1] * length
            entries[int(rng.integers(length))] = value
            attrs[name] = entries
        what = f"attribute {name} = {attrs[name]!r}"[:120]
    elif kind == "list_length":
        name = _pick(rng, ["strides", "dilations", "pads", "output_padding", "kernel_shape", "output_shape"])
        attrs[name] = [1] * int(rng.integers(0, 9))
        what = f"{name} of length {len(attrs[name])}"
    elif kind == "huge_list":
        attrs[_pick(rng, ["strides", "pads"])] = [1] * 100_000
    elif kind == "nested":
        deep = []
        for _ in range(int(rng.integers(2, 200))):
            deep = [deep]
        attrs[_pick(rng, ATTRIBUTE_NAMES)] = deep
    elif kind == "shape":
        target = _pick(rng, ["x", "w", "b"]) if b is not None else _pick(rng, ["x", "w"])
        arr = {"x": x, "w": w, "b": b}[target]
        shape = list(arr.shape)
        choice = rng.random()
        if choice < 0.5:
            shape[int(rng.integers(len(shape)))] = _pick(rng, HOSTILE_DIMS)
        elif choice < 0.75:
            shape = shape + [1] * int(rng.integers(1, 4))
        else:
            shape = shape[:int(rng.integers(0, len(shape)))]
        spec = {"data": arr.reshape(-1).tolist(), "shape": shape}
        if target == "x":
            x = spec
        elif target == "w":
            w = spec
        else:
            b = spec
        what = f"{target} shape {shape!r}"[:120]
    elif kind == "data":
        spec = as_dict(x)
        choice = int(rng.integers(5))
        if choice == 0:
            spec["data"] = spec["data"][:-1] or [0.0, 0.0]
        elif choice == 1 and spec["data"]:
            spec["data"][int(rng.integers(len(spec["data"])))] = _pick(rng, [None, "1", [1.0], True, {}, 10**400])
        elif choice == 2:
            spec["data"] = b"\x00\x01\x02"
        elif choice == 3 and spec["data"]:
            spec["data"][0] = float(_pick(rng, [np.nan, np.inf, -np.inf]))  # NaN and Inf are data: a result
        else:
            spec["data"] = {"not": "a list"}
        x = spec
        what = f"x data ({choice})"
    elif kind == "dtype":
        spec = as_dict(x)
        spec["dtype"] = _pick(rng, HOSTILE_DTYPES)
        x = spec
        what = f"x dtype {spec['dtype']!r}"
    elif kind == "array_dtype":
        spec = as_dict(w)
        spec["data"] = w.reshape(-1).astype(_pick(rng, ["float64", "int32", "int64", "float16"]))
        w = spec
        what = f"w data of dtype {spec['data'].dtype}"
    elif kind == "name":
        attrs[_pick(rng, ["bogus", "variant", "__class__", "", "Strides", "kernel shape"])] = 1
    return what, {"x": x, "w": w, "b": b, "attributes": attrs}


def hostile_entry(rng, fmt: int, adapter: dict, revision: str) -> tuple[str, object]:
    """(what was done, stored entry): texts a store might give back, from plausible to absurd."""
    base = {"format": fmt, "variant": "nchw2d_gather", "params": None, "adapter": adapter, "revision": revision}
    kind = _pick(rng, ["deep", "deep", "json", "field", "params", "params", "size", "garbage", "type"])
    if kind == "deep":
        depth = int(rng.choice([9, 50, 1000, 5000, 100_000]))
        opener = _pick(rng, ["[", '{"a":'])
        closer = "]" if opener == "[" else "}"
        return f"nested {depth}", opener * depth + closer * depth
    if kind == "json":
        value = _pick(rng, [None, 5, [], "text", True, 1e308, [base], {"entry": base}])
        return f"JSON {type(value).__name__}", json.dumps(value)
    if kind == "field":
        entry = dict(base)
        key = _pick(rng, ["format", "variant", "params", "adapter", "revision"])
        if rng.random() < 0.3:
            entry.pop(key)
        else:
            entry[key] = _pick(rng, HOSTILE_SCALARS[:12] + ["ncdhw3d_gather", "phase_gemm", "no_such_variant"])
        return f"{key} changed", json.dumps(entry, allow_nan=True)
    if kind == "params":
        entry = dict(base, variant=_pick(rng, ["nchw2d_phase_gemm_tiled", "phase_gemm", "stride1_implicit_gemm",
                                               "nchw2d_gather", "conv1x1_gemm_tiled_reg"]))
        keys = ["tile_m", "tile_n", "thread_m", "thread_n", "tm", "tn", "rm", "rn", "tk", "bogus", "__proto__"]
        entry["params"] = {_pick(rng, keys): _pick(rng, HOSTILE_SCALARS[:10] + [4, 8, 16, 32])
                           for _ in range(int(rng.integers(0, 4)))}
        return f"params {entry['params']!r}"[:120], json.dumps(entry, allow_nan=True)
    if kind == "size":
        return "long", json.dumps(dict(base, revision="r" * int(rng.choice([100, 70_000, 1_000_000]))))
    if kind == "garbage":
        raw = bytes(rng.integers(0, 256, int(rng.integers(0, 200)), dtype=np.uint8))
        return "garbage", raw.decode("latin-1")
    return "not text", _pick(rng, [5, 1.5, b"{}", ["x"], {"format": 1}, True])


def hostile_model_spec(rng) -> dict:
    """A description of one hostile ONNX file (built by build_model in CPython): a valid one-layer decoder with
    one change to its bytes, attributes, initializers, external data, opset or graph."""
    kind = _pick(rng, ["attribute", "attribute", "bytes", "truncate", "dims", "external", "external", "opset",
                       "graph", "x_shape", "dtype"])
    spec = {"kind": kind, "seed": int(rng.integers(2**31))}
    if kind == "attribute":
        name = _pick(rng, ATTRIBUTE_NAMES)
        spec["attribute"] = name
        spec["value"] = _pick(rng, [0, -1, -5, 2**31, 2**62, 7, 100, [0], [-1, -1], [1, 2, 3], [2**40, 1], [3, 3],
                                     "SAME", "VALID", "SIDEWAYS", 1.5])
    elif kind == "external":
        spec["location"] = _pick(rng, [".git/config", "../secret.bin", "/etc/passwd", "weights.bin", "link.bin",
                                       "sub/../weights.bin", "weights.bin\x00.txt", "C:\\weights.bin", "", "missing.bin",
                                       "sub", "./weights.bin"])
        spec["offset"] = _pick(rng, [None, 0, 8, -4, 10**12, "x"])
        spec["length"] = _pick(rng, [None, 288, 100, 300, -1, 10**12])
    elif kind == "dims":
        spec["dims"] = _pick(rng, [[4, 2, 3], [4, 2, 3, 3, 3], [2**31, 2, 3, 3], [0, 2, 3, 3], [4, 2, 3, 30]])
    elif kind == "x_shape":
        spec["x_shape"] = _pick(rng, [[1, 4, 2**20, 2**20], [2**31, 4, 5, 5], [1, 4, 0, 5], [1, 3, 5, 5],
                                      [1, 4, 4096, 4096], [1, 4, 5]])
    elif kind == "opset":
        spec["opset"] = _pick(rng, [0, 1, 10, 11, 22, 1000])
        spec["ir_version"] = _pick(rng, [0, 1, 3, 8, 100])
    elif kind == "graph":
        spec["change"] = _pick(rng, ["no_nodes", "one_input", "domain", "empty_name", "weight_is_input",
                                     "two_outputs_same_name"])
    elif kind == "dtype":
        spec["elem"] = _pick(rng, [10, 11, 6, 7, 16, 1])  # float16, double, int32, int64, bfloat16, float
    return spec


def hostile_http(rng) -> tuple[str, str, str | None]:
    """(method, raw path, Host header or None for the server's own) for one request to serve.py."""
    paths = ["/", "/web/.env", "/web/%2eenv", "/web/.git/config", "/web/runtime/../../serve.py", "/.git/config",
             "/web/runtime/boot.mjs", "/manifest.json", "/web/" + "a" * 4000, "/web/%00", "/%2e%2e/%2e%2e/etc/passwd",
             "/web/runtime/.hidden.mjs", "/pyodide/../../app/gpu.py", "/bundle.zip", "/docs/.secret", "//etc/passwd",
             "/web/views/%2e%2e/%2e%2e/README.md", "/web\\..\\serve.py", "/ort/../../package.json"]
    hosts = [None, None, None, "attacker.example", "localhost", "127.0.0.1", "[::1]", "evil.example:80", "",
             "127.0.0.1.nip.io", "LOCALHOST"]
    return _pick(rng, ["GET", "GET", "HEAD", "POST", "DELETE"]), _pick(rng, paths), _pick(rng, hosts)


def reference_ok(geom, arrays) -> bool:
    """A request that stayed valid: the float64 reference computes a y of the geometry's shape."""
    from .reference import conv_transpose_reference

    if geom.y_size > 20_000 or math.prod(geom.x_shape) > 20_000:
        return True  # validated only: too large to compute here
    y = conv_transpose_reference(geom, arrays["x"], arrays["w"], arrays.get("b"))
    return tuple(y.shape) == tuple(geom.y_shape)


def copy_request(req: dict) -> dict:
    return copy.deepcopy(req)
