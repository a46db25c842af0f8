// The typed array that holds each dtype's values in JavaScript: float16 as its bit patterns (Uint16Array:
// Float16Array is not in every host), float64 for the reference's output.
export const TYPED_ARRAYS = { float32: Float32Array, float16: Uint16Array, float64: Float64Array };

/** Bytes from Python as a typed array of `dtype`, copied (the Python side's buffer is not ours to keep). */
export function typedArray(bytes, dtype) {
  return new TYPED_ARRAYS[dtype](bytes.slice().buffer);
}
