"""Calibrates an adapter's cost model (app/cost_model.py) from `bench --variants all` runs, and reports how
well a model ranks candidates on runs it never saw.

    python3 tools/cost_model_fit.py fit --device h200 --table tuning/nvidia-unknown-nvidia_h200.json \\
        RUN.json:BENCH.json ...          # rows of every covering variant, with the bench file of their cases
        [--tiles CANDIDATES.json:BENCH.json ...]   # `--variants candidates` runs: does the model rank tiles?
    python3 tools/cost_model_fit.py check --device h200 RUN.json:BENCH.json ...
    python3 tools/cost_model_fit.py crossval --device swiftshader RUN.json:BENCH.json ...

A run file's dtype is its cases' (the bench file as run: tools/gpu/as_dtype.py's output) unless its name
ends in -f16.json or -f32.json. `--device` names a device of tools/wgsl/matrix.py, or a device.json that
`python -m app device` printed. `fit` writes the model into the table (`cost_model`, with the runs and the
package revision it was calibrated at) and prints its error; `check` prints the rank correlation between
predicted and measured times over every covering candidate, and the planner's predicted pick against the
fastest measured candidate, per layer; `crossval` fits the model to all but one group of layers (a fresh seed's
layers of the calibration tier, or a tier) and checks it on that group, for each group: how a change to the model
generalises before any fresh seed is spent on it.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from app import class_choice, cost_model, planner, tuning_tables  # noqa: E402
from app.caps import DeviceCaps, usable_subgroup_sizes  # noqa: E402
from app.plan import Refusal  # noqa: E402
from app.shapes import infer  # noqa: E402
from app.variants import VARIANTS  # noqa: E402


def device_caps(name: str) -> DeviceCaps:
    """A device of the shader matrix by name, or the adapter a device.json describes."""
    from wgsl.matrix import caps_from_report, devices

    return caps_from_report(json.loads(Path(name).read_text())) if name.endswith(".json") else devices()[name]


def measured(specs: list[str], caps: DeviceCaps) -> list[dict]:
    """One record per timed candidate: its layer, dtype, variant, the plan's features and the measured ms (a candidate
    timed in several runs by the median of its medians, as tools/choice_report.py reads them: a software adapter's
    runs differ by 2x at times, and each run's row counted alone would make one candidate its own rival)."""
    out: dict[tuple, dict] = {}
    for spec in specs:
        run, _, bench = spec.partition(":")
        cases = {(c["tier"], c["name"]): c for c in json.loads(Path(bench or ROOT / "bench.json").read_text())["cases"]}
        forced_dtype = {"-f16.json": "float16", "-f32.json": "float32"}.get(run[-9:])
        for row in json.loads(Path(run).read_text()):
            case = cases.get((row["tier"], row["case"]))
            if case is None:
                continue  # a case the bench file no longer has
            dtype = forced_dtype or case.get("dtype", "float32")
            b = [case["w"][1] * case["attributes"].get("group", 1)] if case.get("bias") else None
            geom = infer(case["x"], case["w"], b, case["attributes"], {n: dtype for n in ("x", "w", "b")})
            plan = VARIANTS[row["variant"]].configured(geom, caps, forced=row.get("tiles") or None)
            if isinstance(plan, Refusal) or not row["check"]["ok"]:
                continue
            plan = replace(plan, variant=VARIANTS[row["variant"]].tuning_name)
            layer = f"{row['tier']}/{row['case']}/{dtype}"
            record = out.setdefault((layer, plan.variant, json.dumps(plan.tiles, sort_keys=True)), {
                "layer": layer, "tier": row["tier"], "variant": plan.variant, "class": tuning_tables.shape_class(geom),
                "tiles": plan.tiles, "features": cost_model.features(plan, geom), "runs": [],
                # the tiles a first call plans it with (the table's for the class, else its defaults)
                "own": planner.own_tiles(plan.variant, geom, caps) == plan.tiles})
            record["runs"].append(row["median_ms"])
    for record in out.values():
        record["ms"] = statistics.median(record.pop("runs"))
    return list(out.values())


def _recorded_spec(spec: str) -> str:
    """A run as the table records it: RUN[:BENCH] relative to the repository where the files are in it (so that a test
    refits the model from them), else the run file's name."""
    files = [Path(part).resolve() for part in spec.split(":")]
    if all(f.is_relative_to(ROOT) for f in files):
        return ":".join(str(f.relative_to(ROOT)) for f in files)
    return files[0].name


def check(records: list[dict], model: dict) -> dict:
    """Rank correlations (pooled, and per layer's candidates) and the predicted pick against the fastest."""
    layers: dict[str, list[dict]] = {}
    for r in records:
        r["predicted"] = cost_model.predict(r["features"], model)
        layers.setdefault(r["layer"], []).append(r)
    per_layer, picks = [], []
    for name, rs in sorted(layers.items()):
        best = min(rs, key=lambda r: r["ms"])
        pick = min(rs, key=lambda r: r["predicted"])
        picks.append({"layer": name, "pick": pick["variant"], "pick_ms": pick["ms"], "best": best["variant"],
                      "best_ms": best["ms"], "ratio": pick["ms"] / best["ms"], "candidates": len(rs)})
        if len(rs) >= 3:
            per_layer.append(cost_model.spearman([r["predicted"] for r in rs], [r["ms"] for r in rs]))
    ratios = [p["ratio"] for p in picks]
    return {"pooled_spearman": cost_model.spearman([r["predicted"] for r in records], [r["ms"] for r in records]),
            "mean_layer_spearman": statistics.fmean(per_layer) if per_layer else float("nan"),
            "layers": len(picks), "within_10pct": sum(q <= 1.10 for q in ratios), "within_25pct": sum(q <= 1.25 for q in ratios),
            "geomean_ratio": math.exp(statistics.fmean(math.log(q) for q in ratios)) if ratios else float("nan"),
            "picks": picks}


def tile_ranking(records: list[dict], model: dict) -> dict:
    """Where the model ranks other tiles of a kernel ahead of the kernel's own on a layer (both timed: a
    `--variants candidates` run), which were faster: {"model": layers where its tiles were, "own": where the own
    were}. Adaptation's pool offers a kernel in its own tiles first where "own" wins (app/planner.py alternatives)."""
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["layer"], r["variant"]), []).append(r)
    counts = {"model": 0, "own": 0}
    for rs in groups.values():
        own = [r for r in rs if r["own"]]
        if not own or len(rs) < 2:
            continue
        pick = min(rs, key=lambda r: cost_model.predict(r["features"], model))
        if not pick["own"]:
            counts["model" if pick["ms"] < own[0]["ms"] else "own"] += 1
    return counts


def crossval(records: list[dict], simd: int) -> int:
    """Each group's layers checked under the model fitted to the other groups' rows (`fit`'s defaults)."""
    def group(r):
        case = r["layer"].split("/")[1]
        return case.split("_")[0] if re.match(r"s\d+_", case) else r["tier"]
    picks = []
    for name in sorted({group(r) for r in records}):
        model = cost_model.fit([(r["features"], r["ms"]) for r in records if group(r) != name], simd=simd)
        result = check([dict(r) for r in records if group(r) == name], model)
        picks += result["picks"]
        print(f"{name}: within 10% {result['within_10pct']}/{result['layers']}, geometric mean "
              f"{result['geomean_ratio']:.3f}x")
    ratios = [p["ratio"] for p in picks]
    print(f"held out: predicted pick within 10% of the fastest on {sum(q <= 1.10 for q in ratios)}/{len(ratios)}, "
          f"within 25% on {sum(q <= 1.25 for q in ratios)}, geometric mean "
          f"{math.exp(statistics.fmean(math.log(q) for q in ratios)):.3f}x, worst {max(ratios):.2f}x")
    return 0


UNTUNED_TIERS = ("holdout", "fresh")
PICK = "(the model's pick)"  # the incumbent of a layer: whatever variant and tiles the model predicts fastest


def choose(records: list[dict], table_path: Path, min_gain_ms: float = 0.0) -> int:
    """The table's `choices`: per shape class, the variant (at its fastest measured tiles) that replaces the model's
    pick on every measured layer of the class (tuned tiers only), by app/class_choice.py's rule."""
    table = json.loads(table_path.read_text())
    tuned = [r for r in records if r["tier"] not in UNTUNED_TIERS]
    result = check(tuned, table["cost_model"])
    by_layer: dict[str, list[dict]] = {}
    for r in tuned:
        by_layer.setdefault(r["layer"], []).append(r)
    layers = []
    for name, rs in by_layer.items():
        fastest = {}
        for r in sorted(rs, key=lambda r: -r["ms"]):
            fastest[r["variant"]] = r
        pick = min(rs, key=lambda r: r["predicted"])
        layers.append({"class": rs[0]["class"], "incumbent": PICK, "layer": name, "fastest": fastest,
                       "ms": {n: r["ms"] for n, r in fastest.items()} | {PICK: pick["ms"]}})
    choices = {}
    for cls, won in class_choice.best_per_class(layers, min_gain_ms).items():
        best, rs = won["winner"], won["layers"]
        # the tiles it was measured with (of the class's last layer where several): what the choice replays
        choices[cls] = {"variant": best, "params": rs[-1]["fastest"][best]["tiles"] or None,
                        "relative_time": won["relative_time"], "cases": [r["layer"] for r in rs],
                        "median_ms": {r["layer"]: {n: round(f["ms"], 4) for n, f in r["fastest"].items()} for r in rs}}
        print(f"{cls}: {best} at {won['relative_time']:.2f}x the model's pick on {len(rs)} layer(s)")
    table["choices"] = choices
    table_path.write_text(json.dumps(table, indent=1) + "\n")
    print(f"{len(choices)} measured choices written into {table_path} ({result['within_10pct']}/{result['layers']} "
          "tuned layers already within 10% by the model)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["fit", "check", "choose", "crossval"])
    parser.add_argument("runs", nargs="+", help="RUN.json[:BENCH.json]")
    parser.add_argument("--device", required=True)
    parser.add_argument("--table", help="fit: the tuning table to store the model in; check: the one to read it from")
    parser.add_argument("--json", help="write the check's result here")
    parser.add_argument("--tiles", nargs="*", default=[], metavar="RUN.json[:BENCH.json]",
                        help="fit: `--variants candidates` runs that judge the fitted model's ranking of a kernel's "
                             "tiles against its own (tile_ranking); not fitted to")
    parser.add_argument("--min-gain-ms", type=float, default=0.0,
                        help="choose: a choice must also save this many ms on every layer (a run's noise on the adapter)")
    args = parser.parse_args()
    caps = device_caps(args.device)
    records = measured(args.runs, caps)
    # the lanes its invocations are issued in: the adapter's subgroup size where it reports one
    simd = (usable_subgroup_sizes(caps) or (1, 1))[0]
    if args.mode == "crossval":
        return crossval(records, simd)
    if args.mode == "fit":
        from app.metadata import recorded

        model = cost_model.fit([(r["features"], r["ms"]) for r in records], simd=simd)
        model["calibrated_on"] = {"runs": [_recorded_spec(s) for s in args.runs], "rows": len(records),
                                  "revision": recorded()["revision"]}
        if args.tiles:
            model["tile_ranking"] = tile_ranking(measured(args.tiles, caps), model) | {
                "runs": [_recorded_spec(s) for s in args.tiles]}
            print(f"tile ranking: {model['tile_ranking']}")
        result = check(records, model)
        print(f"fit on {len(records)} rows: resident {model['resident']} (SIMD {simd}), launch {model['launch_ms']} ms, "
              f"{model['bytes_per_ms'] / 1e6:.0f} GB/s; in-sample pooled Spearman {result['pooled_spearman']:.3f}, "
              f"per layer {result['mean_layer_spearman']:.3f}, picks within 10% {result['within_10pct']}/{result['layers']}")
        if args.table:
            path = Path(args.table)
            table = json.loads(path.read_text())
            table["cost_model"] = model
            path.write_text(json.dumps(table, indent=1) + "\n")
            print(f"wrote the model into {path}")
        return 0
    if args.mode == "choose":
        return choose(records, Path(args.table), args.min_gain_ms)
    model = json.loads(Path(args.table).read_text())["cost_model"] if args.table else tuning_tables.cost_model(caps)
    result = check(records, model)
    for p in result["picks"]:
        flag = "" if p["ratio"] <= 1.10 else "  <-- miss"
        print(f"{p['layer']:60s} pick {p['pick']:28s} {p['pick_ms']:8.4f}  best {p['best']:28s} {p['best_ms']:8.4f}  "
              f"{p['ratio']:.2f}x{flag}")
    print(f"rank correlation, predicted vs measured over {sum(p['candidates'] for p in result['picks'])} candidates: "
          f"pooled {result['pooled_spearman']:.3f}, per layer mean {result['mean_layer_spearman']:.3f}; predicted pick "
          f"within 10% of the fastest on {result['within_10pct']}/{result['layers']}, within 25% on "
          f"{result['within_25pct']}/{result['layers']}, geometric mean {result['geomean_ratio']:.3f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
