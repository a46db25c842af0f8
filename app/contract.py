"""The op contract, read from manifest.json: the single source of attribute defaults and dtypes."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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
