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

const methods = {
  call: (name, args = []) => callPython(name, ...args),
  loadPyodideMs: () => app.loadMs,
  compare: (benchCase, options) => compareCase(benchCase, options),
  breakdown: (benchCase, options) => breakdownCase(benchCase, options),
  model: (spec) => runModel(spec),
};

reply({ ready: true, loadMs: app.loadMs });
// stdin closed: the caller is done (app/host/child.py closes it and waits); see exitNow for why not process.exit.
await serve(methods, (err) => `${err?.name ?? "Error"}: ${String(err?.message ?? err)}`);
await exitNow();
