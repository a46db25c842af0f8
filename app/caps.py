"""What the device offers, as plain data: the planner reads it, the GPU layer fills it."""
from __future__ import annotations

from dataclasses import dataclass, field

# WebGPU's guaranteed minimums: what a device is assumed to have when nothing better is known.
DEFAULT_LIMITS = {
    "maxComputeWorkgroupsPerDimension": 65535,
    "maxComputeInvocationsPerWorkgroup": 256,
    "maxComputeWorkgroupSizeX": 256,
    "maxComputeWorkgroupStorageSize": 16384,
    "maxStorageBufferBindingSize": 134217728,
    "maxBufferSize": 268435456,
    "maxStorageBuffersPerShaderStage": 8,
}


@dataclass(frozen=True)
class DeviceCaps:
    features: frozenset[str] = frozenset()
    limits: dict = field(default_factory=lambda: dict(DEFAULT_LIMITS))
    vendor: str = ""
    architecture: str = ""
    device: str = ""
    description: str = ""
    is_fallback: bool = False

    def has(self, feature: str) -> bool:
        return feature in self.features

    def limit(self, name: str) -> int:
        return int(self.limits.get(name, DEFAULT_LIMITS[name]))
