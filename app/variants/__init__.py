"""Every implementation variant, by name. Each family lives in its own module."""
from __future__ import annotations

from . import empty, gather
from .base import Variant

VARIANTS: dict[str, Variant] = {v.name: v for module in (empty, gather) for v in module.VARIANTS}
