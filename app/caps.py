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


# WebGPU's bounds on GPUAdapterInfo.subgroupMinSize / subgroupMaxSize.
SUBGROUP_SIZE_BOUNDS = (4, 128)


def usable_subgroup_sizes(caps: DeviceCaps) -> tuple[int, int] | None:
    """The (min, max) subgroup sizes the planner may build on, or None when the report cannot be used.

    A report is used only when the device was opened with the `subgroups` feature (without it no shader can
    see a subgroup, and the sizes describe nothing: Firefox reports WebGPU's bounds, 4 and 128, on lavapipe,
    whose real size is 8) and when it is a pair of powers of two within WebGPU's bounds, min <= max.
    Otherwise the planner assumes nothing about the size: variants that need one refuse (the subgroup-matrix
    ones need the feature anyway) or plan for any size in the bounds (a workgroup width that is a multiple of
    128, with subgroups found at run time through the subgroup_id builtin)."""
    if not caps.has("subgroups"):
        return None
    low, high = caps.subgroup_min_size, caps.subgroup_max_size
    lo_bound, hi_bound = SUBGROUP_SIZE_BOUNDS

    def power_of_two(n: int) -> bool:
        return n > 0 and n & (n - 1) == 0

    if not (power_of_two(low) and power_of_two(high) and lo_bound <= low <= high <= hi_bound):
        return None
    return low, high


def matrix_configs(configs) -> tuple:
    """GPUSubgroupMatrixConfig-like records (JS objects or dicts) -> plain dicts the variants read."""
    def field(config, name):
        return config[name] if isinstance(config, dict) else getattr(config, name)

    return tuple({"componentType": str(field(c, "componentType")),
                  "resultComponentType": str(field(c, "resultComponentType")),
                  "M": int(field(c, "M")), "N": int(field(c, "N")), "K": int(field(c, "K"))}
                 for c in configs or ())
