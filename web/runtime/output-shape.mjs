// y's shape for a request Python has validated before (app/shapes.py infer is the rule and its only judge): a
// stored plan is checked against it before Python is up (plan-store.mjs). tests/test_stored_plans.py holds the
// two to the same answers on the fuzzer's requests.

const list = (value, length, fill) => Array.isArray(value) ? value.map(Number) : Array(length).fill(fill);

/** [N, M, O1..On] of x [N, C, I1..In], w [C, M/group, K1..Kn] and the call's attributes (ONNX's defaults). */
export function outputShape(xShape, wShape, attributes) {
  const rank = xShape.length - 2;
  const spatial = xShape.slice(2).map(Number), kernel = wShape.slice(2).map(Number);
  const strides = list(attributes.strides, rank, 1), dilations = list(attributes.dilations, rank, 1);
  const outputPadding = list(attributes.output_padding, rank, 0);
  const natural = spatial.map((i, j) => strides[j] * (i - 1) + outputPadding[j] + (kernel[j] - 1) * dilations[j] + 1);
  const autoPad = attributes.auto_pad ?? "NOTSET";
  let out;
  if (attributes.output_shape != null) {
    const given = list(attributes.output_shape, rank, 0);
    out = given.length === rank + 2 ? given.slice(2) : given;
  } else if (autoPad === "SAME_UPPER" || autoPad === "SAME_LOWER") {
    out = spatial.map((i, j) => i * strides[j]);
  } else if (autoPad === "VALID") {
    out = natural;
  } else {
    const pads = list(attributes.pads, 2 * rank, 0);
    out = natural.map((n, j) => n - pads[j] - pads[j + rank]);
  }
  return [Number(xShape[0]), Number(wShape[1]) * Number(attributes.group ?? 1), ...out];
}
