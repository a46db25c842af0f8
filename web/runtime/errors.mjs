// The errors a JavaScript caller sees, whether raised here or mapped from Python's exceptions.

/** An Error a JavaScript caller can branch on: name ConvTransposeError | GpuError | KernelNotFoundError. */
export function kernelError(name, message, field = null, traceback = null) {
  const err = new Error(message);
  err.name = name;
  if (field) err.field = field;
  if (traceback) err.pythonTraceback = traceback;
  return err;
}
