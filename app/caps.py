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

SOFTWARE_ARCHITECTURES = ("swiftshader", "llvmpipe", "lavapipe")


@dataclass(frozen=True)
class DeviceCaps:
    features: frozenset[str] = frozenset()  # the optional features the device was opened with
    adapter_features: frozenset[str] = frozenset()  # everything the adapter offered (for reports)
    limits: dict = field(default_factory=lambda: dict(DEFAULT_LIMITS))
    vendor: str = ""
    architecture: str = ""
    device: str = ""
    description: str = ""
    is_fallback: bool = False
    # GPUAdapterInfo's subgroup sizes (0: not reported) and, with chromium-experimental-subgroup-matrix, its
    # supported matrix shapes: ({"componentType", "resultComponentType", "M", "N", "K"}, ...).
    subgroup_min_size: int = 0
    subgroup_max_size: int = 0
    subgroup_matrix_configs: tuple = ()

    @property
    def is_software(self) -> bool:
        """A CPU implementation (SwiftShader, llvmpipe, lavapipe): marked a fallback adapter, or, where the host
        does not mark it (Dawn in Node.js on SwiftShader's Vulkan driver), named by its architecture. The one
        test the variants' built-in tile shapes use."""
        return self.is_fallback or self.architecture in SOFTWARE_ARCHITECTURES

    def has(self, feature: str) -> bool:
        return feature in self.features

    def limit(self, name: str) -> int:
        return int(self.limits.get(name, DEFAULT_LIMITS[name]))


def matrix_configs(configs) -> tuple:
    """GPUSubgroupMatrixConfig-like records (JS objects or dicts) -> plain dicts the variants read."""
    def field(config, name):
        return config[name] if isinstance(config, dict) else getattr(config, name)

    return tuple({"componentType": str(field(c, "componentType")),
                  "resultComponentType": str(field(c, "resultComponentType")),
                  "M": int(field(c, "M")), "N": int(field(c, "N")), "K": int(field(c, "K"))}
                 for c in configs or ())
