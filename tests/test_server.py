"""The local server serves the app's files with the right types and headers, and nothing outside them."""
import io
import urllib.error
import urllib.request
import zipfile

import pytest

from app.host.server import ROOT, start_background
from tests.local_http import raw_request


@pytest.fixture(scope="module")
def url():
    server, url = start_background()
    yield url
    server.shutdown()


def fetch(url):
    try:
        with urllib.request.urlopen(url) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), b""


@pytest.mark.parametrize("path, mime", [
    ("", "text/html; charset=utf-8"), ("web/runtime/boot.mjs", "text/javascript"),
    ("pyodide/pyodide.asm.wasm", "application/wasm"), ("manifest.json", "application/json"),
])
def test_mime_types_and_isolation_headers(url, path, mime):
    status, headers, _ = fetch(url + path)
    assert status == 200 and headers["Content-Type"] == mime
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert headers["Cross-Origin-Embedder-Policy"] == "require-corp"
    assert "default-src 'self'" in headers["Content-Security-Policy"]


@pytest.mark.parametrize("path", [
    "web/../serve.py", "web/%2e%2e/serve.py", "web/%2E%2E/%2E%2E/etc/passwd", "/etc/passwd", "app/gpu.py",
    "pyodide/../downloads/pyodide-0.27.7.tgz", "web/link-out", ".git/config",
])
def test_nothing_outside_the_app_is_served(url, path):
    link = ROOT / "web" / "link-out"
    link.symlink_to("/etc/hostname")
    try:
        status, _, _ = fetch(url + path)
    finally:
        link.unlink()
    assert status == 404


def test_bundle_holds_the_python_package_templates_and_contract(url):
    status, _, body = fetch(url + "bundle.zip")
    names = set(zipfile.ZipFile(io.BytesIO(body)).namelist())
    assert {"app/__init__.py", "app/gpu.py", "manifest.json", "metadata.json",
            "templates/conv-transpose2d-nchw.wgsl.jinja"} <= names
    assert not any(n.startswith("app/host/") for n in names)
    # The per-adapter tuning tables travel with the package: the planner in Pyodide reads them.
    assert {f"tuning/{p.name}" for p in (ROOT / "tuning").glob("*.json")} <= names
    assert "tuning/google-swiftshader.json" in names


def raw(url, path, method="GET"):
    """A request with the path sent byte for byte (urllib would normalise it)."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    conn.putrequest(method, path, skip_accept_encoding=True)
    conn.endheaders()
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, dict(response.headers), body


@pytest.mark.parametrize("path", [
    "//etc/passwd", "/web//etc/passwd", "/web/..%2fserve.py", "/web/..%5cserve.py", "/web/..\\serve.py",
    "/web/%252e%252e/serve.py", "/pyodide/../../serve.py", "/web/runtime/%00boot.mjs", "/manifest.json%00",
    "/web/" + "a" * 5000, "/web/", "/pyodide/", "/docs/../app/gpu.py", "/%2e%2e/%2e%2e/etc/passwd",
    "/web/.%2e/.%2e/etc/passwd", "/build/pyodide/pyodide.mjs", "/tests/test_server.py", "/README.md",
], ids=lambda path: path[:32])
def test_hostile_paths_are_404_and_the_server_survives(url, path):
    status, _, body = raw(url, path)
    assert status == 404, (path, status)
    assert b"root:" not in body and b"import" not in body
    assert fetch(url + "web/runtime/boot.mjs")[0] == 200  # still serving


def test_symlink_out_of_pyodide_tree_is_not_followed(url):
    from app.host.assets import PYODIDE_DIR

    link = PYODIDE_DIR / "link-out.js"
    link.symlink_to(ROOT / "serve.py")
    try:
        assert fetch(url + "pyodide/link-out.js")[0] == 404
    finally:
        link.unlink()


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS", "TRACE"])
def test_only_get_and_head(url, method):
    status, _, _ = raw(url, "/web/runtime/boot.mjs", method)
    assert status in (405, 501)


def test_head_sends_headers_without_body(url):
    status, headers, body = raw(url, "/web/runtime/boot.mjs", "HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 0


def test_headers_give_nothing_away_and_allow_nothing_looser(url):
    _, headers, _ = fetch(url + "web/runtime/boot.mjs")
    assert headers["Server"].strip() == "convtranspose"  # no Python or OS version
    csp = dict(d.strip().split(" ", 1) for d in headers["Content-Security-Policy"].split(";"))
    assert csp == {
        "default-src": "'self'", "script-src": "'self' 'wasm-unsafe-eval' 'unsafe-eval'", "style-src": "'self'",
        "img-src": "'self' data: blob:", "connect-src": "'self'", "object-src": "'none'", "base-uri": "'none'",
        "frame-ancestors": "'none'"}
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Cross-Origin-Resource-Policy"] == "same-origin"
    assert "Access-Control-Allow-Origin" not in headers


def test_unknown_types_are_not_sniffed(url):
    status, headers, _ = fetch(url + "pyodide/pyodide-lock.json")
    assert status == 200 and headers["Content-Type"] == "application/json"
    status, headers, _ = fetch(url + "pyodide/python_stdlib.zip")
    assert status == 200 and headers["Content-Type"] == "application/zip"


def test_binds_loopback_by_default():
    import inspect

    import serve
    from app.host.server import make_server

    assert inspect.signature(make_server).parameters["bind"].default == "127.0.0.1"
    assert 'default="127.0.0.1"' in inspect.getsource(serve.main)
    server = make_server(port=0)
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.server_close()


def test_serve_listens_on_bind_and_leaves_host_to_the_runtime_choice():
    """`serve --bind ADDR` is the address; `--host` names a runtime (cases, bench, tune, device) only."""
    import re
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "serve.py", "--bind", "127.0.0.1", "--port", "0"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        served = re.search(r"http://(\S+):\d+/", proc.stdout.readline())
        assert served.group(1) == "127.0.0.1"
        assert fetch(served.group(0))[0] == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    refused = subprocess.run([sys.executable, "-m", "app", "serve", "--host", "127.0.0.1"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "--host" in refused.stderr


def _get(url, path="/web/runtime/boot.mjs", host=None):
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return raw_request(parts.hostname, parts.port, "GET", path, host)


@pytest.mark.parametrize("name", [".env", ".git/config", "views/.secret.mjs", ".hidden/x.js"])
def test_dotfiles_under_web_are_404(url, name):
    path = ROOT / "web" / name
    made = [p for p in reversed(path.relative_to(ROOT / "web").parents) if not (ROOT / "web" / p).exists()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("SECRET=1")
    try:
        status, body = _get(url, "/web/" + name)
        encoded, _ = _get(url, "/web/" + name.replace(".", "%2e", 1))
    finally:
        path.unlink()
        for p in reversed(made):
            if str(p) != ".":
                (ROOT / "web" / p).rmdir()
    assert status == 404 and encoded == 404 and b"SECRET" not in body


@pytest.mark.parametrize("host, status", [
    ("attacker.example", 421), ("attacker.example:8000", 421), ("127.0.0.1.attacker.example", 421), ("", 421),
    ("localhost", 200), ("LOCALHOST:1", 200), ("127.0.0.1", 200), ("[::1]:80", 200), ("10.1.2.3", 200),
])
def test_only_ip_literals_localhost_and_allowed_names_are_answered(url, host, status):
    got, body = _get(url, host=host)
    assert got == status, (host, got)
    if status != 200:
        assert b"import" not in body


def test_allowed_host_names_come_from_the_caller_and_the_environment(monkeypatch):
    from app.host.server import ALLOWED_HOSTS_ENV, allowed_hosts

    monkeypatch.setenv(ALLOWED_HOSTS_ENV, "Dev.Example, other.example")
    names = allowed_hosts("127.0.0.1", ["mine.example"])
    assert {"localhost", "dev.example", "other.example", "mine.example"} <= names
    assert "attacker.example" not in names
    assert "box.example" in allowed_hosts("box.example")
    import serve
    monkeypatch.delenv(ALLOWED_HOSTS_ENV)
    assert serve.allow_hosts(["--port", "0", "--allow-host", "a.example", "--allow-host=b.example"]) == ["--port", "0"]
    import os
    assert os.environ[ALLOWED_HOSTS_ENV] == "a.example,b.example"


@pytest.fixture
def deadline_server():
    """A server of its own (the slow-client tests fill its bound), with a header deadline short enough to watch."""
    import threading

    from app.host.server import make_server

    server = make_server(port=0)
    server.header_deadline_s = 1.5
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _timed_get(url):
    import time

    start = time.monotonic()
    status, _ = _get(url)
    return status, time.monotonic() - start


def _closed(socks, wait):
    """The indices of `socks` the server closed within `wait` seconds (each closed one read to its end)."""
    import selectors
    import time

    selector, closed = selectors.DefaultSelector(), []
    for i, s in enumerate(socks):
        selector.register(s, selectors.EVENT_READ, i)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        for key, _ in selector.select(max(0.0, deadline - time.monotonic())):
            try:
                key.fileobj.recv(64)
            except OSError:
                pass
            selector.unregister(key.fileobj)
            closed.append(key.data)
    selector.close()
    return sorted(closed)


def test_silent_connections_hold_no_thread_and_the_oldest_make_room(deadline_server):
    # Measured before: 255 silent connections held the 32 threads 5 s each, and a real GET waited 34 s.
    import socket
    import threading

    from app.host import server as server_module

    server, url = deadline_server
    server.header_deadline_s = 30  # the eviction alone, not the deadline, closes connections here
    before = threading.active_count()
    n = server_module.MAX_CONNECTIONS + 44
    silent = [socket.create_connection(server.server_address) for _ in range(n)]
    try:
        status, seconds = _timed_get(url)
        assert status == 200 and seconds < 2, seconds
        assert threading.active_count() - before <= 1  # the GET's thread; the silent ones hold none
        # past the bound the oldest unfinished connection makes room, for the 44 past it and for the GET
        assert _closed(silent, 1.0) == list(range(45))
    finally:
        for s in silent:
            s.close()


def test_dribbling_clients_are_closed_by_the_header_deadline_and_a_real_get_answers(deadline_server):
    # Measured before: 40 clients sending a byte every 3 s kept the 32 threads forever (each byte restarted
    # their idle timer), and every real GET timed out while they went on. Here a byte every 0.3 s, well within
    # any per-byte timer, against a 1.5 s deadline for the whole request line and headers.
    import socket
    import time

    from app.host import server as server_module

    server, url = deadline_server
    message = b"GET /web/runtime/boot.mjs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 1000
    clients = {}
    for _ in range(server_module.MAX_THREADS + 8):
        s = socket.create_connection(server.server_address)
        clients[s] = time.monotonic()
    lived, replies, get = [], [], None
    for sent in range(30):
        for s in clients:
            try:
                s.send(message[sent:sent + 1])
            except OSError:
                pass  # closed: seen below
        if sent == 3:  # the threads would all be theirs by now
            get = _timed_get(url)
        for i in _closed(list(clients), 0.3)[::-1]:
            s = list(clients)[i]
            lived.append(time.monotonic() - clients.pop(s))
            s.close()
        if not clients:
            break
    for s in clients:
        s.close()
    assert get[0] == 200 and get[1] < 2, get
    assert len(lived) == server_module.MAX_THREADS + 8 and not clients
    assert all(1.4 < t < 3.0 for t in lived), lived  # counted from the accept, whatever the pace


def test_headers_in_pieces_within_the_deadline_are_served_and_oversized_ones_refused(deadline_server):
    import socket
    import time

    server, _ = deadline_server
    with socket.create_connection(server.server_address) as s:
        for piece in (b"GET /web/runtime/boot.mjs HTTP/1.0\r\n", b"Host: 127.0.0.1\r\n", b"\r\n"):
            s.sendall(piece)
            time.sleep(0.2)
        assert s.recv(64).startswith(b"HTTP/1.0 200")
    with socket.create_connection(server.server_address) as s:
        s.sendall(b"GET / HTTP/1.0\r\n" + b"X-Pad: " + b"a" * 70_000)
        assert s.recv(64).startswith(b"HTTP/1.0 431")


def test_files_are_streamed_not_read_whole(url):
    import tracemalloc
    from concurrent.futures import ThreadPoolExecutor

    size = (ROOT / "test.json").stat().st_size
    tracemalloc.start()
    try:
        with ThreadPoolExecutor(32) as pool:
            lengths = list(pool.map(lambda _: _stream_length(url + "test.json"), range(32)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lengths == [size] * 32
    # 32 whole copies would be 32 x the file (18 MB); streamed, each request holds one chunk
    assert peak < 32 * 4 * 256 * 1024, peak


def _stream_length(full_url):
    total = 0
    with urllib.request.urlopen(full_url) as response:
        while chunk := response.read(1 << 16):
            total += len(chunk)
    return total
