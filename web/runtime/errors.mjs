// The errors a JavaScript caller sees, whether raised here or mapped from Python's exceptions: one class per
// name Python's app.errors raises, so that a caller can test `instanceof` as well as `name`.

/** What every kernel error carries: `field`, the input or attribute at fault (when one is), and
 * `pythonTraceback`, when Python raised it. */
export class KernelError extends Error {
  constructor(message, field = null, traceback = null) {
    super(message);
    if (field) this.field = field;
    if (traceback) this.pythonTraceback = traceback;
  }
}

/** A request the kernel refuses, always before any GPU work. */
export class ConvTransposeError extends KernelError {}
/** WebGPU refused or lost something. */
export class GpuError extends KernelError {}
/** getKernel was asked for a kernel id, version or revision this package does not provide. */
export class KernelNotFoundError extends KernelError {}

const CLASSES = { ConvTransposeError, GpuError, KernelNotFoundError };
// named on the prototypes, not from the class names, which a minifier may shorten
KernelError.prototype.name = "KernelError";
for (const [name, cls] of Object.entries(CLASSES)) cls.prototype.name = name;

/** The error for a name: ConvTransposeError | GpuError | KernelNotFoundError, or any other name Python gave. */
export function kernelError(name, message, field = null, traceback = null) {
  const err = new (CLASSES[name] ?? KernelError)(message, field, traceback);
  err.name = name;  // an own property, as before the classes: JSON and structured clones keep it
  return err;
}
