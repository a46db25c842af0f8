// The app in Node.js: the same boot module as the pages, Pyodide from the same local assets, and
// navigator.gpu from Dawn (npm `webgpu`). It answers JSON lines on stdin, one request per line:
//   {"id": 1, "method": "call", "params": ["bench_cases", text, "small"]}  ->  {"id": 1, "result": [...]}
// Methods: call(name, args) (app.bridge.<name>, the one way into Python), loadPyodideMs, compare(case, options)
// and breakdown(case, options) (web/views/compare.mjs: ours beside onnxruntime-web, where a call's time goes),
// model(spec) (web/views/model-run.mjs: a layer or chain cut from an ONNX file, `python -m app model`).
// Usage: node web/views/node-host.mjs ASSETS_DIR   (ASSETS_DIR holds pyodide/ and bundle.zip: app/host/node.py makes one per host)
import { callPython } from "../runtime/index.mjs";
import { exitNow, reply, serve } from "./json-lines.mjs";
import { breakdownCase, compareCase } from "./compare.mjs";
import { bootNode } from "./dawn-node.mjs";
import { runModel } from "./model-run.mjs";

const app = await bootNode(process.argv[2]);
compileInTheCall(globalThis.GPUDevice);

const methods = {
  call: (name, args = []) => callPython(name, ...args),
  loadPyodideMs: () => app.loadMs,
  compare: (benchCase, options) => compareCase(benchCase, options),
  breakdown: (benchCase, options) => breakdownCase(benchCase, options),
  model: (spec) => runModel(spec),
};

// Dawn for Node waits for an asynchronous pipeline by polling its instance on every turn of the event loop, a
// core spinning while another compiles. The host serves one call at a time, so it compiles in the call: the
// same pipeline, the same errors (a GPUPipelineError, its reason from the scope that caught it), half the CPU
// (all of test.json on SwiftShader: 67 s of CPU against 34 s, 39 s of wall time against 33).
function compileInTheCall(GPUDevice) {
  GPUDevice.prototype.createComputePipelineAsync = async function (descriptor) {
    this.pushErrorScope("internal");
    this.pushErrorScope("validation");
    const pipeline = this.createComputePipeline(descriptor);
    const scopes = [this.popErrorScope(), this.popErrorScope()];  // both popped now, before a caller's own
    const [validation, internal] = await Promise.all(scopes);
    const error = validation ?? internal;
    if (error) throw new GPUPipelineError(error.message, { reason: validation ? "validation" : "internal" });
    return pipeline;
  };
}

reply({ ready: true, loadMs: app.loadMs });
// stdin closed: the caller is done (app/host/child.py closes it and waits); see exitNow for why not process.exit.
await serve(methods, (err) => `${err?.name ?? "Error"}: ${String(err?.message ?? err)}`);
await exitNow();
