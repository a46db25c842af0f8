// Host time of a resident repeat call (issue 26: at most 0.1 ms on every full-tier case), to compare two
// trees of this package on one machine (run each in turn, several times: one process holds one Pyodide).
// Per bench case, as `bench --breakdown`'s repeat_resident: x, w and b in GPUBuffers, y left on the GPU, the
// work waited for and y handed back between calls; host is the time until kernel() returns, submit the part
// of it inside queue.submit (on SwiftShader that runs the GPU work itself: host minus submit is what the
// call costs a host whose GPU is a GPU).
//   node tools/gpu/host_probe.mjs ROOT BUILD_DIR [tier] [calls] [cases]
// ROOT: the tree whose web/ runs (a copy of an older commit for "before"); BUILD_DIR: pyodide/ and
// bundle.zip (build/ after `python -m app setup`). One JSON line per case: medians and quartiles in ms.
import { readFile } from "node:fs/promises";
import { resolve } from "node:path";

const [root, build, tier = "small", calls = "300", only = ""] = process.argv.slice(2);
const from = (path) => import(resolve(root, path));
const { bootNode } = await from("web/views/dawn-node.mjs");
const { callPython, getKernel } = await from("web/runtime/index.mjs");
const { KERNEL_ID } = await from("web/runtime/contract.mjs");
const { caseInputs } = await from("web/views/ort-bench.mjs");
await bootNode(resolve(build));

let inSubmit = 0;
const queue = globalThis.GPUQueue.prototype, submit = queue.submit;
queue.submit = function (buffers) {
  const start = performance.now();
  try {
    return submit.call(this, buffers);
  } finally {
    inSubmit += performance.now() - start;
  }
};

const quantiles = (xs) => {
  const s = [...xs].sort((a, b) => a - b), at = (q) => +s[Math.floor(q * (s.length - 1))].toFixed(4);
  return { q25: at(0.25), median: at(0.5), q75: at(0.75) };
};
const names = only ? only.split(",") : null;
const cases = (await callPython("bench_cases", await readFile(resolve(root, "bench.json"), "utf8"), tier))
  .filter((c) => !names || names.includes(c.name));
const kernel = await getKernel(KERNEL_ID, { version: 1 });
const device = kernel.gpuDevice();
for (const benchCase of cases) {
  const data = await caseInputs(benchCase);
  const inputs = { ...benchCase.attributes,
    x: kernel.upload({ data: data.x, shape: benchCase.x }), w: kernel.upload({ data: data.w, shape: benchCase.w }),
    ...(data.b ? { b: kernel.upload({ data: data.b, shape: [data.b.length] }) } : {}) };
  const host = [], inside = [];
  for (let i = 0; i < Number(calls) + 5; i++) {  // 5 first calls: planning, compiling, a new y, then y from the pool
    inSubmit = 0;
    const start = performance.now();
    const { y } = await kernel(inputs, { output: "gpu" });
    const ms = performance.now() - start;
    const submitMs = inSubmit;
    await device.queue.onSubmittedWorkDone();
    y.dispose();
    if (i >= 5) { host.push(ms); inside.push(ms - submitMs); }
  }
  for (const n of ["x", "w", "b"]) if (inputs[n]) { kernel.forget(inputs[n]); inputs[n].buffer.destroy(); }
  console.log(JSON.stringify({ case: benchCase.name, host_ms: quantiles(host), host_minus_submit_ms: quantiles(inside) }));
}
await kernel.idle();  // exiting under a compile crashes Dawn (docs/npm.md#node)
process.exit(0);
