"""A Node.js child process spoken to in JSON lines: one request per line on its stdin
({"id", "method", "params"}), one reply per line on its stdout ({"id", "result"} or {"id", "error"}), after a
first {"ready": true, ...} line. Other stdout lines (Dawn's and the browser's own warnings) are passed on to
stderr, tagged; the child's stderr is kept for the error when it exits. `close` closes its stdin, which ends it:
the Node host kills itself at once then (web/views/json-lines.mjs `exitNow`: its exit status is -9), a child
still running after `timeout` is killed."""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile

NODE = os.environ.get("NODE", "node")
# Node's own flags (V8's too), before the script: the test suite sets "--liftoff-only" (tests/conftest.py says why).
NODE_FLAGS_ENV = "CONVTRANSPOSE_NODE_FLAGS"


class JsonLinesChild:
    def __init__(self, args: list[str], tag: str, **popen):
        self.tag = tag
        self._ids = itertools.count(1)
        self._stderr = tempfile.TemporaryFile(mode="w+")
        flags = os.environ.get(NODE_FLAGS_ENV, "").split()
        self.proc = subprocess.Popen([NODE, *flags, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, text=True, **popen)
        self.hello = self.read()

    def read(self) -> dict:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self._stderr.seek(0)
                tail = self._stderr.read()[-2000:]
                raise RuntimeError(f"the {self.tag} exited (status {self.proc.wait()}): {tail}")
            if line.startswith("{"):
                return json.loads(line)
            print(f"[{self.tag}] {line.rstrip()}", file=sys.stderr, flush=True)

    def call(self, method: str, *params):
        request_id = next(self._ids)
        self.proc.stdin.write(json.dumps({"id": request_id, "method": method, "params": list(params)}) + "\n")
        self.proc.stdin.flush()
        reply = self.read()
        if reply.get("id") != request_id:
            raise RuntimeError(f"the {self.tag} answered out of order: {reply}")
        if "error" in reply:
            raise RuntimeError(f"{self.tag}: {reply['error']}")
        return reply["result"]

    def close(self, timeout: float = 10) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
