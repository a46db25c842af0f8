// Drives Debian's Firefox (firefox-esr 153+, WebGPU on) through WebDriver BiDi with npm `puppeteer-core`:
// no geckodriver, no browser download. app/host/firefox.py starts it and speaks JSON lines on stdin/stdout:
//   {"id": 1, "method": "evaluate", "params": [source, arg]}  ->  {"id": 1, "result": ...} or {"id": 1, "error": "..."}
// Methods: evaluate(source, arg) (source: a JS expression, or a function called with arg, as Playwright's
// page.evaluate), waitForFunction(source, timeoutMs), click(selector), uploadFile(selector, path).
// Usage: node app/host/firefox_driver.mjs URL [FIREFOX]   (prints {"ready": true, ...} once the app booted)
import puppeteer from "puppeteer-core";
import { reply, serve } from "../../web/views/json-lines.mjs";

const [url, executablePath = "/usr/bin/firefox-esr"] = process.argv.slice(2);
const BOOT_TIMEOUT_MS = 180_000;
// WebGPU is off in release builds unless asked for; CPU adapters (lavapipe) are blocklisted otherwise.
const PREFS = { "dom.webgpu.enabled": true, "gfx.webgpu.ignore-blocklist": true };

// Firefox's `e.stack` omits the message: String(e) keeps it.
const describe = (err) => String(err?.message ?? err);

const browser = await puppeteer.launch({
  browser: "firefox", executablePath, headless: true, extraPrefsFirefox: PREFS,
  protocolTimeout: 0,  // a case may run for minutes on a software adapter; Python applies its own timeouts
});
let page;
try {
  page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (err) => errors.push(describe(err)));
  const started = Date.now();
  await page.goto(url);
  await page.waitForFunction("window.appReady !== undefined", { timeout: BOOT_TIMEOUT_MS, polling: 100 });
  try {
    await page.evaluate("window.appReady.then(() => true)");
  } catch (err) {
    throw new Error(`the app did not start: ${describe(err)}; page errors: ${JSON.stringify(errors)}`);
  }
  reply({ ready: true, bootMs: Date.now() - started, version: await browser.version() });
} catch (err) {
  reply({ ready: false, error: describe(err) });
  await browser.close();
  process.exit(1);
}

// A source string is evaluated in the page as Playwright does: a function is called with the argument,
// anything else is an expression (the page's CSP allows eval: Pyodide needs it).
const inPage = async (source, arg) => {
  const value = (0, eval)(`(${source})`);
  return typeof value === "function" ? await value(arg) : await value;
};

const methods = {
  evaluate: (source, arg = null) => page.evaluate(inPage, source, arg),
  waitForFunction: async (source, timeoutMs) => {
    await page.waitForFunction(inPage, { timeout: timeoutMs, polling: 100 }, source, null);
    return true;
  },
  click: async (selector) => { await page.click(selector); return true; },
  uploadFile: async (selector, path) => {
    const input = await page.$(selector);
    if (!input) throw new Error(`no element matches ${selector}`);
    await input.uploadFile(path);
    return true;
  },
};

await serve(methods, describe);
await browser.close();
process.exit(0);
