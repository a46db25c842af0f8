"""Writes metadata.json from the variant table and the templates: `python tools/gen_metadata.py`."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.metadata import METADATA_PATH, build  # noqa: E402

METADATA_PATH.write_text(json.dumps(build(), indent=2) + "\n")
print(f"wrote {METADATA_PATH}")
