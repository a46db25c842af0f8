// Time to a first result, ours beside onnxruntime-web's, on one layer: what a page (or a Node process) that shows a
// decoder layer's output waits for from its start (performance.now(): ms since navigation start in a browser,
// since process start in Node). Shared by the browser page (tools/first_result.html, driven by
// tools/first_result.py) and the Node runs (tools/gpu/first_result.mjs, `bash tools/gpu/run.sh firstresult`).
//   ours: the package's getKernel, then one call with the layer's data (w marked constant, as a model's weights).
//   ort:  onnxruntime-web's InferenceSession.create on the one-node model of the same layer (w an initializer,
//         the same numbers), then one run with x, y read back.

export const ID = "webgpu-kernels/ai.onnx.ConvTranspose";
// A decoder's upsampling layer, small enough for SwiftShader (software WebGPU) to run in about a second.
export const LAYER = { x: [1, 32, 16, 16], w: [32, 16, 4, 4], attributes: { strides: [2, 2], pads: [1, 1, 1, 1] } };
// The same layer at the next scale: on a revisit, a signature no stored plan holds (Python plans it).
export const NEW_LAYER = { ...LAYER, x: [1, 32, 20, 20] };

const count = (shape) => shape.reduce((a, d) => a * d, 1);

/** The layer's x and w: uniform [-1, 1) from a fixed 32-bit LCG, the same numbers in every host. */
export function layerData(seed = 7, layer = LAYER) {
  let state = seed >>> 0;
  const draw = (n) => Float32Array.from({ length: n }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 31 - 1;
  });
  return { x: draw(count(layer.x)), w: draw(count(layer.w)) };
}

/** Our first result: module is the package's entry ({getKernel, bootPhases}); data is layer's. */
export async function ours(module, data, layer = LAYER) {
  const kernel = await module.getKernel(ID, { version: 1 });
  const kernelMs = performance.now();
  const profile = {};  // the call's stages (docs/api.md `profile`): where a first call's time goes
  const { y, meta } = await kernel({ x: { data: data.x, shape: layer.x },
                                     w: { data: data.w, shape: layer.w, constant: true }, ...layer.attributes },
                                   { profile });
  const resultMs = performance.now();
  const phases = module.bootPhases();
  return { who: "ours", kernelMs, resultMs, variant: meta.variant, y: y.data, phases, profile,
           fromStore: phases.some((p) => p.phase === "compile a stored plan") };
}

/** onnxruntime-web's first result: ort is its module (already imported: the import is counted by the caller's
 * clock), model the one-node model's bytes. */
export async function ortFirst(ort, model, data) {
  const session = await ort.InferenceSession.create(model, { executionProviders: ["webgpu"] });
  const sessionMs = performance.now();
  const out = await session.run({ x: new ort.Tensor("float32", data.x, LAYER.x) });
  const y = await out.y.getData();
  const resultMs = performance.now();
  await session.release();
  return { who: "ort", sessionMs, resultMs, y };
}

export function maxDiff(a, b) {
  if (a.length !== b.length) return Infinity;
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  return worst;
}
