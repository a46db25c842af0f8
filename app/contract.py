"""The op contract, read from manifest.json: the single source of attribute defaults and dtypes."""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def _data_root() -> Path:
    """Where manifest.json, metadata.json, bench.json, test.json, templates/, tuning/ and web/ live.

    An installed wheel carries them as package data under app/_data (setup.py copies them there), found
    through importlib.resources; a checkout, and the bundle Pyodide unpacks, keep them next to app/."""
    packaged = resources.files(__package__).joinpath("_data")
    if packaged.is_dir():
        return Path(str(packaged))
    return PACKAGE.parent


ROOT = _data_root()
# The repository checkout this package runs from, or None for an installed wheel (then node_modules/, docs/
# and build/ are not beside it).
CHECKOUT = PACKAGE.parent if ROOT == PACKAGE.parent else None
MANIFEST_PATH = ROOT / "manifest.json"


@lru_cache(maxsize=1)
def manifest() -> dict:
    return json.loads(MANIFEST_PATH.read_text())


def kernel_id() -> str:
    return manifest()["kernel"]


def contract_version() -> int:
    return manifest()["contract_version"]


def attribute_specs() -> dict[str, dict]:
    return manifest()["attributes"]


def input_names() -> list[str]:
    return [spec["name"] for spec in manifest()["inputs"]]


def dtype_features() -> dict[str, list[str]]:
    """dtype name -> WebGPU features the device must have to compute in it."""
    return {c["dtype"]: c["requires_features"] for c in manifest()["type_constraints"]["T"]}


def supported_ranks() -> list[int]:
    return manifest()["ranks"]
