// The typed array that holds each dtype's values in JavaScript: float16 as its bit patterns (Uint16Array:
// Float16Array is not in every host), float64 for the reference's output.
export const TYPED_ARRAYS = { float32: Float32Array, float16: Uint16Array, float64: Float64Array };

/** Bytes from Python as a typed array of `dtype`. Pyodide hands Python's bytes over as a new Uint8Array of
 * their own: that buffer is taken as it is (a second copy of a large y doubled the host's peak); a view into
 * memory that is not ours alone (the WebAssembly heap, a larger buffer) or that is misaligned is copied. */
export function typedArray(bytes, dtype) {
  const Typed = TYPED_ARRAYS[dtype];
  const own = bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.byteLength
    && !(typeof SharedArrayBuffer !== "undefined" && bytes.buffer instanceof SharedArrayBuffer);
  if (own && bytes.byteLength % Typed.BYTES_PER_ELEMENT === 0) return new Typed(bytes.buffer);
  return new Typed(bytes.slice().buffer);
}
