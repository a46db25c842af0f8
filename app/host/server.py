"""The local web server: serves the app's own files and nothing else.

Routes: `/` (the run page), `/web/*` (the page's views under web/views/, the JS runtime under web/runtime/), `/pyodide/*` (the verified runtime from
build/pyodide), `/ort/*` (onnxruntime-web's dist/ from node_modules, pinned in package-lock.json: the peer
that `python -m app bench --against ort` times in the same page), `/node_modules/protobufjs/dist/*` (protobufjs,
which reads and writes ONNX files in the page: web/views/onnx-convtranspose.mjs finds it at the same relative
path in Node and in the page), `/bundle.zip` (the Python package, templates and contract files, zipped for Pyodide)
and the contract files at the root. Paths are resolved and must stay inside their folder, so `..`,
encoded dots, absolute paths, symlinks out of the tree and dotfiles (`.env`, `.git/`) are all 404s.

Hostile clients: a request whose Host header is not a name the server answers to (an IP literal, `localhost`,
the name it binds, or one named in $CONVTRANSPOSE_ALLOWED_HOSTS / `serve.py --allow-host`) gets 421, so a page
on another site that re-points its DNS name at 127.0.0.1 (DNS rebinding) cannot read the app. Slow and idle
clients: one thread reads every connection's request line and headers without blocking, and a request reaches
the bounded pool of threads (MAX_THREADS) only once its headers are whole, so a silent or dribbling client
holds a socket, never a thread. Its headers must be whole HEADER_DEADLINE_S after the accept (not per byte:
a byte every few seconds does not extend it), else 408 and closed. At most MAX_CONNECTIONS are open; past
it the oldest connection still sending its headers is closed to admit the new one (503 only when every open
connection is a whole request). Files are streamed from disk in chunks, never read whole.
"""
from __future__ import annotations

import io
import ipaddress
import os
import queue
import selectors
import shutil
import socket
import threading
import time
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
MAX_THREADS = 32  # requests served at once; a page load opens 6 connections per host
MAX_CONNECTIONS = 256  # open connections (sending headers, waiting for a thread or served)
HEADER_DEADLINE_S = 10  # from the accept to the headers' end, whatever the pace (docs/decisions.md#header-deadline)
MAX_HEADER_BYTES = 64 * 1024  # a request line and headers past it: 431 (the stdlib's own limit is one line's)
SEND_TIMEOUT_S = 5  # a client that takes none of its response this long is closed
CHUNK = 256 * 1024
ALLOWED_HOSTS_ENV = "CONVTRANSPOSE_ALLOWED_HOSTS"  # comma-separated host names the server also answers to


_bundle_cache: tuple = ((), b"")
_bundle_lock = threading.Lock()


def _bundle_sources() -> list[Path]:
    return ([p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] not in ("host", "_data")]
            + sorted((ROOT / "templates").glob("*.wgsl.jinja"))
            + [ROOT / n for n in BUNDLE_FILES if (ROOT / n).exists()] + sorted((ROOT / "tuning").glob("*.json")))


def cached_bundle() -> bytes:
    """bundle_bytes, made again only when a source file changed (one copy shared by every request)."""
    global _bundle_cache
    stamp = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in _bundle_sources())
    with _bundle_lock:
        if _bundle_cache[0] != stamp:
            _bundle_cache = (stamp, bundle_bytes())
        return _bundle_cache[1]


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
    if any(part.startswith(".") for part in path.replace("\\", "/").split("/")):
        return None  # dotfiles and dot-folders (.env, .git/): never the app's, whatever the folder holds
    if path in ("/", "/index.html"):
        return ROOT / "web" / "index.html"
    if path.lstrip("/") in CONTRACT_FILES:
        return ROOT / path.lstrip("/")
    for prefix, folder in (("/web/", ROOT / "web"), ("/pyodide/", PYODIDE_DIR), ("/docs/", DOCS),
                           ("/ort/", ORT_DIST), ("/node_modules/protobufjs/dist/", PROTOBUF_DIST)):
        if path.startswith(prefix):
            try:
                candidate = (folder / path[len(prefix):]).resolve()
                root = folder.resolve()
                if (candidate.is_relative_to(root) and candidate.is_file()
                        and not any(p.startswith(".") for p in candidate.relative_to(root).parts)):
                    return candidate
            except (ValueError, OSError):  # a NUL byte, a name too long for the filesystem: not a file of ours
                return None
    return None


def host_name(header: str | None) -> str | None:
    """The name of a Host header without its port ("[::1]:8000" -> "::1"), lower case; None when absent."""
    if not header:
        return None
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


def allowed_hosts(bind: str, extra=()) -> frozenset[str]:
    """The host names the server answers to besides IP literals (which DNS rebinding cannot use): localhost,
    the bind name when it is a name, and the caller's (`extra`, $CONVTRANSPOSE_ALLOWED_HOSTS)."""
    names = {"localhost", *(n.strip().lower() for n in extra if n.strip())}
    names |= {n.strip().lower() for n in os.environ.get(ALLOWED_HOSTS_ENV, "").split(",") if n.strip()}
    if bind and not _is_ip(bind):
        names.add(bind.lower())
    if bind in ("0.0.0.0", "::", ""):  # every interface: the machine's own names too
        names |= {socket.gethostname().lower(), socket.getfqdn().lower()}
    return frozenset(names)


class AppHandler(SimpleHTTPRequestHandler):
    server_version = "convtranspose"
    sys_version = ""
    timeout = SEND_TIMEOUT_S  # the socket's; it is only written to: the request was read before (AppServer)

    def __init__(self, request, client_address, server, head: bytes = b""):
        self.head = head
        super().__init__(request, client_address, server)

    def setup(self):
        super().setup()
        # HTTP/1.0 (the handler's protocol_version): one request per connection, and that request is `head`
        self.rfile.close()
        self.rfile = io.BytesIO(self.head)

    def log_message(self, format, *args):  # noqa: A002 - quiet unless asked
        if self.server.verbose:
            super().log_message(format, *args)

    def do_HEAD(self):
        self._serve(head=True)

    def do_GET(self):
        self._serve(head=False)

    def _serve(self, head: bool):
        host = host_name(self.headers.get("Host"))
        if host is None or not (_is_ip(host) or host in self.server.allowed_hosts):
            self.send_error(HTTPStatus.MISDIRECTED_REQUEST, "unknown host name")
            return
        if urlsplit(self.path).path == "/snapshot.bin":
            # the checkout's page starts Python from scratch: its sources change under it (an export ships one)
            self.send_response(HTTPStatus.NO_CONTENT)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if urlsplit(self.path).path == "/bundle.zip":
            body = cached_bundle()
            self._headers(MIME[".zip"], len(body))
            if not head:
                self.wfile.write(body)
            return
        path = resolve(self.path)
        try:
            stream = path.open("rb") if path is not None else None
        except OSError:
            stream = None
        if stream is None:
            self.send_error(HTTPStatus.NOT_FOUND, "not found")
            return
        with stream:
            self._headers(MIME.get(path.suffix, "application/octet-stream"), os.fstat(stream.fileno()).st_size)
            if not head:
                shutil.copyfileobj(stream, self.wfile, CHUNK)

    def _headers(self, mime: str, length: int) -> None:
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", mime)
        self.send_header("Content-Length", str(length))
        for key, value in HEADERS.items():
            self.send_header(key, value)
        self.end_headers()


class AppServer(ThreadingHTTPServer):
    """The HTTP server: the accepting thread hands each connection to one header-reading thread (a selector over
    every connection still sending its request line and headers), which hands whole requests to a bounded pool
    of daemon threads (started as needed, at most MAX_THREADS; daemons, so that a client holding a connection
    never holds the process at exit)."""

    request_queue_size = 128  # the listen backlog: connections past it wait in the kernel, unseen by the bound
    header_deadline_s = HEADER_DEADLINE_S

    def __init__(self, address, handler, verbose: bool = False, allowed: frozenset = frozenset()):
        self.verbose, self.allowed_hosts = verbose, allowed
        self.waiting: queue.SimpleQueue = queue.SimpleQueue()  # whole requests for the pool
        self.arrivals: queue.SimpleQueue = queue.SimpleQueue()  # accepted connections for the header reader
        self.workers: list[threading.Thread] = []
        self.idle = 0
        self.serving = 0  # connections handed to the pool, queued or served
        self.pool_lock = threading.Lock()
        self.closing = False
        self.wake_r, self.wake_w = socket.socketpair()
        for s in (self.wake_r, self.wake_w):
            s.setblocking(False)
        try:
            super().__init__(address, handler)
        except BaseException:  # the port taken, say: nothing of the server's stays open
            self.wake_r.close()
            self.wake_w.close()
            raise
        threading.Thread(target=self._read_headers, daemon=True, name="serve-headers").start()

    def process_request(self, request, client_address):
        # stamped here, on the accepting thread: the header deadline counts from the accept
        self.arrivals.put((request, client_address, time.monotonic()))
        self._wake()

    def _wake(self):
        try:
            self.wake_w.send(b"\0")
        except OSError:  # full: the reader has wake-ups pending anyway; closed: the server is closing
            pass

    def server_close(self):
        super().server_close()
        self.closing = True
        self._wake()

    def _read_headers(self):
        selector = selectors.DefaultSelector()
        selector.register(self.wake_r, selectors.EVENT_READ)
        pending: dict = {}  # socket -> [address, accepted at, bytes so far], the oldest accepted first

        def drop(sock, reply: bytes = b""):
            selector.unregister(sock)
            del pending[sock]
            try:
                if reply:
                    sock.send(reply)
            except OSError:
                pass
            sock.close()

        while not self.closing:
            timeout = None
            if pending:
                accepted = next(iter(pending.values()))[1]
                timeout = max(0.0, accepted + self.header_deadline_s - time.monotonic())
            for key, _ in selector.select(timeout):
                sock = key.fileobj
                if sock is self.wake_r:
                    try:
                        while self.wake_r.recv(4096):
                            pass
                    except OSError:
                        pass
                    self._admit(selector, pending, drop)
                elif sock in pending:
                    self._read(sock, pending, drop, selector)
            now = time.monotonic()
            while pending:
                sock, (_, accepted, _) = next(iter(pending.items()))
                if now - accepted < self.header_deadline_s:
                    break
                drop(sock, b"HTTP/1.0 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")
        for sock in list(pending):
            drop(sock)
        selector.close()
        self.wake_r.close()
        self.wake_w.close()

    def _admit(self, selector, pending, drop):
        while True:
            try:
                sock, address, accepted = self.arrivals.get_nowait()
            except queue.Empty:
                return
            with self.pool_lock:
                full = len(pending) + self.serving >= MAX_CONNECTIONS
            if full and pending:
                drop(next(iter(pending)))  # the oldest unfinished request: a real client's headers come at once
            elif full:
                try:
                    sock.send(b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass
                self.shutdown_request(sock)
                continue
            sock.setblocking(False)
            pending[sock] = [address, accepted, bytearray()]
            selector.register(sock, selectors.EVENT_READ)

    def _read(self, sock, pending, drop, selector):
        try:
            chunk = sock.recv(MAX_HEADER_BYTES)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            drop(sock)
            return
        address, _, head = pending[sock]
        head += chunk
        # the blank line that ends the headers, found in the new bytes and the three before them
        tail = bytes(head[-len(chunk) - 3:])
        if b"\n\r\n" in tail or b"\n\n" in tail:
            selector.unregister(sock)
            del pending[sock]
            sock.setblocking(True)
            self._dispatch(sock, address, bytes(head))
        elif len(head) > MAX_HEADER_BYTES:
            drop(sock, b"HTTP/1.0 431 Request Header Fields Too Large\r\nContent-Length: 0\r\n\r\n")

    def _dispatch(self, request, client_address, head: bytes):
        with self.pool_lock:
            self.serving += 1
            # a thread for every request waiting, up to the bound (queued ones wait for a thread to free up)
            if self.waiting.qsize() + 1 > self.idle and len(self.workers) < MAX_THREADS:
                worker = threading.Thread(target=self._work, daemon=True, name=f"serve-{len(self.workers)}")
                self.workers.append(worker)
                self.idle += 1
                worker.start()
        self.waiting.put((request, client_address, head))

    def _work(self):
        while True:
            request, client_address, head = self.waiting.get()
            with self.pool_lock:
                self.idle -= 1
            try:
                self.RequestHandlerClass(request, client_address, self, head)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)
                with self.pool_lock:
                    self.serving -= 1
                    self.idle += 1


def make_server(bind: str = "127.0.0.1", port: int = 8000, verbose: bool = False,
                allow_hosts=()) -> AppServer:
    ensure_pyodide_assets()
    return AppServer((bind, port), partial(AppHandler), verbose, allowed_hosts(bind, allow_hosts))


def start_background(bind: str = "127.0.0.1", port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """A server on a free port in a daemon thread (tests and the case runner); returns it and its URL."""
    server = make_server(bind, port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://{bind}:{server.server_address[1]}/"
