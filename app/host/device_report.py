"""`python -m app device [--host browser|node]`: what the adapter offers, as the package sees it (JSON)."""
from __future__ import annotations

import json

from .case_runner import KERNEL_ID

DEVICE = """async (id) => (await window.getKernel(id, {version: 1})).device()"""


def main(host: str = "browser") -> int:
    if host == "node":
        from .node import NodeHost

        with NodeHost() as node:
            info = node.call("device")
    else:
        from .browser import app_page
        from .server import start_background

        server, url = start_background()
        try:
            with app_page(url) as page:
                info = page.evaluate(DEVICE, KERNEL_ID)
        finally:
            server.shutdown()
    print(json.dumps(info, indent=1))
    return 0
