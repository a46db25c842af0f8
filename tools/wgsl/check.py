"""Both WGSL compilers over every shader the package can render: Tint (Chromium's, through Dawn for Node:
tools/wgsl/tint.mjs) and naga (Firefox's, through wgpu-py: tools/wgsl/naga.py).

    python -m tools.wgsl.check          # prints one line per rejected shader or warning, then a summary; exit 1 on any

The shaders come from tools/wgsl/matrix.py (the variants' own planning over many geometries and devices).
Each compiler runs in WORKERS child processes (one Dawn device or one wgpu device each), fed one shader at a
time, so a native crash or a hang (Dawn for Node crashed at random while its GPU object could be
garbage-collected, and with two Dawn instances in one process; both are avoided now) costs only a restart:
the shader is tried again in a fresh process, and reported as a failure only when it fails every try.

What each compiler checks:
- Tint, Dawn's null backend (every feature offered): parsing, resolution, validation, uniformity analysis and
  the pipeline's layout and limits, for every shader, float16 and subgroup matrices included.
- Tint, SwiftShader's Vulkan driver: the same plus the SPIR-V writer and the driver's compiler, for one
  shader of every back-end structure (tools/wgsl/structure.py) among those planned for a software adapter
  that SwiftShader can run (no shader-f16, no subgroup matrices), and more where one does not stand in for
  all: each other shader of a structure differs from its stand-in only in constants that Dawn's validation
  bounds (workgroup size and memory, no larger) or in expression constants of the same kind, or has shorter
  runs of the same unrolled statements, and passes the two front ends above on its own (docs/testing.md says
  what that covers). A shader that another test already compiles on SwiftShader because it runs it (test.json
  in Node and in Chromium, every variant forced, the tuning candidates: tools/wgsl/credited.py) stands in as a
  compiled one does, and is not compiled again.
A pipeline is built only on a device whose limits (workgroup memory and size) hold what the shader was
planned for; the shader module (every language check) is made on every device.
- naga, Mesa's lavapipe: parsing, validation, the SPIR-V writer and the driver, for every shader except the
  subgroup-matrix ones: naga implements neither `enable subgroups;` nor
  `chromium_experimental_subgroup_matrix` (Firefox never offers those features, so those variants never run
  there).
"""
from __future__ import annotations

import collections
import concurrent.futures
import json
import os
import queue
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import NamedTuple

from app.contract import ROOT
from app.host.child import NODE
from app.host.node import node_env

# One shader's compile: up to 10 s for the largest (65 KB of unrolled GEMM) on SwiftShader, several times that
# on a loaded machine; a process silent for this long is taken as hung.
SHADER_TIMEOUT_S = 600
TRIES = 3
# Compiler processes per compiler, each fed one shader at a time (both cores of CI's machine).
WORKERS = max(1, min(4, len(os.sched_getaffinity(0))))


@dataclass
class Outcome:
    id: int
    compiler: str  # "tint/null", "tint/swiftshader", "naga/..."
    error: str | None
    warnings: list[str]
    note: str | None = None
    cpu_ms: int = 0  # the compiler process's CPU time on the shader (every thread)


COMPILERS = ("tint/null", "tint/swiftshader", "naga")


def _command(compiler: str) -> list[str]:
    if compiler.startswith("tint/"):
        return [NODE, str(ROOT / "tools" / "wgsl" / "tint.mjs"), compiler.split("/")[1]]
    return [sys.executable, "-m", "tools.wgsl.naga"]


def _name(compiler: str, device: str) -> str:
    return compiler if compiler.startswith("tint/") else device  # naga's device says naga/<backend>:<adapter>


def _reader(stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


class _Child:
    """One compiler process: greets with its device, then answers one shader per line it is sent."""

    def __init__(self, compiler: str, env: dict):
        self.compiler = compiler
        self.proc = subprocess.Popen(_command(compiler), cwd=ROOT, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.hung = False
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=_reader, args=(self.proc.stdout, self.lines), daemon=True).start()
        self.stderr: list[str] = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        hello = self._reply()
        if hello is None or "warning" in hello:
            self.kill()
            raise RuntimeError(f"{compiler}: {hello['warning']}" if hello else
                               f"{compiler} exited with status {self.proc.returncode} before any shader: "
                               f"{self.tail(2000)}")
        self.device = hello["device"]

    def _reply(self) -> dict | None:
        """The next JSON line, or None when the process died or said nothing for SHADER_TIMEOUT_S."""
        while True:
            try:
                line = self.lines.get(timeout=SHADER_TIMEOUT_S)
            except queue.Empty:
                self.hung = True
                return None
            if line is None:
                self.hung = False
                return None
            if line.startswith("{"):
                return json.loads(line)

    def ask(self, shader: dict) -> dict | None:
        try:
            self.proc.stdin.write(json.dumps(shader) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.hung = False
            return None
        return self._reply()

    def why_not(self) -> str:
        """Why the last ask had no answer (after kill)."""
        if self.hung:
            return f"no answer after {SHADER_TIMEOUT_S} s"
        return f"the compiler process died (status {self.proc.returncode}): {self.tail(600)}"

    def tail(self, n: int) -> str:
        return "".join(self.stderr)[-n:].strip()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        self.proc.stdin.close()
        if self.proc.wait(timeout=SHADER_TIMEOUT_S) != 0:
            raise RuntimeError(f"{self.compiler} exited with status {self.proc.returncode}: {self.tail(2000)}")


def run(compiler: str, shaders: list[dict], progress=None, workers: int = WORKERS) -> list[Outcome]:
    """Compiles every shader ({id, code, features, limits}) with one compiler, in `workers` processes fed one
    shader at a time. A process that dies or hangs on a shader is replaced, and the shader tried again in the
    fresh one; after TRIES deaths on it, the death is its outcome."""
    outcomes: dict[tuple[int, str], Outcome] = {}
    # The longest sources first (compile time grows with them): no process is left compiling a large one
    # alone at the end while the others idle.
    pending = collections.deque(sorted(shaders, key=lambda s: -len(s["code"])))
    failures: dict[int, int] = {}
    lock = threading.Lock()
    env = node_env() if compiler.startswith("tint") else dict(os.environ)

    def work() -> None:
        child = None
        try:
            while True:
                with lock:
                    if not pending:
                        return
                    shader = pending.popleft()
                if child is None:
                    child = _Child(compiler, env)
                reply = child.ask(shader)
                if reply is not None:
                    if "skipped" not in reply:
                        name = _name(compiler, reply["device"])
                        with lock:
                            outcomes[(reply["id"], name)] = Outcome(
                                reply["id"], name, reply.get("error"),
                                [m["message"] for m in reply.get("messages", []) if m["type"] != "info"],
                                reply.get("note"), reply.get("cpu_ms", 0))
                    continue
                child.kill()
                with lock:
                    failures[shader["id"]] = failures.get(shader["id"], 0) + 1
                    if failures[shader["id"]] >= TRIES:
                        name = _name(compiler, child.device)
                        outcomes[(shader["id"], name)] = Outcome(shader["id"], name,
                                                                 f"{child.why_not()} ({TRIES} tries)", [])
                    else:
                        pending.appendleft(shader)
                    restarts = sum(failures.values())
                if progress:
                    progress(f"{compiler}: restarted after a crash on shader {shader['id']} ({restarts} restart(s))")
                child = None
        except BaseException:
            with lock:
                pending.clear()  # the other workers stop too: this error is the run's outcome
            raise
        finally:
            if child is not None:
                child.close()

    with concurrent.futures.ThreadPoolExecutor(max(1, min(workers, len(shaders)))) as pool:
        for future in [pool.submit(work) for _ in range(max(1, min(workers, len(shaders))))]:
            future.result()
    return sorted(outcomes.values(), key=lambda o: (o.id, o.compiler))


def shaders_as_data(matrix) -> list[dict]:
    from tools.wgsl.matrix import planned_for_software, planned_limits

    return [{"id": i, "code": s.source, "features": list(s.features), "limits": planned_limits(s),
             "software": planned_for_software(s)} for i, s in enumerate(matrix.shaders.values())]


def for_compiler(compiler: str, shaders: list[dict]) -> list[dict]:
    """What each compiler compiles: every shader for Tint's front end (null) and naga; for SwiftShader the
    shaders backend_plan picks among those planned for a software adapter that SwiftShader can compile (the
    GPU-shaped tiles, long unrolled bodies, take it minutes and gigabytes each, and no plan ever gives them
    to it), less what other tests compile there (tools/wgsl/credited.py)."""
    if compiler == "tint/swiftshader":
        from tools.wgsl import credited

        return backend_plan(shaders, credited.sources()).compiled
    return shaders


SWIFTSHADER_FEATURES = {"subgroups"}  # what Chromium's SwiftShader offers of the features the shaders enable


class BackendPlan(NamedTuple):
    compiled: list[dict]  # the shaders the SwiftShader pass compiles
    stands_for: dict[int, int]  # id of each other shader a software adapter runs -> id of its stand-in
    # id -> {"id", "code", "by"} of each shader other tests compile on SwiftShader (`by`: their files): a
    # matrix shader's own id (it stands for itself), else an id past the matrix's
    credited: dict[int, dict]


def backend_plan(shaders: list[dict], credited: dict[str, list[str]] | None = None) -> BackendPlan:
    """What SwiftShader compiles, and the stand-in of each shader it skips. One stands for another when both
    have one structure (tools/wgsl/structure.py), the other's statements are a subsequence of its own (unrolled
    runs at most as long) and its workgroup sizes and workgroup array counts are each at least the other's:
    the limits the other's pipeline is validated against then hold for it too. The stand-ins are first the
    `credited` sources (source -> the test files that compile them on SwiftShader: tools/wgsl/credited.py),
    then, in each structure, the shader with the most statements (then the largest workgroup values, then the
    largest other constants, then the lowest id), then every shader that no chosen one stands for."""
    from tools.wgsl.structure import Numbering, analyse, squash, subsequence

    numbering = Numbering()

    def read(code: str):
        a = analyse(code)
        units = numbering(a.units)
        return (squash(units, numbering.nesting), len(a.bounded)), units, a

    classes: dict[tuple, tuple[list, list]] = {}
    ids = {}
    for s in shaders:
        if s["software"] and set(s["features"]) <= SWIFTSHADER_FEATURES:
            key, units, a = read(s["code"])
            classes.setdefault(key, ([], []))[0].append((units, a.bounded, a.operands, s))
            ids[s["code"]] = s["id"]
    given: dict[int, dict] = {}
    for source, tests in sorted((credited or {}).items()):
        key, units, a = read(source)
        if key in classes:  # a shader no software plan of the matrix has stands for none of them
            entry = {"id": ids.get(source, len(shaders) + len(given)), "code": source, "by": sorted(tests)}
            given[entry["id"]] = entry
            classes[key][1].append((units, a.bounded, entry))
    compiled, stands_for = [], {}
    for members, chosen in classes.values():
        members.sort(key=lambda m: (-len(m[0]), -sum(m[1]), -sum(m[2]), m[3]["id"]))
        for units, bounded, _, s in members:
            cover = next((c for u, b, c in chosen
                          if all(x <= y for x, y in zip(bounded, b)) and subsequence(units, u)), None)
            if cover is None:
                chosen.append((units, bounded, s))
                compiled.append(s)
            else:
                stands_for[s["id"]] = cover["id"]
    return BackendPlan(sorted(compiled, key=lambda s: s["id"]), stands_for, given)


def describe(shader, outcome: Outcome) -> str:
    uses = sorted(shader.uses)
    variant, device, geom = uses[0]
    where = f"{shader.template} (variant {variant} on {device}, {geom}; {len(uses)} plan(s) render it)"
    params = json.dumps({k: v for k, v in shader.render_params.items() if k != "uniform_fields"}, sort_keys=True)
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
    from tools.wgsl import credited

    plan = backend_plan(data, credited.sources())
    print(f"tint/swiftshader: {len(plan.compiled)} of the {len(plan.compiled) + len(plan.stands_for)} shaders a "
          f"software adapter runs that SwiftShader can compile (one or more of each back-end structure not "
          f"already compiled by the {len(plan.credited)} shaders other tests run there; tools/wgsl/structure.py, "
          "credited.py)", flush=True)
    for compiler in COMPILERS:
        to_compile = plan.compiled if compiler == "tint/swiftshader" else for_compiler(compiler, data)
        outcomes = run(compiler, to_compile, progress=lambda line: print(line, flush=True))
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
                  f"subgroup sizes); {sum(o.cpu_ms for o in items) / 1000:.0f} s of compiler CPU time", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
