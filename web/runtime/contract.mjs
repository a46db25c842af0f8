// The kernel id and contract version the page and the comparisons ask getKernel for: the one copy in web/
// of manifest.json's "kernel" and "contract_version" (tests/test_contract_js.py checks they are equal).
export const KERNEL_ID = "webgpu-kernels/ai.onnx.ConvTranspose";
export const CONTRACT_VERSION = 1;
