// Adaptation on repeated calls: the planner's first pick runs a signature's first call at once; while the
// signature keeps being called, a few of the next-best candidates (app/planner.py alternatives: none predicted
// past a bound) run real calls, timed on the GPU (timestamps where the device has them, else the call's wall
// time), and the fastest is kept: later calls, and later visits through the store, run it. Every candidate is a
// tested variant, so a call is right whichever runs; variants differ in rounding within the stated tolerances,
// so a caller that needs bit-identical runs turns this off (`adapt: false`).
//
// A Trial is one signature's exploration, as data: which candidate the next call runs, the times each took,
// what the exploration cost (time spent on candidates slower than the first pick, and their warm-up calls apart),
// and the winner.

export const ADAPT = {
  count: 3,  // alternatives timed beside the first pick
  pool: 8,  // next-best candidates asked of the planner, of which `count` are timed (shortlist)
  within: 4,  // none predicted past this multiple of the first pick's measured time (or prediction, if longer)
  samples: 2,  // timed calls per alternative (after one warm-up call each: its buffers, its weight passes)
  abort: 1.5,  // an alternative whose first timed call is past this multiple of the first pick's stops
  warmupAbort: 6,  // an alternative whose warm-up (its weight passes included) is past this multiple of the first
  // pick's call stops
  margin: 0.05,  // an alternative replaces the first pick only when its median ratio is this much below 1 (the
  // tables' margin, app/class_choice.py MARGIN: tests/test_class_choice.py holds them equal)
  budget: 0.1,  // exploration stops once it has cost this share of FIRST_CALLS calls of the first pick
  noise: 2,  // a timed call's excess over the first pick may reach this multiple of its warm-up's (timer noise)
};
const FIRST_CALLS = 50;

/** The alternatives a trial times, of the planner's next-best (fastest predicted first): one per variant other
 * than the first pick's before any other tiles of a variant already in (the cost model tells variants apart
 * worse than tiles of one: the misses it leaves are of the variant). */
export function shortlist(alternatives, firstVariant, count = ADAPT.count) {
  const seen = new Set([firstVariant]), distinct = [], rest = [];
  for (const a of alternatives) {
    (seen.has(a.variant) ? rest : distinct).push(a);
    seen.add(a.variant);
  }
  return [...distinct, ...rest].slice(0, count);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : Infinity;
};

/** Timed calls an alternative needs: `samples`, and one more where two disagree across the margin (one faster by
 * it, one slower than the first pick: a median of two is then their mean, and one outlier decides). */
const needed = (a) => a.ratios.length === ADAPT.samples && Math.min(...a.ratios) < 1 - ADAPT.margin &&
  Math.max(...a.ratios) > 1 ? ADAPT.samples + 1 : ADAPT.samples;
const unfinished = (a) => !a.stopped && a.ratios.length < needed(a);

// Each timed call of an alternative follows a call of the first pick, and is read as the ratio of the two: a GPU
// between calls changes its clocks (timed between host round trips, an H100 ran one layer 5x slower per call than
// back to back), and a ratio of neighbours holds where either time alone drifts.
export class Trial {
  /** first: {variant, params, launch} (the planner's pick, its launch run by the first call); pool: the
   * planner's next-best [{variant, params, predicted_ms}], fastest predicted first, of which begin() takes the
   * alternatives (their launches are planned later: `launch` null until then). */
  constructor(first, pool) {
    // the first pick's first call (the planning call) made its buffers and ran its weight passes: a warm-up too
    this.first = { ...first, warm: false, times: [] };
    this.pool = pool;
    this.alternatives = [];
    this.calls = 0;  // calls of the signature so far, whichever candidate ran them
    this.planningAt = null;  // the call after which the alternatives' planning started
    this.reference = null;  // the first pick's time on the call before, for the next alternative's ratio
    this.costMs = 0;  // timed calls of alternatives, above the first pick's call before each
    this.warmupMs = 0;  // the alternatives' first calls, whole
    this.winner = null;  // set when the trial is over: a candidate (the first pick when none beat it)
    this.released = false;  // its launches let go (release): over, or its first pick's launch left the executor
  }

  get done() { return this.winner !== null; }

  /** Once the first pick has a time: the alternatives to plan, none predicted past `within` times that time or the
   * first pick's own prediction, whichever is longer (a first pick measured slower than predicted is the model's
   * miss: its candidates are bounded by the time; one measured faster, by a prediction a calibration scaled up with the
   * candidates', the model's order is). Returns them. */
  begin() {
    this.planningAt = this.calls;
    const bound = this.bound();
    this.alternatives = shortlist(this.pool.filter((a) => a.predicted_ms <= bound), this.first.variant)
      .map((a) => ({ ...a, launch: null, warm: false, times: [], ratios: [], stopped: null, readyAt: null }));
    if (!this.alternatives.length) this.decide();
    return this.alternatives;
  }

  /** The alternative being explored: the one under way, else the first ready (in the trial's order) that is
   * left; null when none is ready. */
  current() {
    return this.alternatives.find((a) => a.warm && unfinished(a)) ??
      this.alternatives.find((a) => a.launch && unfinished(a)) ?? null;
  }

  /** The candidate the next call runs: the alternative under exploration once the first pick has a time (its
   * warm-up, then each timed call after one of the first pick); else, while none is ready, the leader. */
  pick() {
    const alt = this.current();
    if (!this.first.times.length) return this.first;
    if (!alt) return this.leader();
    return !alt.warm || this.reference !== null ? alt : this.first;
  }

  /** What serves the calls that time nothing: the alternative that has beaten the first pick by the margin with
   * all its samples (the lowest ratio), else the first pick. A trial waiting on a slow compile (1-3 s on
   * SwiftShader) runs the faster kernel it has found meanwhile. */
  leader() {
    let best = this.first, bestRatio = 1 - ADAPT.margin;
    for (const a of this.alternatives) {
      if (a.stopped || a.ratios.length < needed(a)) continue;
      const ratio = median(a.ratios);
      if (ratio < bestRatio) { best = a; bestRatio = ratio; }
    }
    return best;
  }

  /** A call of `candidate` took `ms` (GPU time, else wall time). */
  record(candidate, ms) {
    this.calls += 1;
    if (candidate !== this.first && candidate.warm && !unfinished(candidate)) {
      this.reference = null;  // the leader served a call: the next timed call follows one of the first pick
      return;
    }
    if (candidate === this.first && !candidate.warm) {
      candidate.warm = true;
      return;
    }
    if (candidate === this.first) {
      this.first.times.push(ms);
      this.reference = ms;
      // the bound holds against the first pick's time as measured so far, not only its one time at begin() (a slow
      // call of a short layer let in candidates predicted far past it: docs/decisions.md#adapt-schedule); one with
      // timed calls, or whose warm-up beat the first pick, has its own evidence and stays
      const bound = this.bound();
      const past = this.alternatives.filter((a) => unfinished(a) && !a.ratios.length && !(a.warmup < 1) &&
                                                   a.predicted_ms > bound);
      past.forEach((a) => this.stop(a, "predicted past the bound"));
      return;
    }
    if (!candidate.warm) {
      // its first call made its buffers and ran its weight passes, as the first pick's first call did: a one-time
      // cost, reported apart (warmupMs), not a time of the candidate; far past the first pick even so, it stops
      candidate.warm = true;
      this.warmupMs += ms;
      this.reference = null;  // its timed calls follow a call of the first pick made after it
      const last = this.first.times.at(-1);
      candidate.warmup = ms / last;
      if (ms > ADAPT.warmupAbort * last) this.stop(candidate, "slower at its warm-up");
      // its warm-up (weight passes included) bounds what a timed call of it would cost, to within the timer's
      // noise: one that would pass the budget at `noise` times that is not made
      else if (this.costMs + ADAPT.noise * (ms - last) > this.budgetMs()) this.stop(candidate, "out of budget");
      return;
    }
    const base = this.reference;
    this.reference = null;
    this.costMs += Math.max(0, ms - base);
    candidate.times.push(ms);
    candidate.ratios.push(ms / base);
    // past the stop ratio at once, it stops; unless its warm-up, weight passes and all, beat the first pick: the one
    // call is then the outlier, and more samples decide
    if (candidate.ratios.length === 1 && ms > ADAPT.abort * base && !(candidate.warmup < 1)) candidate.stopped = "slower at once";
    // a timed call is made while the budget has room for one at the stop ratio (one past it stops at once), or at
    // the candidate's own slowest ratio if past that (a third sample after one far slower)
    const room = this.budgetMs() - this.costMs, firstMs = median(this.first.times);
    for (const a of this.alternatives) {
      if (unfinished(a) && (Math.max(ADAPT.abort, ...a.ratios) - 1) * firstMs > room) a.stopped = "out of budget";
    }
    this.decideIfOver();
  }

  /** None is timed that is predicted past `within` times the first pick's measured time or its own prediction,
   * whichever is longer (begin). */
  bound() {
    return ADAPT.within * Math.max(median(this.first.times), this.first.predicted_ms ?? 0);
  }

  budgetMs() {
    return ADAPT.budget * FIRST_CALLS * median(this.first.times);
  }

  /** An alternative's launch is ready: it is explored from the next call. */
  ready(candidate, launch, planMs) {
    candidate.launch = launch;
    candidate.readyAt = this.calls;
    candidate.planMs = planMs;
  }

  /** An alternative whose launch could not be planned is not explored. */
  unplannable(candidate, why) {
    this.stop(candidate, `not planned (${why})`);
  }

  stop(candidate, why) {
    candidate.stopped = why;
    this.decideIfOver();
  }

  decideIfOver() {
    if (!this.alternatives.some(unfinished)) this.decide();
  }

  decide() {
    this.winner = this.leader();
    this.release();
  }

  /** Lets go of the candidates' launches: the executor destroys them, but held here they kept their pipelines
   * (and, through them, their WGSL) for every signature the kernel ever saw. What report() reads stays. */
  release() {
    this.released = true;
    this.first.launch = null;
    for (const a of this.alternatives) a.launch = null;
  }

  /** What the trial measured of the cost model, for its calibration on this adapter (plan-store.mjs calibrated,
   * app/calibration.py): one {key, model_ms, fixed_ms, ms} per candidate with a time and the package model's
   * prediction (`key`, `model_ms`, `fixed_ms` from the planner), an alternative's time its median ratio times the
   * first pick's median. */
  samples() {
    const base = median(this.first.times);
    if (!Number.isFinite(base)) return [];
    const sample = (c, ms) => (typeof c.key === "string" && c.model_ms > 0
      ? [{ key: c.key, model_ms: c.model_ms, fixed_ms: c.fixed_ms, ms }] : []);
    return [...sample(this.first, base),
            ...this.alternatives.flatMap((a) => (a.ratios.length ? sample(a, median(a.ratios) * base) : []))];
  }

  /** What the trial did, for `kernel.adaptations()` and the bench. */
  report() {
    const ms = (c) => Number.isFinite(median(c.times)) ? median(c.times) : null;
    const row = (c) => ({ variant: c.variant, params: c.params ?? null, ms: ms(c), samples: c.times.length,
                          ...(c.ratios ? { ratio: Number.isFinite(median(c.ratios)) ? median(c.ratios) : null } : {}),
                          ...(c.ratios ? { ratios: c.ratios, warmup: c.warmup ?? null, ready_at: c.readyAt,
                                           plan_ms: c.planMs ?? null } : {}),
                          ...(c.stopped ? { stopped: c.stopped } : {}),
                          ...(c.predicted_ms !== undefined ? { predicted_ms: c.predicted_ms } : {}) });
    const firstMs = ms(this.first);
    return { first: row(this.first), candidates: this.alternatives.map(row), calls: this.calls, done: this.done,
             planning_at: this.planningAt, serving: this.winner ? null : row(this.leader()),
             chosen: this.winner ? row(this.winner) : null, cost_ms: this.costMs, warmup_ms: this.warmupMs,
             cost_share: firstMs ? this.costMs / (FIRST_CALLS * firstMs) : null };
  }
}
