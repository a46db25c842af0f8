"""Digest of every plan and every rendered shader, for checking that a refactor changes no behaviour.

For each request of test.json and of every bench.json tier (both dtypes, with and without a bias where the
case has one), on every device of the shader matrix's DEVICES: the planner's choice (variant, reason, tiles,
buffers, dispatches with their uniforms and grids, and the sha256 of each rendered WGSL source) or its refusal;
and the same for every variant forced. Writes JSON lines to stdout (or --out); `--compare A B` diffs two runs.

    python tools/plan_digest.py --out /tmp/before.jsonl   # on the old tree
    python tools/plan_digest.py --out /tmp/after.jsonl    # on the new tree
    python tools/plan_digest.py --compare /tmp/before.jsonl /tmp/after.jsonl
    # seed names: --alias SEED=SUCCESSOR per seed variant, --same-wgsl for passes rendered through a seed entry
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))


def _requests():
    test = json.loads((ROOT / "test.json").read_text())
    for case in test["cases"]:
        if case.get("expected_error"):
            continue
        ins = case["inputs"]
        dtypes = {n: i["dtype"] for n, i in ins.items()}
        yield (case["name"], ins["x"]["shape"], ins["w"]["shape"], ins.get("b", {}).get("shape"),
               case.get("attributes", {}), dtypes)
    bench = json.loads((ROOT / "bench.json").read_text())
    for case in bench["cases"]:
        b = [case["w"][1] * case["attributes"].get("group", 1)] if case.get("bias") else None
        for dtype in ("float32", "float16"):
            yield (f"{case['tier']}/{case['name']}/{dtype}", case["x"], case["w"], b, case["attributes"],
                   {n: dtype for n in ("x", "w", "b")})


def _digest(out, render) -> dict:
    if not hasattr(out, "dispatches"):
        return {"refused": out.why_not}

    def passes(dispatches):
        return [{"template": d.template, "wgsl": hashlib.sha256(render(d.template, d.render_params).encode()).hexdigest(),
                 "bindings": list(d.bindings), "uniforms": [list(u) for u in d.uniforms],
                 "workgroups": list(d.workgroups)} for d in dispatches]

    return {"variant": out.variant, "reason": out.reason, "passes": passes(out.dispatches),
            "weight_passes": passes(out.weight_passes), "scratch": dict(out.scratch),
            "prepared": dict(out.prepared), "tiles": {k: out.tiles[k] for k in sorted(out.tiles)},
            "workgroup_bytes": out.workgroup_bytes}


def collect(forced: bool = True):
    from app import planner
    from app.errors import ConvTransposeError
    from app.render import render
    from app.shapes import infer
    from app.variants import VARIANTS
    try:
        from tools.wgsl.matrix import devices
    except ImportError:
        from wgsl.matrix import devices  # after the dev tools moved out of the package
    devs = devices()
    for name, x, w, b, attrs, dtypes in _requests():
        try:
            geom = infer(x, w, b, attrs, dtypes)
        except ConvTransposeError as exc:
            yield {"case": name, "invalid": str(exc)}
            continue
        for dev, caps in devs.items():
            row = {"case": name, "device": dev}
            try:
                row["plan"] = _digest(planner.plan(geom, caps), render)
            except ConvTransposeError as exc:
                row["plan"] = {"error": str(exc)}
            if forced:
                for v in sorted(VARIANTS):
                    try:
                        row[v] = _digest(planner.plan(geom, caps, v), render)
                    except ConvTransposeError as exc:
                        row[v] = {"refused": str(exc).split(": it ", 1)[-1]}
            yield row


def _same_wgsl(got, value):
    """`got` with each pass's template name taken from `value` wherever the rendered WGSL digest is equal:
    a pass rendered through a thin entry (a seed name over a rank-generic template) renders the same source."""
    if not isinstance(got, dict) or not isinstance(value, dict):
        return got
    out = dict(got)
    for key in ("passes", "weight_passes"):
        new, old = got.get(key), value.get(key)
        if isinstance(new, list) and isinstance(old, list) and len(new) == len(old):
            out[key] = [n | {"template": o["template"]} if n.get("wgsl") == o.get("wgsl") else n
                        for n, o in zip(new, old)]
    return out


def compare(a: str, b: str, aliases: dict[str, str], same_wgsl: bool = False) -> int:
    """Rows of `a` against `b`; `aliases` maps a new variant name to the old one it specialises (seed names);
    with `same_wgsl`, a pass whose template name changed but whose rendered WGSL did not counts as equal."""
    def load(p):
        return {(r["case"], r.get("device")): r for r in map(json.loads, Path(p).read_text().splitlines())}

    old, new = load(a), load(b)
    bad = renamed = 0
    for key, row in old.items():
        other = new.get(key)
        if other is None:
            print("missing", key)
            bad += 1
            continue
        for field, value in row.items():
            got = other.get(field)
            specialises = aliases.get(got.get("variant")) if isinstance(got, dict) else None
            if specialises is not None and specialises == value.get("variant"):
                got = got | {"variant": value["variant"]}
            if same_wgsl and got != value:
                same = _same_wgsl(got, value)
                renamed += same != got and same == value
                got = same
            if got != value:
                bad += 1
                if bad <= 20:
                    print("differs", key, field, json.dumps(value)[:300], "->", json.dumps(got)[:300])
    if same_wgsl:
        print(f"{renamed} plans (chosen or forced) equal but for template names: the same rendered WGSL")
    print(f"{len(old)} rows compared, {bad} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--planner-only", action="store_true")
    ap.add_argument("--compare", nargs=2)
    ap.add_argument("--alias", action="append", default=[], help="NEW=OLD variant names to treat as equal")
    ap.add_argument("--same-wgsl", action="store_true",
                    help="treat a pass's template name change as equal where its rendered WGSL digest is equal")
    args = ap.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare, dict(a.split("=", 1) for a in args.alias), args.same_wgsl))
    out = open(args.out, "w") if args.out else sys.stdout
    for row in collect(not args.planner_only):
        out.write(json.dumps(row, sort_keys=True) + "\n")
