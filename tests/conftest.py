import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.browser_session import app_url, node_host, page  # noqa: E402,F401  (session fixtures for browser tests)


def pytest_addoption(parser):
    parser.addoption("--fuzz-long", type=int, default=int(__import__("os").environ.get("FUZZ_LONG", "0")),
                     metavar="N", help="also run the long differential-fuzz tier of N cases (env FUZZ_LONG)")
