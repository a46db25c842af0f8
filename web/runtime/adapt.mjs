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
  within: 4,  // none predicted past this multiple of the first pick's time
  samples: 3,  // timed calls per candidate (after one warm-up call each: its buffers, its weight passes)
  abort: 1.5,  // an alternative whose first timed call is past this multiple of the first pick's median stops
  margin: 0.05,  // an alternative replaces the first pick only when its median is this much lower
  budget: 0.1,  // exploration stops once it has cost this share of FIRST_CALLS calls of the first pick
};
const FIRST_CALLS = 50;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : Infinity;
};

export class Trial {
  /** first: {variant, params, launch} (the planner's pick, its launch run by the first call); alternatives:
   * [{variant, params, predicted_ms}] (their launches are planned later: `launch` null until then). */
  constructor(first, alternatives) {
    this.first = { ...first, warm: true, times: [], first: true };
    this.alternatives = alternatives.map((a) => ({ ...a, launch: null, warm: false, times: [], stopped: null }));
    this.calls = 1;  // the planning call ran the first pick
    this.costMs = 0;  // timed calls of candidates, above the first pick's median
    this.warmupMs = 0;  // the candidates' first calls, whole
    this.winner = null;  // set when the trial is over: a candidate (the first pick when none beat it)
  }

  get done() { return this.winner !== null; }

  /** The alternative being explored (its launch planned or not), or null when none is left. */
  current() {
    return this.alternatives.find((a) => !a.stopped && a.times.length < ADAPT.samples) ?? null;
  }

  /** The candidate the next call runs: the first pick until it has its samples, then the alternative under
   * exploration once its launch is ready (the first pick meanwhile). */
  pick() {
    if (this.first.times.length < ADAPT.samples) return this.first;
    const alt = this.current();
    return alt?.launch ? alt : this.first;
  }

  /** A call of `candidate` took `ms` (GPU time, else wall time). */
  record(candidate, ms) {
    this.calls += 1;
    const base = median(this.first.times);
    if (candidate !== this.first) {
      if (!candidate.warm) {
        // its first call made its buffers and ran its weight passes, as the first pick's first call did: a
        // one-time cost, reported apart (warmupMs), not a time of the candidate
        candidate.warm = true;
        this.warmupMs += ms;
      } else {
        if (Number.isFinite(base)) this.costMs += Math.max(0, ms - base);
        candidate.times.push(ms);
        if (candidate.times.length === 1 && ms > ADAPT.abort * base) candidate.stopped = "slower at once";
      }
    } else {
      this.first.times.push(ms);
    }
    if (this.costMs > ADAPT.budget * FIRST_CALLS * base) {
      for (const a of this.alternatives) if (!a.stopped && a.times.length < ADAPT.samples) a.stopped = "out of budget";
    }
    if (this.first.times.length >= ADAPT.samples && this.current() === null) this.decide();
  }

  /** An alternative whose launch could not be planned is not explored. */
  unplannable(candidate, why) {
    candidate.stopped = `not planned (${why})`;
    if (this.first.times.length >= ADAPT.samples && this.current() === null) this.decide();
  }

  decide() {
    const firstMs = median(this.first.times);
    let best = this.first, bestMs = firstMs;
    for (const a of this.alternatives) {
      const ms = a.times.length >= ADAPT.samples ? median(a.times) : Infinity;
      if (ms < bestMs) { best = a; bestMs = ms; }
    }
    this.winner = bestMs < firstMs * (1 - ADAPT.margin) ? best : this.first;
  }

  /** What the trial did, for `kernel.adaptations()` and the bench. */
  report() {
    const row = (c) => ({ variant: c.variant, params: c.params ?? null, ms: Number.isFinite(median(c.times)) ? median(c.times) : null,
                          samples: c.times.length, ...(c.stopped ? { stopped: c.stopped } : {}),
                          ...(c.predicted_ms !== undefined ? { predicted_ms: c.predicted_ms } : {}) });
    const firstMs = median(this.first.times);
    return { first: row(this.first), candidates: this.alternatives.map(row), calls: this.calls, done: this.done,
             chosen: this.winner ? row(this.winner) : null, cost_ms: this.costMs, warmup_ms: this.warmupMs,
             cost_share: Number.isFinite(firstMs) ? this.costMs / (FIRST_CALLS * firstMs) : null };
  }
}
