// The child side of app/host/child.py's JSON-lines protocol, for the Node processes Python drives (the Node
// host, the Firefox driver): one request per stdin line {"id", "method", "params"}, one reply per stdout line
// {"id", "result"} or {"id", "error"}; the first line the child writes is its own {"ready": ...}.
import { createInterface } from "node:readline";

export const reply = (message) => process.stdout.write(JSON.stringify(message) + "\n");

/** Answers requests with `methods` until stdin closes; `describe` turns a thrown error into the reply's text. */
export async function serve(methods, describe = (err) => String(err?.message ?? err)) {
  for await (const line of createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    const { id, method, params = [] } = JSON.parse(line);
    try {
      if (!(method in methods)) throw new Error(`unknown method ${method}`);
      reply({ id, result: (await methods[method](...params)) ?? null });
    } catch (err) {
      reply({ id, error: describe(err) });
    }
  }
}

/** Ends this process now, once everything it wrote has reached its pipes. For a process that ran large wasm
 *  (Pyodide, onnxruntime-web): `process.exit` first waits for V8's background tier-up compiles of it to finish
 *  (10 s and more of CPU after onnxruntime-web), work nobody will use. Nothing is left to do at that point: each
 *  reply went out after its method's writes had settled. */
export async function exitNow() {
  for (const stream of [process.stdout, process.stderr]) await new Promise((resolve) => stream.write("", resolve));
  process.kill(process.pid, "SIGKILL");
}
