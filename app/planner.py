"""The one place that chooses a plan: validated geometry -> Plan (app/plan.py).

Coverage and choice are separate. Who *can* run a request is each variant's own declaration (features,
dtypes, CONDITIONS) and its pure `configure` (app/variants/base.py Variant.configured): every variant that
returns a Plan is a candidate (`candidates`), with the tiles this adapter's tuning table measured for the
request's shape class, else its defaults. Who *should* is decided here, in this order, and the plan's
`reason` says which step decided and why:

1. forced: the caller's `variant` (and tile `params` over its defaults or the table's);
2. measured: a stored measurement under the request's key (shape class, adapter, package revision) -- the
   autotune store's choice for the signature (`measured`, app/autotune.py), else this adapter's tuning table
   `choices` entry for the shape class (app/tuning_tables.py measured_choice);
3. predicted: the candidate the adapter's calibrated cost model (app/cost_model.py) predicts fastest, its
   predictions corrected by what adaptation measured on this adapter where the caller passes that
   (`calibration`, app/calibration.py).

A seed name (app/variants/seed.py) is reported in place of its successor wherever it makes the same plan.
Why one pipeline instead of an ordered rule table: docs/decisions.md#one-pipeline.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from . import cost_model, tuning_tables
from .calibration import Calibration
from .caps import DeviceCaps
from .errors import ConvTransposeError
from .plan import Plan, Refusal
from .shapes import ConvGeometry
from .variants import VARIANTS, gather
from .variants.base import Variant

EMPTY_INPUT = "empty_input_fill"


@dataclass(frozen=True)
class Candidate:
    """A variant and its tile params (None: the table's tiles for the shape class, else its defaults)."""

    variant: str
    params: dict | None = None
    # "defaults", "table" (tiles measured on this shape class), "grid" (measured elsewhere), "configuration" (one
    # the variant declares: app/variants/base.py Configuration)
    origin: str = "defaults"

    def key(self) -> tuple:
        return self.variant, tuple(sorted((self.params or {}).items()))


def kernels() -> list[Variant]:
    """Every variant that runs shaders of its own (the seed's names run their successors')."""
    return [v for v in VARIANTS.values() if not v.tuned_as]


def _configured(name: str, geom: ConvGeometry, caps: DeviceCaps, reason: str, params: dict | None,
                tables: list[dict] | None) -> Plan | Refusal:
    variant = VARIANTS[name]
    return variant.configured(geom, caps, reason, forced=params,
                              tuned=tuning_tables.lookup(variant.tuning_name, geom, caps, tables))


def candidates(geom: ConvGeometry, caps: DeviceCaps, tables: list[dict] | None = None,
               grid: int = 0) -> list[tuple[Candidate, Plan]]:
    """Every covering (candidate, plan): each kernel with its table tiles or defaults, and with `grid` > 0 up
    to that many more tiles per tunable kernel, those the tables measured best most often elsewhere, then every
    configuration the kernel declares that it runs here (a first call ranks the first kind only: the structures'
    rates are not all calibrated yet, and its choice stays what the tables measured)."""
    if geom.x_size == 0 and VARIANTS[EMPTY_INPUT].why_not(geom, caps) is None:
        # Nothing to multiply: the fill writes the bias without reading x or w (docs/decisions.md#empty-input).
        return [(Candidate(EMPTY_INPUT), VARIANTS[EMPTY_INPUT].configured(geom, caps))]
    out, seen = [], set()
    for variant in kernels():
        tuned = tuning_tables.lookup(variant.name, geom, caps, tables)
        plan = variant.configured(geom, caps, tuned=tuned)
        if isinstance(plan, Refusal):
            continue
        base = Candidate(variant.name, plan.tiles or None, "table" if tuned else "defaults")
        out.append((base, plan))
        seen.add(base.key())
        if not grid or variant.tunable is None:
            continue
        extra = 0
        for params in tuning_tables.grid_params(variant.name, caps, tables):
            full = dict(plan.tiles) | params
            if extra == grid or variant.tunable.refusal(full, geom, caps) is not None:
                continue
            more = variant.configured(geom, caps, forced=full)
            if isinstance(more, Refusal) or Candidate(variant.name, more.tiles).key() in seen:
                continue
            out.append((Candidate(variant.name, more.tiles, "grid"), more))
            seen.add(Candidate(variant.name, more.tiles).key())
            extra += 1
        for configuration in variant.tunable.configurations:
            params = variant.tunable.resolve(configuration, geom, caps)
            more = variant.configured(geom, caps, forced=params) if params is not None else None
            if more is None or isinstance(more, Refusal) or Candidate(variant.name, more.tiles).key() in seen:
                continue
            out.append((Candidate(variant.name, more.tiles, "configuration"), more))
            seen.add(Candidate(variant.name, more.tiles).key())
    return out


def prediction(geom: ConvGeometry, caps: DeviceCaps, plan: Plan, calibration: Calibration | None = None) -> dict | None:
    """What the package's cost model (uncorrected) predicts of a plan, {key: its rate key, model_ms, fixed_ms: the
    part no rate decides, predicted_ms: model_ms corrected by `calibration` as `ranked` ranks it}, for adaptation to
    measure it against (app/calibration.py) and bound its candidates by; None where no table of the adapter's class
    has a model."""
    model = tuning_tables.cost_model(caps)
    if model is None:
        return None
    named = VARIANTS.get(plan.variant)
    f = cost_model.features(replace(plan, variant=named.tuned_as) if named and named.tuned_as else plan, geom)
    ms, fixed = cost_model.predict(f, model), cost_model.fixed_ms(f, model)
    return {"key": f.key, "model_ms": ms, "fixed_ms": fixed, "predicted_ms": _corrected(ms, fixed, f.key, calibration)}


def _corrected(ms: float, fixed: float, key: str, calibration: Calibration | None) -> float:
    """A prediction corrected by what adaptation measured: the part the rate decides times the key's factor, the rest
    times the shared scale."""
    if calibration is None:
        return ms
    return fixed * calibration.scale + (ms - fixed) * calibration.factor(key)


def ranked(geom: ConvGeometry, caps: DeviceCaps, tables: list[dict] | None = None,
           grid: int = 0, calibration: Calibration | None = None) -> list[tuple[Candidate, Plan, float]]:
    """The candidates, fastest predicted first, each with its predicted ms (this adapter's cost model, the part its
    rate decides times `calibration`'s factor for the plan's rate key, the rest times its shared scale; where no
    table has a model, the candidates' order with predictions of 0); with `grid` > 0, each kernel's own tiles and the
    `grid` fastest of its other tiles and configurations, so that a search spans variants."""
    model = tuning_tables.cost_model(caps)
    rows = candidates(geom, caps, tables, grid)
    if model is None:
        order = [(c, p, 0.0) for c, p in rows]
    else:
        def predicted(plan: Plan) -> float:
            f = cost_model.features(plan, geom)
            return _corrected(cost_model.predict(f, model), cost_model.fixed_ms(f, model), f.key, calibration)
        order = sorted(((c, p, predicted(p)) for c, p in rows), key=lambda r: r[2])
    others: dict[str, int] = {}
    kept = []
    for c, p, ms in order:
        if c.origin in ("grid", "configuration"):
            others[c.variant] = others.get(c.variant, 0) + 1
            if others[c.variant] > grid:
                continue
        kept.append((c, p, ms))
    return kept


# the pool of adaptation's trials: each kernel in its own tiles and in up to this many others (`ranked`'s grid)
GRID = 2


def alternatives(geom: ConvGeometry, caps: DeviceCaps, chosen: Plan, count: int,
                 tables: list[dict] | None = None, calibration: Calibration | None = None) -> list[dict]:
    """The next-best candidates to the chosen plan, for a kernel to time on real calls (web/runtime/adapt.mjs,
    which bounds them by the chosen plan's measured time or prediction, whichever is longer: a prediction alone is
    the one most often wrong): at most `count` of `ranked` with grid tiles, fastest predicted first (each kernel's own
    tiles first where `own_tiles_first`).
    [{variant, params, key, model_ms, fixed_ms (`prediction`'s), predicted_ms (corrected by `calibration`), origin
    (Candidate.origin)}]."""
    rows = ranked(geom, caps, tables, grid=GRID, calibration=calibration)
    if own_tiles_first(caps):
        rows = _own_tiles_first(rows)
    chosen_key = Candidate(chosen.variant, chosen.tiles or None).key()
    out, seen = [], set()
    for candidate, plan, ms in rows:
        if len(out) == count:
            break
        # tiles the model cannot tell apart (the same prediction) are one candidate to it: the first stands for them
        if Candidate(plan.variant, plan.tiles or None).key() == chosen_key or (plan.variant, ms) in seen:
            continue
        seen.add((plan.variant, ms))
        out.append({"variant": candidate.variant, "params": dict(plan.tiles) or None,
                    **(prediction(geom, caps, plan) or {}), "predicted_ms": ms, "origin": candidate.origin})
    return out


def own_tiles(name: str, geom: ConvGeometry, caps: DeviceCaps) -> dict | None:
    """The tiles variant `name` plans with unforced on this adapter (its table's for the shape class, else its
    defaults): its own, as `candidates` ranks it first; None where it does not cover the request."""
    out = _configured(name, geom, caps, "", None, None)
    return None if isinstance(out, Refusal) else dict(out.tiles)


def own_tiles_first(caps: DeviceCaps) -> bool:
    """Whether, on this adapter's class, a kernel's own tiles (the table's for the shape class, else its defaults) were
    faster more often than other tiles its cost model ranked ahead of them (the model's `tile_ranking`, measured by
    tools/cost_model_fit.py on `--variants candidates` runs; none measured: the model's order stands)."""
    counts = (tuning_tables.cost_model(caps) or {}).get("tile_ranking") or {}
    return counts.get("own", 0) > counts.get("model", 0)


def _own_tiles_first(rows: list[tuple[Candidate, Plan, float]]) -> list[tuple[Candidate, Plan, float]]:
    """The rows with each kernel's own tiles moved ahead of its other tiles, into the place its first row held: the
    kernels keep their order, a trial's one-per-kernel shortlist (web/runtime/adapt.mjs) takes the own tiles."""
    queues: dict[str, list] = {}
    for row in sorted(rows, key=lambda r: r[0].origin not in ("defaults", "table")):
        queues.setdefault(row[0].variant, []).append(row)
    return [queues[c.variant].pop(0) for c, _, _ in rows]


def starter(geom: ConvGeometry, caps: DeviceCaps, chosen: str | None = None,
            calibration: Calibration | None = None) -> dict | None:
    """A quick first kernel for a signature whose plan compiles slowly (web/runtime/kernel.mjs weighs it and runs it
    first): the rank's general gather kernel, the smallest shader that covers every request, with the model's
    predictions of it and of the `chosen` variant (None: the table's choice for the shape class, else the model's
    fastest: what `plan` picks but a learned choice), {variant, predicted_ms, chosen, chosen_ms}; None where the
    chosen plan is that kernel, the output or x is empty, or no model predicts them. Ranks once: it runs before a
    revisit's first result."""
    name = gather.NAMES[geom.rank]
    if geom.y_size == 0 or geom.x_size == 0:
        return None
    order = ranked(geom, caps, calibration=calibration)
    if chosen is None:
        table = tuning_tables.measured_choice(geom, caps)
        chosen = table["variant"] if table and table["variant"] in VARIANTS else order[0][0].variant if order else None
    rows = {c.variant: ms for c, _, ms in order}
    if chosen == name or not rows.get(name) or not rows.get(chosen):
        return None
    return {"variant": name, "predicted_ms": rows[name], "chosen": chosen, "chosen_ms": rows[chosen]}


def _forced(geom: ConvGeometry, caps: DeviceCaps, variant: str, params: dict | None,
            tables: list[dict] | None) -> Plan | Refusal:
    if variant not in VARIANTS:
        raise ConvTransposeError(f"unknown variant {variant!r}; known: {sorted(VARIANTS)}", "variant")
    return _configured(variant, geom, caps, "forced by the caller", params, tables)


def refusal(geom: ConvGeometry, caps: DeviceCaps, variant: str, params: dict | None = None,
            tables: list[dict] | None = None) -> str | None:
    """Why `variant`, forced, does not cover the request on this device (None when it does)."""
    out = _forced(geom, caps, variant, params, tables)
    return out.why_not if isinstance(out, Refusal) else None


def _seed_named(plan: Plan, geom: ConvGeometry, caps: DeviceCaps) -> Plan:
    """The plan under a seed's name where that seed makes the same passes (app/variants/seed.py)."""
    for seed in VARIANTS.values():
        if seed.tuned_as == plan.variant:
            same = seed.configured(geom, caps, plan.reason, forced=plan.tiles or None)
            if not isinstance(same, Refusal) and same.dispatches == plan.dispatches:
                return same
    return plan


def plan(geom: ConvGeometry, caps: DeviceCaps, variant: str | None = None, params: dict | None = None,
         tables: list[dict] | None = None, measured: tuple[Candidate, str] | None = None,
         calibration: Calibration | None = None) -> Plan:
    """The request's plan: `variant` forced (with `params` over its tiles), else a stored measurement
    (`measured`: the autotune store's (candidate, why), then the tuning table's choice), else the cost
    model's fastest candidate, its predictions corrected by `calibration` (what adaptation measured on this
    adapter). `tables` None: the tables in use, []: none."""
    if variant is not None:
        out = _forced(geom, caps, variant, params, tables)
        if isinstance(out, Refusal):
            raise ConvTransposeError(f"variant {variant!r} does not cover this request: it {out.why_not}", "variant")
        return out
    if params is not None:
        raise ConvTransposeError("forced params need a forced variant", "variant")
    stored = []
    if measured is not None:
        stored.append(measured)
    choice = tuning_tables.measured_choice(geom, caps, tables)
    if choice is not None and choice["variant"] in VARIANTS:
        stored.append((Candidate(choice["variant"], choice["params"], "table"),
                       f"measured fastest for its shape class {tuning_tables.shape_class(geom)} on this adapter "
                       f"(tuning/{tuning_tables.file_name(caps)})"))
    for candidate, why in stored:
        out = _configured(candidate.variant, geom, caps, why, candidate.params, tables)
        # Only as measured: params the variant now refuses would have fallen back to its defaults.
        if not isinstance(out, Refusal) and set((candidate.params or {}).items()) <= set(out.tiles.items()):
            return _seed_named(out, geom, caps)
    order = ranked(geom, caps, tables, calibration=calibration)
    if not order:
        raise AssertionError("the general gather kernels cover every valid request")
    best, best_plan, ms = order[0]
    if len(order) == 1:
        why = "the only covering variant"
    elif ms == 0.0:
        why = "the first covering variant (no cost model is calibrated for this adapter's class)"
    else:
        runner_up = order[1]
        calibrated = f", calibrated on this adapter ({len(calibration.keys)} rates measured)" if calibration else ""
        why = (f"predicted fastest of {len(order)} covering variants by the cost model{calibrated} ({ms:.3g} ms; "
               f"next {runner_up[0].variant} {runner_up[2]:.3g} ms)")
    return _seed_named(replace(best_plan, reason=why), geom, caps)
