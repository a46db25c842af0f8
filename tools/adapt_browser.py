"""Adaptation as a user meets it, in headless Chromium (SwiftShader where there is no GPU): tools/adapt_bench.mjs's
adaptRows run in the app's page (app/host/browser.py, the server `bench --host browser` uses), one case at a time.
Prints adapt_bench.mjs's JSON lines (the adapter first) for tools/choice_report.py:

    python3 tools/adapt_browser.py BENCH.json TIER DTYPE [--cases a,b] [--calls 20] [--gap 2] > RUNS/adapt-TIER-DTYPE.jsonl
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.host.browser import app_page  # noqa: E402
from app.host.server import start_background  # noqa: E402

# adaptRows from the module's text, evaluated (the server serves the app's files, not tools/, and its policy lets
# scripts in from itself or eval only); its Node part, after `if (typeof process`, left out
RUN = """async ([source, cases, options]) => {
  window.adaptRows ??= (0, eval)(source.slice(0, source.indexOf("if (typeof process")).replace(/^export /gm, "") +
    ";\\nadaptRows");
  const { getKernel } = await import("/web/runtime/index.mjs");
  const rows = [];
  await window.adaptRows(getKernel, cases, { ...options, emit: (row) => rows.push(row) });
  return rows;
}"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("bench")
    parser.add_argument("tier")
    parser.add_argument("dtype")
    parser.add_argument("--cases", default="")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--gap", type=float, default=0)
    args = parser.parse_args()
    keep = set(args.cases.split(",")) if args.cases else None
    cases = [c for c in json.loads(Path(args.bench).read_text())["cases"]
             if c["tier"] == args.tier and (keep is None or c["name"] in keep)]
    source = (ROOT / "tools" / "adapt_bench.mjs").read_text()
    options = {"tier": args.tier, "dtype": args.dtype, "calls": args.calls, "gap": args.gap}
    server, url = start_background()
    try:
        with app_page(url) as page:
            page.set_default_timeout(600_000)
            for i, case in enumerate(cases):
                for row in page.evaluate(RUN, [source, [case], options]):
                    if "device" not in row or i == 0:
                        print(json.dumps(row), flush=True)
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
