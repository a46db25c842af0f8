"""The device panel's adapter label (web/views/device-panel.mjs adapterLabel), in Node: reported strings when there
are any, else the browser whose adapter it is (Firefox reports empty vendor, architecture and device)."""
import json
import subprocess

import pytest

from app.contract import ROOT

FIREFOX_UA = "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0"
CHROME_UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
EMPTY = {"vendor": "", "architecture": "", "device": "", "description": ""}


@pytest.mark.parametrize("info, agent, label", [
    (EMPTY, FIREFOX_UA, "Firefox's WebGPU adapter (no vendor or name reported)"),
    (EMPTY, CHROME_UA, "Chrome's WebGPU adapter (no vendor or name reported)"),
    (EMPTY, "", "WebGPU adapter (no vendor or name reported)"),
    (EMPTY | {"description": "Mesa lavapipe"}, FIREFOX_UA, "Mesa lavapipe"),
    (EMPTY | {"vendor": "google", "architecture": "swiftshader"}, CHROME_UA, "google swiftshader"),
    (EMPTY | {"vendor": "nvidia", "device": "nvidia-h200"}, "", "nvidia nvidia-h200"),
])
def test_adapter_label(info, agent, label):
    script = (f"import({json.dumps((ROOT / 'web' / 'views' / 'device-panel.mjs').as_uri())})"
              f".then((m) => console.log(m.adapterLabel({json.dumps(info)}, {json.dumps(agent)})))")
    out = subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True).stdout.strip()
    assert out == label
