"""Both WGSL compilers over every shader the package can render: Tint (Chromium's, through Dawn for Node:
tools/wgsl/tint.mjs) and naga (Firefox's, through wgpu-py: tools/wgsl/naga.py).

    python -m tools.wgsl.check          # prints one line per rejected shader or warning, then a summary; exit 1 on any

The shaders come from tools/wgsl/matrix.py (the variants' own planning over many geometries and devices).
A compiler runs in a child process that announces each shader before compiling it, so a native crash or a
hang (Dawn for Node crashed at random while its GPU object could be garbage-collected, and with two Dawn
instances in one process; both are avoided now) costs only a restart: the shader is tried again in a fresh
process, and reported as a failure only when it fails every try.

What each compiler checks:
- Tint, Dawn's null backend (every feature offered): parsing, resolution, validation, uniformity analysis and
  the pipeline's layout and limits, for every shader, float16 and subgroup matrices included.
- Tint, SwiftShader's Vulkan driver: the same plus the SPIR-V writer and the driver's compiler, for the shaders
  planned for a software adapter that SwiftShader can run (no shader-f16, no subgroup matrices).
A pipeline is built only on a device whose limits (workgroup memory and size) hold what the shader was
planned for; the shader module (every language check) is made on every device.
- naga, Mesa's lavapipe: parsing, validation, the SPIR-V writer and the driver, for every shader except the
  subgroup-matrix ones: naga implements neither `enable subgroups;` nor
  `chromium_experimental_subgroup_matrix` (Firefox never offers those features, so those variants never run
  there).
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass

from app.contract import ROOT
from app.host.child import NODE
from app.host.node import node_env

SHADER_TIMEOUT_S = 120  # one shader's compile on a software driver takes well under a second
TRIES = 3


@dataclass
class Outcome:
    id: int
    compiler: str  # "tint/null", "tint/swiftshader", "naga/..."
    error: str | None
    warnings: list[str]
    note: str | None = None


COMPILERS = ("tint/null", "tint/swiftshader", "naga")


def _command(compiler: str, path: str) -> list[str]:
    if compiler.startswith("tint/"):
        return [NODE, str(ROOT / "tools" / "wgsl" / "tint.mjs"), path, compiler.split("/")[1]]
    return [sys.executable, "-m", "tools.wgsl.naga", path]


def _name(compiler: str, device: str) -> str:
    return compiler if compiler.startswith("tint/") else device  # naga's device says naga/<backend>:<adapter>


def _reader(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def run(compiler: str, shaders: list[dict], progress=None) -> list[Outcome]:
    """Compiles every shader ({id, code, features}) with one compiler; restarts the child after a crash."""
    outcomes: dict[tuple[int, str], Outcome] = {}
    pending = list(shaders)
    failures: dict[int, int] = {}
    env = node_env() if compiler.startswith("tint") else dict(os.environ)
    while pending:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(pending, f)
            path = f.name
        proc = subprocess.Popen(_command(compiler, path), cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
        stderr: list[str] = []
        threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True).start()
        current, done, hung = None, set(), False  # done: every device of the shader answered
        while True:
            try:
                line = lines.get(timeout=SHADER_TIMEOUT_S)
            except queue.Empty:
                proc.kill()
                hung = True
                break
            if line is None:
                break
            if not line.startswith("{"):
                continue
            reply = json.loads(line)
            if "warning" in reply and "id" not in reply:
                proc.kill()
                raise RuntimeError(f"{compiler}: {reply['warning']}")
            if "start" in reply:
                if current is not None and current[0] != reply["start"]:
                    done.add(current[0])
                current = (reply["start"], reply["device"])
                continue
            if "skipped" in reply:
                done.add(reply["id"])
                continue
            name = _name(compiler, reply["device"])
            outcomes[(reply["id"], name)] = Outcome(reply["id"], name, reply.get("error"),
                                                    [m["message"] for m in reply.get("messages", [])
                                                     if m["type"] != "info"], reply.get("note"))
            current = (reply["id"], None)  # answered: a crash now would be after this device
        status = proc.wait()
        os.unlink(path)
        if not hung and status == 0:
            break
        if current is None:
            raise RuntimeError(f"{compiler} exited with status {status} before any shader: "
                               f"{''.join(stderr)[-2000:]}")
        # It died (or hung) in this shader's compile on `device`, or after its last answer (device None): the
        # shader runs again whole in a fresh process; after TRIES deaths on it, the death is its outcome.
        shader_id, device = current
        failures[shader_id] = failures.get(shader_id, 0) + 1
        if failures[shader_id] >= TRIES:
            done.add(shader_id)
            if device is not None:
                reason = (f"no answer after {SHADER_TIMEOUT_S} s" if hung else
                          f"the compiler process died (status {status}): {''.join(stderr)[-600:].strip()}")
                name = _name(compiler, device)
                outcomes[(shader_id, name)] = Outcome(shader_id, name, f"{reason} ({TRIES} tries)", [])
        restarts = sum(failures.values())
        if progress:
            progress(f"{compiler}: restarted after a crash on shader {shader_id} ({restarts} restart(s))")
        pending = [s for s in pending if s["id"] not in done]
    return sorted(outcomes.values(), key=lambda o: (o.id, o.compiler))


def shaders_as_data(matrix) -> list[dict]:
    from tools.wgsl.matrix import planned_for_software, planned_limits

    return [{"id": i, "code": s.source, "features": list(s.features), "limits": planned_limits(s),
             "software": planned_for_software(s)} for i, s in enumerate(matrix.shaders.values())]


def for_compiler(compiler: str, shaders: list[dict]) -> list[dict]:
    """SwiftShader compiles what a software adapter runs: the GPU-shaped tiles (long unrolled bodies) take it
    minutes and gigabytes each, and no plan ever gives them to it; Tint's front end (null) and naga check them."""
    return [s for s in shaders if s["software"]] if compiler == "tint/swiftshader" else shaders


def describe(shader, outcome: Outcome) -> str:
    uses = sorted(shader.uses)
    variant, device, geom = uses[0]
    where = f"{shader.template} (variant {variant} on {device}, {geom}; {len(uses)} plan(s) render it)"
    params = json.dumps({k: v for k, v in shader.params.items() if k != "uniform_fields"}, sort_keys=True)
    if outcome.error:
        return f"{outcome.compiler} rejects {where} params {params}:\n{outcome.error}"
    return f"{outcome.compiler} warns on {where} params {params}:\n" + "\n".join(outcome.warnings)


def main() -> int:
    from tools.wgsl.matrix import build, coverage_gaps

    matrix = build()
    shaders = list(matrix.shaders.values())
    data = shaders_as_data(matrix)
    print(f"{len(shaders)} distinct shaders from {len(matrix.templates)} templates", flush=True)
    bad = 0
    for gap in coverage_gaps(matrix):
        print(f"GAP {gap}")
        bad += 1
    for compiler in COMPILERS:
        outcomes = run(compiler, for_compiler(compiler, data), progress=lambda line: print(line, flush=True))
        by = {}
        for o in outcomes:
            by.setdefault(o.compiler, []).append(o)
            if o.error or o.warnings:
                bad += 1
                print(describe(shaders[o.id], o), flush=True)
        for name, items in sorted(by.items()):
            print(f"{name}: {len(items)} compiled, {sum(1 for o in items if o.error)} rejected, "
                  f"{sum(1 for o in items if o.warnings)} with warnings, "
                  f"{sum(1 for o in items if o.note)} checked without a pipeline (planned for other limits or "
                  "subgroup sizes)", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
