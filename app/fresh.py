"""Fresh layers: a seeded generator of realistic ConvTranspose layers in bench.json's case format, drawn anew
from a seed for every check of whether a planning rule generalises (the `fresh` tier, never tuned on).

The draws follow what decoders, U-Nets, GANs, vocoders and 3D segmentation nets use: 1D, 2D and 3D; dense,
grouped and depthwise; kernels 1-16 with strides 1-8, the kernel mostly a multiple of the stride (or a
stride plus one, with the pads that keep the output an exact multiple); channels 1-2048; batch 1-64. Every
layer is then shrunk along its spatial axes until it fits a GPU bench's budget (MAX_MADDS multiply-adds, MAX_ELEMENTS
elements in x, w and y), so a tier of 60+ layers times every covering variant within one device call. Pure Python.
"""
from __future__ import annotations

import math
import random

TIER = "fresh"
MAX_MADDS = 3_000_000_000  # a tier of 60 fits one device call (docs/decisions.md#fresh-tier)
MAX_ELEMENTS = 24_000_000  # w too: a 320x320 16^3 kernel (419M values) was past what Pyodide's numpy can hold
CHANNELS = (1, 3, 8, 16, 21, 32, 48, 64, 96, 128, 192, 256, 320, 384, 512, 768, 1024, 1536, 2048)
STRIDES = (1, 1, 2, 2, 2, 2, 3, 4, 4, 5, 8)
SPATIAL = {1: (16, 8192), 2: (4, 256), 3: (4, 48)}


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    return int(round(math.exp(rng.uniform(math.log(low), math.log(high)))))


def _kernel(rng: random.Random, stride: int) -> tuple[int, int]:
    """(kernel, total padding) for one axis: the shapes real layers pair with a stride."""
    if stride == 1:
        k = rng.choice((1, 1, 3, 3, 3, 5, 7))
        return k, k - 1
    k = rng.choice((stride, 2 * stride, 2 * stride, stride + 1, 4 * stride if stride <= 4 else 2 * stride))
    k = min(k, 16)
    return k, max(0, k - stride)


def _channels(rng: random.Random) -> int:
    return rng.choice(CHANNELS)


def layer(rng: random.Random, index: int, max_madds: int = MAX_MADDS, max_elements: int = MAX_ELEMENTS) -> dict:
    rank = rng.choice((1, 2, 2, 2, 3))
    stride = rng.choice(STRIDES)
    asymmetric = rank > 1 and rng.random() < 0.15
    strides, kernel, pads = [], [], []
    shared = _kernel(rng, stride)
    for axis in range(rank):
        s = stride if not asymmetric or axis else rng.choice((1, stride))
        k, pad_total = shared if s == stride else _kernel(rng, s)
        if asymmetric and axis == rank - 1 and s == 1:
            k, pad_total = rng.choice(((1, 0), (3, 2), (5, 4)))
        strides.append(s)
        kernel.append(k)
        pads.append(pad_total)
    kind = rng.choices(("dense", "grouped", "depthwise"), (0.75, 0.1, 0.15))[0]
    cin = _channels(rng)
    if kind == "depthwise":
        cin = max(cin, 8)
        group, cout = cin, cin
    elif kind == "grouped":
        group = rng.choice((2, 4, 8, 16, 32))
        cin = max(group * 4, cin - cin % group)
        cout = max(group, (cin // rng.choice((1, 2))) // group * group)
    else:
        group = 1
        cout = rng.choice((max(1, cin // 2), max(1, cin // 2), cin, _channels(rng)))
    batch = 1 if rng.random() < 0.6 else min(64, _log_uniform(rng, 2, 64))
    low, high = SPATIAL[rank]
    size = _log_uniform(rng, low, high)
    spatial = [size if not asymmetric or axis else max(1, size // rng.choice((1, 2, 4))) for axis in range(rank)]
    dilations = [1] * rank
    if rng.random() < 0.05 and max(kernel) > 1:
        dilations = [2] * rank
        pads = [(k - 1) * 2 + 1 - s if (k - 1) * 2 + 1 > s else 0 for k, s in zip(kernel, strides)]
    output_padding = [0] * rank
    if rng.random() < 0.1:
        output_padding = [min(s - 1, 1) for s in strides]

    def fits() -> bool:
        outs = [(i - 1) * s + (k - 1) * d + 1 - p + op
                for i, s, k, d, p, op in zip(spatial, strides, kernel, dilations, pads, output_padding)]
        x_size = batch * cin * math.prod(spatial)
        y_size = batch * cout * math.prod(outs)
        w_size = cin * (cout // group) * math.prod(kernel)
        madds = batch * cin * math.prod(spatial) * (cout // group) * math.prod(kernel)
        return min(outs) >= 1 and madds <= max_madds and max(x_size, y_size, w_size) <= max_elements

    while not fits():
        if max(spatial) > 1:
            axis = spatial.index(max(spatial))
            spatial[axis] = max(1, spatial[axis] * 3 // 4)
        elif batch > 1:
            batch //= 2
        else:
            cin = max(group, cin // 2 // group * group)
            cout = max(group, cout // 2 // group * group)
    attributes = {"strides": strides}
    if any(pads):
        attributes["pads"] = [p // 2 for p in pads] + [p - p // 2 for p in pads]
    if group > 1:
        attributes["group"] = group
    if any(d > 1 for d in dilations):
        attributes["dilations"] = dilations
    if any(output_padding):
        attributes["output_padding"] = output_padding
    kdesc = "x".join(map(str, kernel))
    sdesc = "x".join(map(str, strides))
    return {"name": f"fresh{index:02d}_r{rank}_{kind}_c{cin}to{cout}_k{kdesc}s{sdesc}",
            "tier": TIER, "model": f"a drawn {rank}D {kind} layer", "x": [batch, cin, *spatial],
            "w": [cin, cout // group, *kernel], "bias": rng.random() < 0.5, "attributes": attributes,
            "dtype": "float32"}


def bench_file(seed: int, count: int = 64, max_madds: int = MAX_MADDS, max_elements: int = MAX_ELEMENTS) -> dict:
    """A bench file (bench.json's format) whose `fresh` tier holds `count` layers drawn from `seed`, each shrunk to
    the budget (smaller ones for a software adapter)."""
    rng = random.Random(seed)
    return {"op": "ai.onnx.ConvTranspose", "version": 1,
            "fill": {"distribution": "uniform", "low": -1.0, "high": 1.0, "seed": 0,
                     "doc": "x, w, b drawn in that order from numpy.random.default_rng(seed), rounded to float32"},
            "tiers": {TIER: f"{count} layers drawn from seed {seed} (app/fresh.py), never tuned on"},
            "cases": [layer(rng, i, max_madds, max_elements) for i in range(count)]}


if __name__ == "__main__":
    import argparse
    import json

    parser = argparse.ArgumentParser(description="print a bench file whose `fresh` tier is drawn from SEED")
    parser.add_argument("seed", type=int)
    parser.add_argument("--count", type=int, default=64)
    parser.add_argument("--max-madds", type=float, default=MAX_MADDS)
    parser.add_argument("--max-elements", type=float, default=MAX_ELEMENTS)
    args = parser.parse_args()
    print(json.dumps(bench_file(args.seed, args.count, int(args.max_madds), int(args.max_elements)), indent=1))
