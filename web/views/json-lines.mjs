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
