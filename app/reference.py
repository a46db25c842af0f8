"""The float64 reference: ConvTranspose by its definition, as a scatter.

Every input element x[n, c, i] adds x * w[c, m, t] to y[n, g*M/g + m, i*s + t*d - pad_begin]. The
kernels gather per output element instead; computing the same sum from the other side keeps the
reference independent of them. One numpy step per tap keeps it fast enough for the test shapes.
"""
from __future__ import annotations

import itertools

from .lazy_numpy import np
from .shapes import ConvGeometry


def conv_transpose_reference(geom: ConvGeometry, x: np.ndarray, w: np.ndarray,
                             b: np.ndarray | None = None) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64).reshape(geom.x_shape)
    w = np.asarray(w, dtype=np.float64).reshape(geom.w_shape)
    y = np.zeros(geom.y_shape, dtype=np.float64)
    cg, mg = geom.in_per_group, geom.out_per_group
    for g in range(geom.group):
        xg = x[:, g * cg:(g + 1) * cg]
        yg = y[:, g * mg:(g + 1) * mg]
        for tap in itertools.product(*(range(k) for k in geom.kernel)):
            # contribution[n, m, i...] = sum_c x[n, c, i...] * w[c, m, tap]
            contribution = np.tensordot(xg, w[g * cg:(g + 1) * cg, :, *tap], axes=([1], [0]))
            contribution = np.moveaxis(contribution, -1, 1)
            src, dst = [slice(None), slice(None)], [slice(None), slice(None)]
            for i, t, s, d, pb, o in zip(geom.in_spatial, tap, geom.strides, geom.dilations,
                                         geom.pads_begin, geom.out_spatial):
                offset = t * d - pb  # y position of input position 0
                first = max(0, -(offset // s))  # first i with i*s + offset >= 0
                last = min(i - 1, (o - 1 - offset) // s)  # last i with i*s + offset < o
                if last < first:
                    break
                src.append(slice(first, last + 1))
                dst.append(slice(first * s + offset, last * s + offset + 1, s))
            else:
                yg[tuple(dst)] += contribution[tuple(src)]
    if b is not None:
        y += np.asarray(b, dtype=np.float64).reshape((1, geom.out_channels) + (1,) * geom.rank)
    return y


def reference_at(geom: ConvGeometry, x: np.ndarray, w: np.ndarray, b: np.ndarray | None,
                 points: np.ndarray) -> np.ndarray:
    """The float64 reference at some output positions only (rows of `points`: n, m, o0, o1, ...), gathered
    per output element (the other side of the sum from conv_transpose_reference's scatter): a check of a
    large output at a sample of its elements costs little. x and w stay in their dtype (a whole float64 copy
    of a bench-sized x and w would not fit Pyodide's memory); each product's operands are widened."""
    x = np.asarray(x).reshape(geom.x_shape)
    w = np.asarray(w).reshape(geom.w_shape)
    cg, mg = geom.in_per_group, geom.out_per_group
    out = np.zeros(len(points), dtype=np.float64)
    for row, (n, m, *o) in enumerate(np.asarray(points, dtype=np.int64)):
        g = m // mg
        pairs = [_axis_pairs(*axis) for axis in zip(o, geom.in_spatial, geom.kernel, geom.strides, geom.dilations,
                                                    geom.pads_begin)]
        total = 0.0
        for combo in itertools.product(*pairs):
            ins, taps = tuple(p[0] for p in combo), tuple(p[1] for p in combo)
            xs = x[(n, slice(g * cg, (g + 1) * cg)) + ins].astype(np.float64)
            total += float(xs @ w[(slice(g * cg, (g + 1) * cg), m - g * mg) + taps].astype(np.float64))
        out[row] = total + (float(b[m]) if b is not None else 0.0)
    return out


def _axis_pairs(o: int, size_in: int, k: int, s: int, d: int, pad: int) -> list[tuple[int, int]]:
    """One axis's (input position, tap) pairs with i*s + t*d - pad == o (vectorised: kernels run to thousands
    of taps)."""
    q = o + pad - np.arange(k) * d
    taps = np.flatnonzero((q >= 0) & (q % s == 0) & (q // s < size_in))
    return [(int(q[t] // s), int(t)) for t in taps]


def sample_points(geom: ConvGeometry, count: int, seed: int = 0) -> np.ndarray:
    """`count` output positions (n, m, o...) drawn uniformly, the first and last element always among them."""
    rng = np.random.default_rng(seed)
    dims = np.array(geom.y_shape)
    points = [np.zeros(len(dims), np.int64), dims - 1]
    points += [rng.integers(0, dims) for _ in range(max(0, count - 2))]
    return np.array(points[:max(count, 1)])
