"""The one rule by which measured times replace an incumbent in a tuning table, for every writer of table entries
(the tuner's tiles and variant choices, app/tuner.py; the fit tool's choices, tools/cost_model_fit.py).

Per shape class, a candidate replaces the incumbent (a variant's defaults, or the planner's pick) only when it is
more than MARGIN faster on every layer of the class measured; among several such, the lowest geometric mean of its
times over the incumbent's wins (docs/decisions.md#measured-choice-margin). Pure Python.
"""
from __future__ import annotations

import math
import statistics

MARGIN = 0.05  # noise on a shared machine is larger than small wins (docs/decisions.md#measured-choice-margin)


def replaces(ratios: list[float], margin: float = MARGIN) -> bool:
    """Whether a candidate whose times over the incumbent's, one per layer, are `ratios` replaces it."""
    return bool(ratios) and max(ratios) < 1 - margin


def geometric_mean(ratios: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(q) for q in ratios))


def best_per_class(layers: list[dict], min_gain_ms: float = 0.0, margin: float = MARGIN) -> dict:
    """class -> {"winner", "relative_time", "layers"}: per shape class, the candidate that `replaces` the incumbent of
    every layer (and, with min_gain_ms, saves that many ms on each: a run's noise on the adapter), the geometric mean
    of its ratios choosing among several. A layer is {"class", "incumbent": a candidate, "ms": {candidate: ms}};
    only candidates measured on every layer of a class, and never one that is some layer's incumbent, compete."""
    by_class: dict[str, list[dict]] = {}
    for layer in layers:
        by_class.setdefault(layer["class"], []).append(layer)
    out = {}
    for cls, rs in sorted(by_class.items()):
        incumbents = {r["incumbent"] for r in rs}
        scores = {}
        for name in sorted(set.intersection(*(set(r["ms"]) for r in rs)) - incumbents):
            ratios = [_ratio(r, name, min_gain_ms) for r in rs]
            if replaces(ratios, margin):
                scores[name] = geometric_mean(ratios)
        if scores:
            best = min(scores, key=scores.get)
            out[cls] = {"winner": best, "relative_time": round(scores[best], 4), "layers": rs}
    return out


def _ratio(layer: dict, name: str, min_gain_ms: float) -> float:
    """The candidate's time over the incumbent's on one layer; 1 where it saves less than min_gain_ms."""
    mine, theirs = layer["ms"][name], layer["ms"][layer["incumbent"]]
    return mine / theirs if theirs - mine >= min_gain_ms else 1.0
