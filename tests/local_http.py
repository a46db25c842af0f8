"""Small helpers for tests that serve files on loopback: a free port, waiting until a server answers, and a raw
request whose Host header the test controls."""
import http.client
import socket
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_served(url: str, attempts: int, pause: float, timeout: float) -> None:
    """Polls `url` until it answers, at most `attempts` times `pause` seconds apart."""
    for _ in range(attempts):
        try:
            urllib.request.urlopen(url, timeout=timeout).close()
            return
        except OSError:
            time.sleep(pause)


def raw_request(hostname: str, port: int, method: str, path: str, host: str | None = None) -> tuple[int, bytes]:
    """(status, body) of one request; `host` None sends the default Host header, "" none, else that value."""
    conn = http.client.HTTPConnection(hostname, port, timeout=10)
    conn.putrequest(method, path, skip_host=host is not None, skip_accept_encoding=True)
    if host:
        conn.putheader("Host", host)
    conn.endheaders()
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, body
