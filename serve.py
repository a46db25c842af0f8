"""Serves the app locally: `python3 serve.py [--bind 127.0.0.1] [--port 8000] [--verbose] [--allow-host NAME]...`,
the same as `python -m app serve` (which also works from an installed wheel).

The first run assembles the offline Pyodide runtime under build/ (every file checked against a pinned
sha256); later runs reuse it. The server answers only requests addressed to an IP literal, `localhost` or the
name it binds (DNS rebinding); `--allow-host NAME` (repeatable) adds a name, as $CONVTRANSPOSE_ALLOWED_HOSTS
(comma-separated) does.
"""
import os
import sys

from app.__main__ import main
from app.host.server import ALLOWED_HOSTS_ENV


def allow_hosts(argv: list[str]) -> list[str]:
    """argv without its --allow-host options, whose names go to $CONVTRANSPOSE_ALLOWED_HOSTS."""
    rest, names = [], [n for n in os.environ.get(ALLOWED_HOSTS_ENV, "").split(",") if n]
    args = iter(argv)
    for arg in args:
        if arg == "--allow-host":
            names.append(next(args, ""))
        elif arg.startswith("--allow-host="):
            names.append(arg.split("=", 1)[1])
        else:
            rest.append(arg)
    if names:
        os.environ[ALLOWED_HOSTS_ENV] = ",".join(names)
    return rest


if __name__ == "__main__":
    sys.exit(main(["serve", *allow_hosts(sys.argv[1:])]))
