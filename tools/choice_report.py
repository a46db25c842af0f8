"""The planner's choice against the fastest covering variant, and both against cuDNN, from one GPU call's runs
(tools/gpu/choice_run.sh: `bench --variants all` of each tier in both dtypes, and tools/gpu/torch_bench.py).

    python3 tools/choice_report.py RUNS_DIR [--markdown OUT.md] [--json OUT.json] [--calibration ADAPT.jsonl]

The planner's choice is planned here, with this tree, for the run's device (RUNS_DIR/device.json, else the adapter an
adaptation run names on its first line): the same
deterministic plan the GPU machine made, whose time is that variant's row in the same run (every covering
variant was timed; a variant timed in several all-*.json files counts by the median of its medians, so that runs
repeated on a shared machine are read together; where there are several, `run to run` says how often one run's
fastest is within 10% of another's: the machine's own floor for that target). The fastest is the least median of
the layer's rows. Ratios against cuDNN are throughput
(cuDNN's time over ours), cuDNN timed in the same call. A layer's autotuned time is the fastest of the
candidates autotuning would time (app/autotune.py nominees) as measured in the same run.

Adaptation (tools/adapt_bench.mjs, RUNS_DIR/adapt-*.jsonl): the variant a layer's trial chose within its calls
(where the trial did not settle, what serves its calls meanwhile: a candidate that has beaten the first pick, else the
first pick); its time is that variant's row in the
`--variants all` run (its table tiles: a trial may have chosen other tiles of the same variant), so that the
adapted and the fastest are read off one run. Also the calls the trial took and what it cost: `cost_share`, the
timed calls above the first pick's median as a share of 50 calls of the first pick.

`--calibration`: the planner's choice as a kernel that has adapted elsewhere on this adapter makes it (app/calibration.py:
the last {"calibration"} line of an adaptation run on other layers, tools/adapt_bench.mjs), so that first calls with and
without it are read off the same `--variants all` run.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from app import autotune, calibration, planner  # noqa: E402
from app.shapes import infer  # noqa: E402
from app.variants import VARIANTS  # noqa: E402
from cost_model_fit import device_caps  # noqa: E402


def _geom(case: dict, dtype: str):
    b = [case["w"][1] * case["attributes"].get("group", 1)] if case.get("bias") else None
    return infer(case["x"], case["w"], b, case["attributes"], {n: dtype for n in ("x", "w", "b")})


def _gmean(values):
    values = [v for v in values if v]
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else float("nan")


def _median(values):
    v = [x for x in values if x]
    return statistics.median(v) if v else float("nan")


def _device(runs: Path) -> str:
    """RUNS_DIR/device.json, written from an adaptation run's first line ({device}) where there is none."""
    path = runs / "device.json"
    if not path.exists():
        for adapt in sorted(runs.glob("adapt-*.jsonl")):
            first = adapt.read_text().split("\n", 1)[0]
            if first.startswith('{"device"'):
                path.write_text(json.dumps(json.loads(first)["device"], indent=1))
                break
    return str(path)


def _tiles(r: dict) -> str:
    return json.dumps(r.get("tiles") or {}, sort_keys=True)


def _merged(rows: list[dict]) -> list[dict]:
    """One row per candidate (variant, tiles): the median of its runs' medians."""
    by: dict[tuple, list[dict]] = {}
    for r in rows:
        by.setdefault((r["variant"], _tiles(r)), []).append(r)
    return [rs[0] | {"median_ms": statistics.median(r["median_ms"] for r in rs), "runs_merged": len(rs)}
            for rs in by.values()]


def read_calibration(path: Path) -> calibration.Calibration | None:
    """The calibration an adaptation run ended with (its last {"calibration"} line), checked as a plan's is."""
    rates = None
    for line in path.read_text().splitlines():
        if line.startswith('{"calibration"'):
            rates = (json.loads(line)["calibration"] or {}).get("rates")
    got, dropped = calibration.of_request(rates)
    for why in dropped:
        print(f"{path}: {why}", file=sys.stderr)
    return got


def rows(runs: Path, calibrated: calibration.Calibration | None = None, adapt: str = "adapt-*.jsonl") -> list[dict]:
    caps = device_caps(_device(runs))
    benches = {"fresh": json.loads((runs / "fresh.json").read_text()) if (runs / "fresh.json").exists() else None,
               None: json.loads((ROOT / "bench.json").read_text())}
    torch = {}  # (tier, case, dtype) -> cuDNN's median ms; a torch run's rows name no tier: its file does
    for path in runs.glob("torch-*.json"):
        for r in json.loads(path.read_text()):
            for dtype in ("float32", "float16"):
                if r.get(dtype):
                    torch[(path.stem.removeprefix("torch-"), r["case"], dtype)] = r[dtype]["median_ms"]
    adapted = {}  # (tier, case, dtype) -> an adapt_bench row
    for path in runs.glob(adapt):
        for line in path.read_text().splitlines():
            if line.startswith('{"tier"'):
                r = json.loads(line)
                adapted[(r["tier"], r["case"], r["dtype"])] = r
    layers: dict[tuple, list[dict]] = {}
    for path in sorted(runs.glob("all-*.json")):
        dtype = "float16" if "float16" in path.name else "float32"
        for r in json.loads(path.read_text()):
            if r["check"]["ok"]:
                layers.setdefault((r["tier"], r["case"], dtype), []).append(r | {"run": path.name})
    out = []
    for (tier, name, dtype), rs in sorted(layers.items()):
        doc = benches["fresh"] if tier == "fresh" else benches[None]
        case = next(c for c in doc["cases"] if c["name"] == name and c["tier"] == tier)
        geom = _geom(case, dtype)
        # a row that names no tiles (a bench of one repeat, before it recorded them) ran its variant's own tiles
        rs = [r if "tiles" in r else r | {"tiles": planner.own_tiles(r["variant"], geom, caps)} for r in rs]
        repeat = run_to_run(rs)
        rs = _merged(rs)
        chosen = planner.plan(geom, caps, calibration=calibrated)
        kernel = VARIANTS[chosen.variant].tuning_name
        named = [r for r in rs if VARIANTS[r["variant"]].tuning_name == kernel]
        mine = [r for r in named if _tiles(r) == _tiles({"tiles": chosen.tiles})] or named
        best = min(rs, key=lambda r: r["median_ms"])
        nominated = {v for v, _ in autotune.nominees(geom, caps)}
        tuned = [r["median_ms"] for r in rs if VARIANTS[r["variant"]].tuning_name in nominated]
        ours = mine[0]["median_ms"] if mine else None
        cudnn = torch.get((tier, name, dtype))
        trial_row = adapted.get((tier, name, dtype))
        trial = (trial_row or {}).get("trial")
        if trial_row is None:
            adapted_variant = None
        elif trial:  # the trial's choice, else (not settled in its calls) what serves meanwhile
            adapted_variant = trial["chosen"]["variant"] if trial["done"] else \
                (trial.get("serving") or trial["first"])["variant"]
        else:
            adapted_variant = trial_row["last"]
        same = [r for r in rs if adapted_variant and VARIANTS[r["variant"]].tuning_name ==
                VARIANTS[adapted_variant].tuning_name]
        # an alternative the trial chose (its row has a ratio), in its own tiles: `--variants candidates` times
        # them; `--variants all` times each variant in its default tiles only, and where the choice is in others,
        # its time is the ratio the trial measured against the first pick times the first pick's bench time
        winner = (trial["chosen"] if trial["done"] else trial.get("serving")) if trial else None
        switched = bool(winner and "ratio" in winner)  # an alternative chose or serves (not the first pick)
        if switched:
            same = [r for r in same if _tiles(r) == _tiles({"tiles": winner.get("params")})] or same[:0]
        elif trial and adapted_variant == chosen.variant:
            same = mine  # the first pick held (or serves): its own tiles, of the variant's several a candidates run times
        adapted_ms, basis = (same[0]["median_ms"], "bench") if same else (None, None)
        if switched and not same and winner.get("ratio") and ours and _tiles(mine[0]) == _tiles({"tiles": chosen.tiles}):
            adapted_ms, basis = winner["ratio"] * ours, "trial ratio"
        # the trial's time of its first pick over the bench's: how far the calls' regime (clocks) is from the bench's
        first = mine if trial and trial["first"]["variant"] == chosen.variant else \
            [r for r in rs if trial and VARIANTS[r["variant"]].tuning_name == VARIANTS[trial["first"]["variant"]].tuning_name]
        regime = trial["first"]["ms"] / first[0]["median_ms"] if first and trial["first"]["ms"] else None
        out.append({"tier": tier, "case": name, "dtype": dtype, "planner": chosen.variant, "planner_ms": ours,
                    "reason": chosen.reason, "best": best["variant"], "best_ms": best["median_ms"],
                    "ratio_to_best": ours / best["median_ms"] if ours else None,
                    "autotuned_ms": min(tuned) if tuned else None, "cudnn_ms": cudnn,
                    "vs_cudnn": cudnn / ours if cudnn and ours else None,
                    "best_vs_cudnn": cudnn / best["median_ms"] if cudnn else None,
                    "group": "dense" if geom.group == 1 else "grouped", "candidates": len(rs),
                    "adapted": adapted_variant, "adapted_ms": adapted_ms,
                    "adapted_to_best": adapted_ms / best["median_ms"] if adapted_ms else None,
                    "trial_calls": trial["calls"] if trial else None, "settled": bool(trial and trial["done"]),
                    "cost_share": trial["cost_share"] if trial else None, "trial_over_bench": regime,
                    "adapted_basis": basis, "run_to_run": repeat})
    return out


def run_to_run(rows: list[dict]) -> list[float]:
    """Where a layer was timed in several runs: for each ordered pair of runs, the time in the second of the first's
    fastest candidate over the second's fastest (both of the candidates both timed). What "within 10% of the fastest"
    can mean on the machine: an oracle that knew one run's times, judged by another's."""
    runs: dict[str, dict] = {}
    for r in rows:
        runs.setdefault(r["run"], {})[(r["variant"], _tiles(r))] = r["median_ms"]
    out = []
    for a, times_a in runs.items():
        for b, times_b in runs.items():
            both = [k for k in times_a if k in times_b]
            if a != b and both:
                out.append(times_b[min(both, key=times_a.get)] / min(times_b[k] for k in both))
    return out


def summary(out: list[dict]) -> list[str]:
    lines = []
    for tier in sorted({r["tier"] for r in out}):
        for dtype in ("float32", "float16"):
            rs = [r for r in out if r["tier"] == tier and r["dtype"] == dtype and r["ratio_to_best"]]
            if not rs:
                continue
            q = [r["ratio_to_best"] for r in rs]
            auto = [r["autotuned_ms"] / r["best_ms"] for r in rs if r["autotuned_ms"]]
            lines.append(
                f"{tier} {dtype}: {len(rs)} layers; planner within 10% of the fastest covering variant on "
                f"{sum(x <= 1.10 for x in q)} ({100 * sum(x <= 1.10 for x in q) / len(q):.0f}%), within 25% on "
                f"{sum(x <= 1.25 for x in q)}, worst {max(q):.2f}x; autotune's candidates within 5% on "
                f"{sum(a <= 1.05 for a in auto)}/{len(auto)}; vs cuDNN (throughput, geometric mean): planner "
                f"{_gmean(r['vs_cudnn'] for r in rs):.2f}, fastest covering {_gmean(r['best_vs_cudnn'] for r in rs):.2f}")
            repeat = [x for r in rs for x in r["run_to_run"]]
            if repeat:
                lines.append(
                    f"{tier} {dtype} run to run (one run's fastest, timed in another run of the same layers): within 10% "
                    f"of that run's fastest on {sum(x <= 1.10 for x in repeat)} of {len(repeat)} "
                    f"({100 * sum(x <= 1.10 for x in repeat) / len(repeat):.0f}%), worst {max(repeat):.2f}x")
            ad = [r for r in rs if r["adapted_to_best"]]
            unmatched = sum(1 for r in rs if r.get("adapted") and not r["adapted_to_best"])
            if ad:
                a = [r["adapted_to_best"] for r in ad]
                trials = [r for r in ad if r["trial_calls"]]
                costs = [r["cost_share"] for r in trials if r["cost_share"] is not None]
                lines.append(
                    f"{tier} {dtype} adapted: within 5% of the fastest on {sum(x <= 1.05 for x in a)} of {len(a)} "
                    f"({100 * sum(x <= 1.05 for x in a) / len(a):.0f}%), within 25% on {sum(x <= 1.25 for x in a)}, "
                    f"worst {max(a):.2f}x; {len(trials)} trials, {sum(r['settled'] for r in trials)} settled, calls "
                    f"{max((r['trial_calls'] for r in trials), default=0)} at most; exploration cost "
                    f"{max(costs, default=0):.3f} of 50 first-pick calls at most; vs cuDNN "
                    f"{_gmean(r['cudnn_ms'] / r['adapted_ms'] for r in ad if r['cudnn_ms']):.2f}; the trial timed its first "
                    f"pick at a median {_median(r['trial_over_bench'] for r in ad):.2f}x the bench's time; "
                    f"{sum(r['adapted_basis'] == 'trial ratio' for r in ad)} adapted in other tiles than the bench's "
                    f"(their time: the trial's ratio to the first pick), {unmatched} not comparable")
    return lines


def markdown(out: list[dict]) -> str:
    head = ("| tier | layer | dtype | planner | ms | adapted | ms | calls | cost | fastest covering | ms | "
            "planner / fastest | adapted / fastest | cuDNN ms | ours vs cuDNN |\n|---|---|---|---|---|---|---|---|---|---|"
            "---|---|---|---|---|\n")
    nan = float("nan")
    body = "".join(
        f"| {r['tier']} | `{r['case']}` | {r['dtype'][5:]} | {r['planner']} | {r['planner_ms'] or nan:.4f} | "
        f"{r['adapted'] or '-'} | {r['adapted_ms'] or nan:.4f} | {r['trial_calls'] or '-'} | "
        f"{r['cost_share'] if r['cost_share'] is not None else nan:.3f} | "
        f"{r['best']} | {r['best_ms']:.4f} | {r['ratio_to_best'] or nan:.2f} | {r['adapted_to_best'] or nan:.2f} | "
        f"{r['cudnn_ms'] or nan:.4f} | {r['vs_cudnn'] or nan:.2f} |\n" for r in out)
    return head + body + "\n" + "\n".join(f"- {line}" for line in summary(out)) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", type=Path)
    parser.add_argument("--markdown")
    parser.add_argument("--json")
    parser.add_argument("--calibration", type=Path)
    parser.add_argument("--adapt", default="adapt-*.jsonl", help="the adaptation runs read (idle-*.jsonl: the GPU "
                        "idle between calls)")
    args = parser.parse_args()
    out = rows(args.runs, read_calibration(args.calibration) if args.calibration else None, args.adapt)
    for line in summary(out):
        print(line)
    if args.markdown:
        Path(args.markdown).write_text(markdown(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
