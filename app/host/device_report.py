"""`python -m app device [--host browser|node]`: what the adapter offers, as the package sees it (JSON)."""
from __future__ import annotations

import json

from .bench_runner import open_host


def main(host: str = "browser") -> int:
    with open_host(host) as app:
        info = app.py("report_device")
    print(json.dumps(info, indent=1))
    return 0
