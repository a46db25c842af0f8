// The kernel id and contract version the page and the comparisons ask getKernel for: the one copy in web/
// of manifest.json's "kernel" and "contract_version" (tests/test_contract_js.py checks they are equal).
export const KERNEL_ID = "webgpu-kernels/ai.onnx.ConvTranspose";
export const CONTRACT_VERSION = 1;
// manifest.json's input dtypes (tensors.mjs inputDtypes of it; the same test checks): what a revisit accepts before
// Python is up, the package's own rule, never a stored record's
export const DTYPES = ["float16", "float32"];
