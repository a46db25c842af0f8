"""Prints bench.json with every case's dtype replaced (python tools/gpu/as_dtype.py float16): the same
shapes and seeded data, rounded to that dtype, for the float16 column of the GPU report.
`--variant NAME` also makes every case name that variant, so that `python -m app tune --bench` on the
output tunes it on every case (the sweep of a new kernel's tile shapes); `--grid JSON` replaces that
variant's tuning grid; `--bench FILE` reads another bench file; `--cases a,b` keeps those cases only."""
import argparse
import json
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("dtype")
parser.add_argument("--variant")
parser.add_argument("--grid", type=json.loads)
parser.add_argument("--cases", help="comma-separated case names to keep (default: all)")
parser.add_argument("--bench", default=str(Path(__file__).resolve().parents[2] / "bench.json"))
args = parser.parse_args()
doc = json.loads(Path(args.bench).read_text())
forced = {"variant": args.variant} if args.variant else {}
keep = set(args.cases.split(",")) if args.cases else None
doc["cases"] = [case | {"dtype": args.dtype} | forced for case in doc["cases"] if keep is None or case["name"] in keep]
if args.grid:
    doc["tuning"]["grids"][args.variant] = args.grid
print(json.dumps(doc))
