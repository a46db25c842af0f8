"""The exceptions the package raises, one type per kind of failure."""


class ConvTransposeError(ValueError):
    """A request that the operator refuses: bad shapes, attributes, dtypes or data.

    Always raised before any GPU work. The message names the offending input or attribute; `field`
    names it for machines (an input "x", "w", "b" or an attribute name; None when no single one is at
    fault), so a form can show the message next to the field it concerns.
    """

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class KernelNotFoundError(LookupError):
    """An unknown kernel id, contract version or package revision."""


class GpuError(RuntimeError):
    """WebGPU refused or lost something: no adapter, a shader that did not compile, a validation error."""
