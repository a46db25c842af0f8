"""Serves the app locally: `python3 serve.py [--bind 127.0.0.1] [--port 8000] [--verbose]`, the same as
`python -m app serve` (which also works from an installed wheel).

The first run assembles the offline Pyodide runtime under build/ (every file checked against a pinned
sha256); later runs reuse it.
"""
import sys

from app.__main__ import main

if __name__ == "__main__":
    sys.exit(main(["serve", *sys.argv[1:]]))
