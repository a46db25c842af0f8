"""Calibration from use: what adaptation measured on this adapter corrects the cost model's rates, so that
signatures it has never seen are ranked better (docs/decisions.md#calibration-from-use).

Each settled adaptation trial (web/runtime/adapt.mjs `samples`) gives one sample per candidate it timed: its rate key
(app/cost_model.py `rate_key`, "variant[/structure]/dtype"), its measured ms, and what the package's model predicted
of it, whole and in the part no rate decides (launches, threads and outputs: the adapter's, `cost_model.fixed_ms`). The
sample's share w of the prediction that the rate decides weighs it: its log ratio log(measured / predicted), over w,
is a correction of the rate (clamped to +-log(MAX_FACTOR)), counted w^2 (least squares: a layer whose time is its
launches says little of a rate). The plan record keeps per rate key the weighted count and sum of those
(web/runtime/plan-store.mjs `calibrated`: at most MAX_KEYS keys, a count past MAX_COUNT scaled back so that old
samples fade), per adapter and tables' revision, as it keeps what adaptation learned.

Applied (`Calibration.factor`), the part of a prediction that the rate decides is multiplied by exp(base +
deviation): `base` the mean of every sample (not shrunk: it changes no ranking), the deviation its rate key's own
mean less `base` (else its variant's, all its keys pooled: a structure or dtype not measured yet), shrunk toward 0 by
PRIOR samples' worth of belief in the package's model (n / (n + PRIOR) of it). A variant measured 3x slower than
predicted on 8 samples, beside one measured as predicted on 8, is predicted 2.4x slower than it on a new signature
(the rate's part); on 1 sample, 1.5x. The base keeps the variants with samples from being set against those without
(an adapter slower than its class's model throughout is no reason to prefer the kernels never measured), and puts
the predictions, which bound adaptation's candidates, in this adapter's milliseconds. Factors stay within
[1/MAX_FACTOR, MAX_FACTOR]; the launches', threads' and outputs' part is multiplied by exp(base) alone
(`Calibration.scale`): the same for every candidate, it changes no choice.

What a store gives back is checked here (never trusted over the package): a key that is not a rate key of this
package's variants and dtypes, a count or sum that is not a finite number in range, a mean past the bound, or more
keys than the record keeps, is dropped with a reason, the rest kept. Pure Python (a first call imports it).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

PRIOR = 2.0  # samples' worth of belief in the package's model: a deviation is n / (n + PRIOR) of its mean
MAX_FACTOR = 32.0  # a sample's ratio, and an applied factor, within [1/32, 32] (plan-store.mjs CALIBRATION)
MAX_COUNT = 64  # a key's count past this is scaled back to it, its sum alike (plan-store.mjs CALIBRATION)
MAX_KEYS = 256  # rate keys kept per adapter (plan-store.mjs CALIBRATION)
DTYPES = ("float32", "float16")
KEY = re.compile(r"([a-z][a-z0-9_]{0,63})(?:/([a-z][a-z0-9-]{0,63}))?/([a-z0-9]{1,16})")


def _why_not(key, entry) -> str | None:
    """Why a stored (key, {n, sum}) is not a calibration of this package (None when it is)."""
    from .variants import VARIANTS

    match = KEY.fullmatch(key) if isinstance(key, str) else None
    if match is None:
        return "not a rate key"
    if match[1] not in VARIANTS or match[3] not in DTYPES:
        return "no variant or dtype of this package"
    if not isinstance(entry, dict) or set(entry) != {"n", "sum"}:
        return "not {n, sum}"
    n, total = entry["n"], entry["sum"]
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (n, total)):
        return "a count or sum that is not a finite number"
    if not 0 < n <= MAX_COUNT:
        return f"a count outside (0, {MAX_COUNT}]"
    if abs(total) > n * math.log(MAX_FACTOR) * (1 + 1e-9):
        return f"a mean ratio past {MAX_FACTOR:g}x"
    return None


def checked(given) -> tuple[dict[str, tuple[float, float]], list[str]]:
    """A stored calibration ({rate key: {n, sum}}) as {key: (n, sum)} of what holds, and why each part that does
    not was dropped."""
    if given is None:
        return {}, []
    if not isinstance(given, dict):
        return {}, [f"the calibration is a {type(given).__name__}, not an object: dropped"]
    kept, dropped = {}, []
    for key, entry in given.items():
        why = "past the " + str(MAX_KEYS) + " keys kept" if len(kept) == MAX_KEYS else _why_not(key, entry)
        if why is None:
            kept[key] = (float(entry["n"]), float(entry["sum"]))
        else:
            dropped.append(f"calibration {str(key)[:80]!r} dropped ({why})")
    return kept, dropped


@dataclass(frozen=True)
class Calibration:
    """Log corrections of an adapter's predictions, from checked {key: (n, sum)}: every sample's mean (`base`), and
    each rate key's and each variant's deviation from it, shrunk toward 0."""

    base: float = 0.0
    keys: dict = field(default_factory=dict)  # rate key -> its shrunk deviation from `base`
    variants: dict = field(default_factory=dict)  # variant -> its keys' pooled deviation, for its keys not measured

    @classmethod
    def of(cls, rates: dict[str, tuple[float, float]]) -> "Calibration | None":
        if not rates:
            return None
        n_all = sum(n for n, _ in rates.values())
        base = sum(s for _, s in rates.values()) / n_all
        pooled: dict[str, list[float]] = {}
        for key, (n, s) in rates.items():
            acc = pooled.setdefault(key.split("/")[0], [0.0, 0.0])
            acc[0] += n
            acc[1] += s

        def shrunk(n: float, s: float) -> float:
            return (s - n * base) / (n + PRIOR)
        return cls(base, {k: shrunk(n, s) for k, (n, s) in rates.items()},
                   {v: shrunk(n, s) for v, (n, s) in pooled.items()})

    def factor(self, key: str) -> float:
        """What the part of a prediction that rate `key` decides is multiplied by on this adapter: its key's
        correction, else (a structure or dtype not measured) its variant's, else the adapter's."""
        return _bounded(self.base + self.keys.get(key, self.variants.get(key.split("/")[0], 0.0)))

    @property
    def scale(self) -> float:
        """What the rest of every prediction (launches, threads, outputs) is multiplied by: the adapter's shared
        factor alone, the same for every candidate, so that it changes no choice by itself."""
        return _bounded(self.base)


def _bounded(log_factor: float) -> float:
    """exp(log_factor) within [1/MAX_FACTOR, MAX_FACTOR]."""
    bound = math.log(MAX_FACTOR)
    return math.exp(min(bound, max(-bound, log_factor)))


def of_request(given) -> tuple[Calibration | None, list[str]]:
    """The calibration a plan request carries (app/bridge.py plan_launch), checked: (Calibration or None, what
    was dropped)."""
    rates, dropped = checked(given)
    return Calibration.of(rates), dropped
