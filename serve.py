"""Serves the app locally: `python serve.py [--host 127.0.0.1] [--port 8000]`.

The first run assembles the offline Pyodide runtime under build/ (every file checked against a pinned
sha256); later runs reuse it.
"""
import argparse

from app.host.server import make_server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args()
    server = make_server(args.host, args.port, args.verbose)
    print(f"Serving ConvTranspose on WebGPU at http://{args.host}:{server.server_address[1]}/", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
