"""The local web server: serves the app's own files and nothing else.

Routes: `/` (the run page), `/web/*` (the page's views under web/views/, the JS runtime under web/runtime/), `/pyodide/*` (the verified runtime from
build/pyodide), `/ort/*` (onnxruntime-web's dist/ from node_modules, pinned in package-lock.json: the peer
that `python -m app bench --against ort` times in the same page), `/node_modules/protobufjs/dist/*` (protobufjs,
which reads and writes ONNX files in the page: web/views/onnx-convtranspose.mjs finds it at the same relative
path in Node and in the page), `/bundle.zip` (the Python package, templates and contract files, zipped for Pyodide)
and the contract files at the root. Paths are resolved and must stay inside their folder, so `..`,
encoded dots, absolute paths and symlinks out of the tree are all 404s.
"""
from __future__ import annotations

import io
import threading
import zipfile
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..contract import CHECKOUT, PACKAGE, ROOT
from .assets import PYODIDE_DIR, ensure_pyodide_assets

# Checkout only (an installed wheel has neither): the benchmark peer from npm and the docs' images.
ORT_DIST = (CHECKOUT or ROOT) / "node_modules" / "onnxruntime-web" / "dist"
PROTOBUF_DIST = (CHECKOUT or ROOT) / "node_modules" / "protobufjs" / "dist"
DOCS = (CHECKOUT or ROOT) / "docs"

CONTRACT_FILES = ("manifest.json", "metadata.json", "test.json", "bench.json")
# What Python in the page reads (bench.json: the tuning grids); test.json (5 MB zipped) is fetched by the
# Tests view only when it runs, never unpacked into Pyodide.
BUNDLE_FILES = ("manifest.json", "metadata.json", "bench.json")
MIME = {".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm",
        ".json": "application/json", ".html": "text/html; charset=utf-8", ".css": "text/css",
        ".zip": "application/zip", ".whl": "application/zip", ".png": "image/png",
        ".proto": "text/plain; charset=utf-8"}
HEADERS = {
    # Cross-origin isolation: lets Pyodide use SharedArrayBuffer and high-resolution timers.
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
    # Pyodide compiles its wasm and evaluates the small JS glue it generates, hence the two evals.
    "Content-Security-Policy": ("default-src 'self'; script-src 'self' 'wasm-unsafe-eval' 'unsafe-eval'; "
                                "style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
                                "object-src 'none'; base-uri 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}


def bundle_bytes() -> bytes:
    """The Python side of the app as Pyodide unpacks it: app/ (minus host tooling), templates/, contracts,
    and the per-adapter tuning tables (tuning/*.json), in the checkout's layout (from a checkout or from an
    installed wheel alike)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(PACKAGE.rglob("*.py")):
            parts = path.relative_to(PACKAGE).parts
            if parts[0] not in ("host", "_data"):
                zf.write(path, "/".join(("app",) + parts))
        for path in sorted((ROOT / "templates").glob("*.wgsl.jinja")):
            zf.write(path, path.relative_to(ROOT).as_posix())
        for name in BUNDLE_FILES:
            if (ROOT / name).exists():
                zf.write(ROOT / name, name)
        for path in sorted((ROOT / "tuning").glob("*.json")):
            zf.write(path, path.relative_to(ROOT).as_posix())
    return out.getvalue()


def resolve(url_path: str) -> Path | None:
    """Maps a request path to a file of the app, or None."""
    path = unquote(urlsplit(url_path).path)
    if path in ("/", "/index.html"):
        return ROOT / "web" / "index.html"
    if path.lstrip("/") in CONTRACT_FILES:
        return ROOT / path.lstrip("/")
    for prefix, folder in (("/web/", ROOT / "web"), ("/pyodide/", PYODIDE_DIR), ("/docs/", DOCS),
                           ("/ort/", ORT_DIST), ("/node_modules/protobufjs/dist/", PROTOBUF_DIST)):
        if path.startswith(prefix):
            try:
                candidate = (folder / path[len(prefix):]).resolve()
                if candidate.is_relative_to(folder.resolve()) and candidate.is_file():
                    return candidate
            except (ValueError, OSError):  # a NUL byte, a name too long for the filesystem: not a file of ours
                return None
    return None


class AppHandler(SimpleHTTPRequestHandler):
    server_version = "convtranspose"
    sys_version = ""

    def log_message(self, format, *args):  # noqa: A002 - quiet unless asked
        if self.server.verbose:
            super().log_message(format, *args)

    def do_HEAD(self):
        self._serve(head=True)

    def do_GET(self):
        self._serve(head=False)

    def _serve(self, head: bool):
        if urlsplit(self.path).path == "/bundle.zip":
            body, mime = bundle_bytes(), MIME[".zip"]
        else:
            path = resolve(self.path)
            if path is None or not path.is_file():
                self.send_error(HTTPStatus.NOT_FOUND, "not found")
                return
            body, mime = path.read_bytes(), MIME.get(path.suffix, "application/octet-stream")
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", mime)
        self.send_header("Content-Length", str(len(body)))
        for key, value in HEADERS.items():
            self.send_header(key, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)


def make_server(bind: str = "127.0.0.1", port: int = 8000, verbose: bool = False) -> ThreadingHTTPServer:
    ensure_pyodide_assets()
    server = ThreadingHTTPServer((bind, port), partial(AppHandler))
    server.daemon_threads = True
    server.verbose = verbose
    return server


def start_background(bind: str = "127.0.0.1", port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """A server on a free port in a daemon thread (tests and the case runner); returns it and its URL."""
    server = make_server(bind, port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://{bind}:{server.server_address[1]}/"
