"""Calibration from use: what adaptation measured on this adapter corrects the cost model's predictions, so that
signatures it has never seen are ranked better (docs/decisions.md#calibration-from-use).

Each settled adaptation trial (web/runtime/adapt.mjs `samples`) gives one sample per candidate it timed: its rate key
(app/cost_model.py `rate_key`, "variant[/structure]/dtype"), its measured ms, and what the package's model predicted
of it, whole and in the part no rate decides (launches, threads and outputs at the adapter's costs, each kernel's
overhead on them included: `cost_model.fixed_ms`).
With w the share of the prediction that the rate decides and r = log(measured / predicted) (clamped to
+-log(MAX_FACTOR)), a sample reads as r = alpha + w * delta[key]: alpha the adapter's factor on every prediction
(its launches as its rates), delta the rate key's own on the part it decides. The plan record keeps per rate key the
sums that least squares needs, {n: count, w: sum of w, ww: of w^2, log: of r, wlog: of w * r}
(web/runtime/plan-store.mjs `calibrated`: at most MAX_KEYS keys, all five scaled back once the count passes
MAX_COUNT, so that old samples fade), per adapter and tables' revision, as it keeps what adaptation learned.

`Calibration.of` solves it, each delta shrunk toward 0 by PRIOR samples' worth (in w^2) of belief in the package's
model; a key not measured takes its variant's delta in its dtype (those keys pooled: a structure not measured yet),
else 0. Never another dtype's: a kernel's float16 and float32 paths run different arithmetic, and one's correction
moved the other's first calls the wrong way (docs/decisions.md#calibration-from-use).
Applied, the part a rate decides is multiplied by exp(alpha + delta) (`Calibration.factor`) and the rest by exp(alpha)
(`Calibration.scale`: the same for every candidate, it changes no choice). A variant measured 3x slower than predicted
on 8 samples of w = 1, beside one measured as predicted on 8, is predicted 2.4x slower than it on a new signature;
on 1 sample, 1.4x. An adapter slower than its class's model throughout gets alpha alone (every delta 0): fitting the
rates first and the shared factor on them (the first version) divided each sample's r by its w, so that an adapter
1.5x slower on samples of w = 0.3 read 3.9x. Factors stay within [1/MAX_FACTOR, MAX_FACTOR].

What a store gives back is checked here (never trusted over the package): a key that is not a rate key of this
package's variants and dtypes, sums that are not finite numbers, a count out of range, or sums no samples could add
up to (a share outside (0, 1], a mean ratio past the bound), or more keys than the record keeps, is dropped with a
reason, the rest kept. Pure Python (a first call imports it).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from .cost_model import rate_key

PRIOR = 2.0  # samples' worth (in w^2) of belief in the package's model, against a rate key's own delta
MAX_FACTOR = 32.0  # a sample's ratio, and an applied factor, within [1/32, 32] (plan-store.mjs CALIBRATION)
MAX_COUNT = 64  # a key's count past this is scaled back to it, its other sums alike (plan-store.mjs CALIBRATION)
MAX_KEYS = 256  # rate keys kept per adapter (plan-store.mjs CALIBRATION)
SUMS = ("n", "w", "ww", "log", "wlog")  # what the record keeps per rate key (plan-store.mjs `calibrated`)
SLACK = 1 + 1e-9  # the sums' bounds, past float rounding
DTYPES = ("float32", "float16")
KEY = re.compile(r"([a-z][a-z0-9_]{0,63})(?:/([a-z][a-z0-9-]{0,63}))?/([a-z0-9]{1,16})")


def _why_not(key, entry) -> str | None:
    """Why a stored (key, {n, w, ww, log, wlog}) is not a calibration of this package (None when it is)."""
    from .variants import VARIANTS

    match = KEY.fullmatch(key) if isinstance(key, str) else None
    if match is None:
        return "not a rate key"
    if match[1] not in VARIANTS or match[3] not in DTYPES:
        return "no variant or dtype of this package"
    if not isinstance(entry, dict) or set(entry) != set(SUMS):
        return "not {" + ", ".join(SUMS) + "}"
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in entry.values()):
        return "a sum that is not a finite number"
    n, w, ww, log, wlog = (entry[k] for k in SUMS)
    if not 0 < n <= MAX_COUNT:
        return f"a count outside (0, {MAX_COUNT}]"
    # each sample's share is in (0, 1]: so 0 < ww <= w <= n, and w^2 <= n * ww (Cauchy-Schwarz)
    if not (0 < ww <= w * SLACK and w <= n * SLACK and w * w <= n * ww * SLACK):
        return "shares no samples could add up to"
    bound = math.log(MAX_FACTOR) * SLACK
    if abs(log) > n * bound or abs(wlog) > w * bound:
        return f"a mean ratio past {MAX_FACTOR:g}x"
    return None


def checked(given) -> tuple[dict[str, tuple[float, ...]], list[str]]:
    """A stored calibration ({rate key: {n, w, ww, log, wlog}}) as {key: (n, w, ww, log, wlog)} of what holds, and
    why each part that does not was dropped."""
    if given is None:
        return {}, []
    if not isinstance(given, dict):
        return {}, [f"the calibration is a {type(given).__name__}, not an object: dropped"]
    kept, dropped = {}, []
    for key, entry in given.items():
        why = "past the " + str(MAX_KEYS) + " keys kept" if len(kept) == MAX_KEYS else _why_not(key, entry)
        if why is None:
            kept[key] = tuple(float(entry[k]) for k in SUMS)
        else:
            dropped.append(f"calibration {str(key)[:80]!r} dropped ({why})")
    return kept, dropped


@dataclass(frozen=True)
class Calibration:
    """Log corrections of an adapter's predictions, from checked {key: (n, w, ww, log, wlog)}: the adapter's factor on
    every prediction (`base`, alpha) and each rate key's and each variant's delta on the part its rate decides."""

    base: float = 0.0
    keys: dict = field(default_factory=dict)  # rate key -> its shrunk delta
    variants: dict = field(default_factory=dict)  # "variant/dtype" -> its keys' pooled delta, for those not measured

    @classmethod
    def of(cls, rates: dict[str, tuple[float, ...]]) -> "Calibration | None":
        if not rates:
            return None
        # least squares of r = alpha + w * delta[key] + ridge PRIOR on each delta: delta[key] given alpha is
        # (wlog - alpha * w) / (ww + PRIOR); put into alpha's own equation, alpha solves in closed form. Its divisor
        # is positive: w^2 <= n * ww < n * (ww + PRIOR) per key.
        divisor = numerator = 0.0
        for n, w, ww, log, wlog in rates.values():
            divisor += n - w * w / (ww + PRIOR)
            numerator += log - w * wlog / (ww + PRIOR)
        alpha = numerator / divisor
        pooled: dict[str, list[float]] = {}
        for key, (_, w, ww, _, wlog) in rates.items():
            acc = pooled.setdefault(_variant_dtype(key), [0.0, 0.0, 0.0])
            acc[0] += w
            acc[1] += ww
            acc[2] += wlog

        def delta(w: float, ww: float, wlog: float) -> float:
            return (wlog - alpha * w) / (ww + PRIOR)
        return cls(alpha, {k: delta(s[1], s[2], s[4]) for k, s in rates.items()},
                   {v: delta(*acc) for v, acc in pooled.items()})

    def factor(self, key: str) -> float:
        """What the part of a prediction that rate `key` decides is multiplied by on this adapter: the adapter's
        factor times its key's delta, else (a structure not measured) its variant's in that dtype, else none."""
        return _bounded(self.base + self.keys.get(key, self.variants.get(_variant_dtype(key), 0.0)))

    @property
    def scale(self) -> float:
        """What the rest of every prediction (launches, threads, outputs) is multiplied by: the adapter's factor
        alone, the same for every candidate, so that it changes no choice by itself."""
        return _bounded(self.base)


def _variant_dtype(key: str) -> str:
    """The structure-less rate key of a rate key's variant and dtype: where its variant's keys of that dtype pool."""
    parts = key.split("/")
    return rate_key(parts[0], "", parts[-1])


def _bounded(log_factor: float) -> float:
    """exp(log_factor) within [1/MAX_FACTOR, MAX_FACTOR]."""
    bound = math.log(MAX_FACTOR)
    return math.exp(min(bound, max(-bound, log_factor)))


def of_request(given) -> tuple[Calibration | None, list[str]]:
    """The calibration a plan request carries (app/bridge.py plan_launch), checked: (Calibration or None, what
    was dropped)."""
    rates, dropped = checked(given)
    return Calibration.of(rates), dropped
