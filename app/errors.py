"""The exceptions the package raises, one type per kind of failure."""


class ConvTransposeError(ValueError):
    """A request that the operator refuses: bad shapes, attributes, dtypes or data.

    Always raised before any GPU work. The message names the offending input or attribute.
    """


class KernelNotFoundError(LookupError):
    """An unknown kernel id, contract version or package revision."""


class GpuError(RuntimeError):
    """WebGPU refused or lost something: no adapter, a shader that did not compile, a validation error."""
