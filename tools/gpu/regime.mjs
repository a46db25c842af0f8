// One layer's forced variants timed per call through getKernel (`meta.gpu_ms`, as adaptation times them) in three
// regimes: 20 ms of unrelated FMA work queued before each call (adapt_bench.mjs BUSY_MS), the same call run untimed
// 3 times before (its data warm in the caches), idle 2 ms apart; then busy again. One JSON line per variant: the
// median of each regime's last 10 of 12 calls. From the repository root, with a `python -m app export` KERNEL:
//   node tools/gpu/regime.mjs KERNEL BENCH TIER DTYPE CASE VARIANT[,VARIANT...]
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { busyWork, seededRequest, useDawn } from "../adapt_bench.mjs";

const [kernelDir, benchPath, tier, dtype, name, variants] = process.argv.slice(2);
await useDawn();
const m = await import(pathToFileURL(`${kernelDir}/web/runtime/node.mjs`).href);
const { sharedDevice } = await import(pathToFileURL(`${kernelDir}/web/runtime/device.mjs`).href);
const c = JSON.parse(readFileSync(benchPath, "utf8")).cases.find((x) => x.tier === tier && x.name === name);
const kernel = await m.getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1, planStore: false, adapt: false });
await kernel.ready;
const busy = await busyWork((await sharedDevice().promise).device, 20);
const median = (a) => [...a].sort((p, q) => p - q)[a.length >> 1];
const base = seededRequest(c, dtype);
for (const variant of variants.split(",")) {
  const request = { ...base, variant };
  const out = {};
  for (const mode of ["busy", "same", "idle", "busy"]) {
    const times = [];
    for (let i = 0; i < 12; i++) {
      if (mode === "busy") busy();
      if (mode === "same") for (let j = 0; j < 3; j++) await kernel(request);
      times.push((await kernel(request, { timing: true })).meta.gpu_ms);
      if (mode === "idle") await new Promise((r) => setTimeout(r, 2));
    }
    out[mode in out ? `${mode}2` : mode] = median(times.slice(2));
  }
  console.log(JSON.stringify({ case: name, dtype, variant, ...out }));
}
await kernel.idle();  // exiting under a compile crashes Dawn (docs/npm.md#node)
process.exit(0);
