"""Command line (`python -m app` in a checkout, `python -m webgpu_convtranspose` or `webgpu-convtranspose` installed):
`python -m app cases PATH [--variant NAME [--params JSON]] [--host browser|node] [--browser chromium|firefox]`, `python -m app bench [--tier] [--host] [--variants] [--against ort] [--plot PNG]`, `python -m app tune`, `python -m app model FILE.onnx [--host] [--against ort] [--dtype] [--chain]`, `python -m app device [--host]`, `python -m app serve [--bind] [--port]`, `python -m app setup`, `python -m app export DIR`."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# The name this package runs under: app in a checkout, webgpu_convtranspose installed (setup.py).
PROG = f"python -m {__package__ or 'app'}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG)
    sub = parser.add_subparsers(dest="command", required=True)
    cases = sub.add_parser("cases", help="run a case file (test.json format) in a headless browser on WebGPU")
    cases.add_argument("path")
    cases.add_argument("--variant", help="force this variant (a comma-separated list or 'all': each in turn); cases it does not cover are "
                                         "reported skipped")
    cases.add_argument("--host", choices=["browser", "node"], default="browser",
                       help="a headless browser (default) or Node.js with Dawn")
    cases.add_argument("--browser", choices=["chromium", "firefox"], default="chromium",
                       help="with --host browser: Chromium (default, Playwright) or Firefox (firefox-esr 153+, "
                            "puppeteer-core over WebDriver BiDi)")
    cases.add_argument("--params", type=json.loads, help="with --variant: its tile params as JSON (for example "
                       "'{\"rv\": 1}'); cases where the variant does not take them all are reported skipped")
    serve = sub.add_parser("serve", help="serve the app (same as serve.py)")
    serve.add_argument("--bind", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--verbose", action="store_true", help="log every request")
    bench = sub.add_parser("bench", help="time bench.json's cases on real WebGPU")
    bench.add_argument("--tier", default="small",
                       help="the bench file's tier: bench.json has small, full, large and holdout (shapes kept out of tuning, to check that choices generalise)")
    bench.add_argument("--host", choices=["browser", "node"], default="browser")
    bench.add_argument("--variants", help="'all' (every covering variant per case, in its own tiles), 'candidates' "
                                          "(every variant and tiles the planner ranks, the pool adaptation draws "
                                          "from) or a comma-separated list; default: the planner's choice")
    bench.add_argument("--runs", type=int, default=5)
    bench.add_argument("--warmup", type=int, default=1)
    bench.add_argument("--repeats", type=int, default=1,
                       help="submit each timed run this many times back to back on resident buffers (real GPUs: "
                            "keeps the GPU at working clocks; times are per repetition)")
    bench.add_argument("--against", choices=["ort"], help="also time onnxruntime-web (both WebGPU builds) on each "
                                                           "case in the same page, and compare")
    bench.add_argument("--plot", help="with --against ort: write a PNG chart of ours vs ORT per case here")
    bench.add_argument("--breakdown", action="store_true",
                       help="print where a call's time goes (first and repeat calls; CPU data and GPU-resident)")
    bench.add_argument("--autotune", action="store_true",
                       help="time the choice a first call with autotuning makes (searched afresh), with the search's cost")
    bench.add_argument("--out", help="write the rows as JSON here")
    bench.add_argument("--bench", help="a bench file other than bench.json")
    model = sub.add_parser("model", help="run every ConvTranspose layer of an ONNX file on WebGPU with the model's weights, "
                                         "checked against onnxruntime's CPU provider (docs/models.md)")
    model.add_argument("path")
    model.add_argument("--host", choices=["browser", "node"], default="browser")
    model.add_argument("--against", choices=["ort"], help="also time onnxruntime-web (both WebGPU builds) on each "
                                                           "layer, cut from the file with the same weights")
    model.add_argument("--dtype", choices=["float32", "float16"], default="float32",
                       help="run (and check) the layers in this dtype, the model's weights converted")
    model.add_argument("--chain", action="store_true",
                       help="also time the longest chain of ConvTranspose layers, intermediates on the GPU")
    model.add_argument("--runs", type=int, default=5)
    model.add_argument("--warmup", type=int, default=1)
    model.add_argument("--settle", type=float, default=60, metavar="S",
                       help="Node: after the warm-up, wait up to S seconds (default 60; 0: not at all) for the "
                            "host's background threads (V8 compiling onnxruntime-web's wasm) to go idle before the "
                            "timed rounds")
    device = sub.add_parser("device", help="print the WebGPU adapter's info, features and limits as the package sees them")
    device.add_argument("--host", choices=["browser", "node"], default="browser")
    tune = sub.add_parser("tune", help="measure the best tile params per variant and shape class on this adapter "
                                       "and write tuning/<adapter>.json")
    tune.add_argument("--tier", default="small",
                      help="a tier of the bench file (default small); never holdout, which checks choices on "
                           "shapes nothing was tuned on")
    tune.add_argument("--host", choices=["browser", "node"], default="browser")
    tune.add_argument("--runs", type=int, default=3)
    tune.add_argument("--cases", help="comma-separated bench case names (default: every case of the tier)")
    tune.add_argument("--out", help="where to write the table (default: tuning/<vendor>-<architecture>.json)")
    tune.add_argument("--bench", help="a bench file other than bench.json")
    tune.add_argument("--repeats", type=int, default=1,
                      help="time each candidate as this many back-to-back submissions (real GPUs)")
    tune.add_argument("--choose-variants", action="store_true",
                      help="also time every covering variant and record, per shape class, one that beats the "
                           "planner's choice")
    sub.add_parser("setup", help="assemble and verify the offline Pyodide runtime under build/")
    export = sub.add_parser("export", help="write the kernel as a static folder (ES module entry exporting getKernel, "
                                           "Pyodide runtime, package bundle) for any web app to host")
    export.add_argument("dir")
    args = parser.parse_args(argv)

    if args.command == "cases":
        from .host.case_runner import main as run_cases

        if args.host == "node" and args.browser != "chromium":
            parser.error("--browser applies to --host browser only")
        if args.params and not args.variant:
            parser.error("--params applies to a forced --variant")
        if not Path(args.path).exists():  # the runner refuses what is not a regular file, saying so
            # the wheel ships no test.json (18 MB): a checkout has it, or any case file of its format will do
            parser.error(f"{args.path}: no such case file (a checkout's `python -m app setup` writes test.json; "
                         "the installed package runs any file of its format)")
        return run_cases(args.path, args.variant, args.host, args.browser, args.params)
    if args.command == "bench":
        from .host.bench_runner import main as run_bench

        return run_bench(args.tier, args.host, args.variants, args.runs, args.out, args.bench, args.against,
                         args.plot, args.warmup, args.repeats, args.breakdown, args.autotune)
    if args.command == "model":
        try:
            from .host.model_runner import main as run_model
        except ModuleNotFoundError as exc:  # onnx and onnxruntime come with the test extra, not the package
            parser.error(f"model reads the file with onnx and checks it with onnxruntime: {exc.name} is missing "
                         "(pip install onnx onnxruntime)")

        return run_model(args.path, args.host, args.against, args.dtype, args.chain, args.runs, args.warmup,
                         args.settle)
    if args.command == "tune":
        from .host.tune_runner import main as run_tune

        return run_tune(args.tier, args.host, args.runs, args.out, args.bench, args.cases, args.repeats,
                        args.choose_variants)
    if args.command == "device":
        from .host.device_report import main as report_device

        return report_device(args.host)
    if args.command == "setup":
        from .host.assets import ensure_pyodide_assets

        from .host.case_file_setup import CaseFileSetupError, ensure_test_json

        print(ensure_pyodide_assets())
        try:
            print(ensure_test_json() or "test.json: none outside a checkout")
        except CaseFileSetupError as exc:
            print(f"test.json: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.command == "export":
        from .host.export import main as run_export

        return run_export(args.dir)
    from .host.server import make_server
    from .host.case_file_setup import CaseFileSetupError, ensure_test_json

    try:
        ensure_test_json()
    except CaseFileSetupError as exc:  # the app serves without it: the Tests view also runs a file the user picks
        print(f"test.json: {exc}", file=sys.stderr)
    server = make_server(args.bind, args.port, args.verbose)
    print(f"Serving ConvTranspose on WebGPU at http://{args.bind}:{server.server_address[1]}/", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
