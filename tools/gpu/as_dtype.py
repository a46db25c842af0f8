"""Prints bench.json with every case's dtype replaced (python tools/gpu/as_dtype.py float16): the same
shapes and seeded data, rounded to that dtype, for the float16 column of the GPU report."""
import json
import sys
from pathlib import Path

doc = json.loads((Path(__file__).resolve().parents[2] / "bench.json").read_text())
doc["cases"] = [case | {"dtype": sys.argv[1]} for case in doc["cases"]]
print(json.dumps(doc))
