import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.browser_session import app_url, page  # noqa: E402,F401  (session fixtures for browser tests)
