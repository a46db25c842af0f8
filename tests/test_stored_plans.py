"""A revisit's stored plans, tried as a hostile user would (the exported package in Node on Dawn, each visit a new
process: tests/stored_plans_probe.mjs). Every probe ends in a correct result, with a warning where the record was
at fault; none is silently wrong after Python is up, none breaks the signature for the next visit, none hangs,
and the store keeps what it held.

Two kinds of alteration: a plain edit (caught by the entry's digest before anything runs), and an edit whose
digest was recomputed, as someone who knows the format would (caught by the checks against the request and the
device, or, for what those cannot see, by Python's own plan once it is up: docs/reliability.md)."""
import copy
import hashlib
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from app.host.node import node_env

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "tests" / "stored_plans_probe.mjs"


def visit(kernel: Path, store: Path, mode: str = "file") -> dict:
    done = subprocess.run(["node", str(PROBE), str(kernel), str(store), mode], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=node_env())
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and rows, done.stderr[-3000:]
    return rows[-1]


def correct(result: dict, reference: dict) -> bool:
    return result["shape"] == reference["shape"] and np.allclose(result["y"], reference["y"], rtol=1e-4, atol=1e-4)


def digest(spec: dict) -> str:
    """The entry's digest as plan-store.mjs computes it: the sha-256 of JSON.stringify(spec)."""
    return hashlib.sha256(json.dumps(spec, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


@pytest.fixture(scope="module")
def planned(kernel, tmp_path_factory) -> tuple[dict, dict]:
    """A first visit's store file contents and its result."""
    store = tmp_path_factory.mktemp("first") / "plans.json"
    first = visit(kernel, store)
    assert not first["fromStore"] and correct(first["first"], first["reference"])
    return json.loads(store.read_text()), first


def the_entry(items: dict) -> tuple[str, dict]:
    (key, text), = items.items()
    record = json.loads(text)
    (context,) = record["adapters"].values()
    (entry,) = context["entries"].values()
    return key, record, entry


def altered(items: dict, change, recompute: bool) -> dict:
    items = copy.deepcopy(items)
    key, record, entry = the_entry(items)
    change(entry["spec"])
    if recompute:
        entry["digest"] = digest(entry["spec"])
    items[key] = json.dumps(record)
    return items


def wrong_uniform(spec):
    spec["passes"][0]["uniforms"][0] += 1


def unknown_binding(spec):
    spec["passes"][0]["bindings"][0] = "z_unknown"


def huge_grid(spec):
    spec["passes"][0]["workgroups"] = [1 << 20, 1, 1]


def huge_y(spec):
    spec["y_bytes"] = 1 << 40


def other_inputs(spec):
    spec["inputs"]["x"] = spec["inputs"]["x"] * 2


def wrong_shape(spec):
    spec["y_shape"][-1] += 1
    spec["y_bytes"] += spec["y_bytes"] // spec["y_shape"][-1]


def float16(spec):
    spec["dtype"] = "float16"


def other_variant(spec):
    spec["variant"] = "gather"


def doubled_y(spec, rekey=True):
    """Every store of y doubled (`y[i] = T(acc)` -> `y[i] = T(2.0 * acc)`): WGSL that compiles and is wrong; its
    pipeline key (template|sha-256 of the source) made to match, as someone who knows the format would."""
    for p in spec["passes"]:
        source, n = re.subn(r"(y\[[^\]]*\] = )T\((\w+)\);", r"\1T(2.0 * \2);", p["pipeline"]["source"])
        assert n, "the probe layer's shader stores y as `y[...] = T(acc);`"
        p["pipeline"]["source"] = source
        if rekey:
            template = p["pipeline"]["key"].split("|")[0]
            p["pipeline"]["key"] = f"{template}|{hashlib.sha256(source.encode()).hexdigest()}"


CHECKED = {"wgsl under its old pipeline key": lambda spec: doubled_y(spec, rekey=False),
           "an unknown binding": unknown_binding, "2^20 workgroups": huge_grid,
           "y_bytes 2^40": huge_y, "another signature's input sizes": other_inputs, "y_shape": wrong_shape,
           "dtype": float16}


@pytest.mark.parametrize("name", [*CHECKED, "uniforms", "variant"])
def test_a_plainly_altered_entry_fails_its_digest_and_the_call_is_planned_afresh(kernel, planned, tmp_path, name):
    items, first = planned
    store = tmp_path / "plans.json"
    change = CHECKED.get(name) or {"uniforms": wrong_uniform, "variant": other_variant}[name]
    store.write_text(json.dumps(altered(items, change, recompute=False)))
    got = visit(kernel, store)
    assert not got["fromStore"] and correct(got["first"], got["reference"]) and correct(got["after"], got["reference"])
    assert got["first"]["variant"] == first["first"]["variant"]
    assert any("its digest does not match" in w for w in got["warnings"]), got["warnings"]
    # the next visit runs from the store again: the package's own entry replaced the altered one
    again = visit(kernel, store)
    assert again["fromStore"] and correct(again["first"], again["reference"]) and not again["warnings"]


@pytest.mark.parametrize("name", list(CHECKED))
def test_an_entry_altered_with_its_digest_recomputed_fails_the_checks_before_it_runs(kernel, planned, tmp_path, name):
    items, _ = planned
    store = tmp_path / "plans.json"
    store.write_text(json.dumps(altered(items, CHECKED[name], recompute=True)))
    got = visit(kernel, store)
    assert correct(got["first"], got["reference"]) and correct(got["after"], got["reference"])
    assert any("a stored plan" in w and "dropped" in w for w in got["warnings"]), got["warnings"]
    again = visit(kernel, store)
    assert again["fromStore"] and correct(again["first"], again["reference"]) and not again["warnings"]


@pytest.mark.parametrize("change, name", [(doubled_y, "wgsl"), (wrong_uniform, "uniforms")], ids=["wgsl", "uniforms"])
def test_an_entry_altered_past_the_checks_is_replaced_once_python_has_planned_it(kernel, planned, tmp_path, change, name):
    """What no check before Python can see (the shader's arithmetic, a uniform's meaning), with its digest recomputed
    by someone who can also run script in the origin: the calls before Python is up run it (the WGSL one gives twice
    y), then Python's plan differs, the entry is replaced, and every later call and visit is correct."""
    items, _ = planned
    store = tmp_path / "plans.json"
    store.write_text(json.dumps(altered(items, change, recompute=True)))
    got = visit(kernel, store)
    assert got["fromStore"] and correct(got["after"], got["reference"])
    if name == "wgsl":
        assert correct({**got["first"], "y": [v / 2 for v in got["first"]["y"]]}, got["reference"])
    assert any("differs from the package's own plan" in w for w in got["warnings"]), got["warnings"]
    again = visit(kernel, store)
    assert again["fromStore"] and correct(again["first"], again["reference"]) and not again["warnings"]
    _, _, entry = the_entry(json.loads(store.read_text()))
    _, _, original = the_entry(items)
    # a starter beside the plan is made by a visit's timing (tests/test_starter.py): the plan itself is the original
    assert entry["spec"] == original["spec"] and entry["digest"] == original["digest"]


@pytest.mark.parametrize("content", [
    lambda record: record | {"adapters": None},
    lambda record: record | {"adapters": {k: {**c, "entries": None} for k, c in record["adapters"].items()}},
    lambda record: record | {"adapters": {k: None for k in record["adapters"]}},
    lambda record: record | {"device": None},
    lambda record: record | {"dtypes": ["float64"]},
], ids=["adapters null", "entries null", "context null", "device null", "stored dtypes float64"])
def test_a_record_of_the_wrong_shape_never_breaks_getkernel_or_the_call(kernel, planned, tmp_path, content):
    items, _ = planned
    key, record, _ = the_entry(items)
    store = tmp_path / "plans.json"
    store.write_text(json.dumps({key: json.dumps(content(record))}))
    got = visit(kernel, store)
    assert correct(got["first"], got["reference"]) and correct(got["after"], got["reference"])
    again = visit(kernel, store)
    assert again["fromStore"] and correct(again["first"], again["reference"]), again["warnings"]


@pytest.mark.parametrize("content", ['{"plans|x": "{}", "trunc', "[]", "null", '{"a": 5}'])
def test_a_foreign_or_truncated_plan_file_is_set_aside_never_lost(kernel, tmp_path, content):
    store = tmp_path / "plans.json"
    store.write_text(content)
    got = visit(kernel, store)
    assert correct(got["first"], got["reference"])
    assert any("set aside as" in w for w in got["warnings"]), got["warnings"]
    aside = [p for p in tmp_path.iterdir() if ".foreign-" in p.name]
    assert len(aside) == 1 and aside[0].read_text() == content
    again = visit(kernel, store)
    assert again["fromStore"] and not again["warnings"]


def test_a_planstore_that_never_answers_costs_one_time_limit_and_a_warning(kernel, tmp_path):
    got = visit(kernel, tmp_path / "unused.json", "hanging")
    assert correct(got["first"], got["reference"]) and correct(got["after"], got["reference"])
    assert got["firstMs"] < 30000, got["firstMs"]
    assert any("getKernel's planStore (Hanging): its get gave no answer" in w for w in got["warnings"]), got["warnings"]


TWO_KERNELS = """
import { pathToFileURL } from "node:url";
import { create, globals } from "webgpu";
const [kernelDir, store] = process.argv.slice(1);
process.env.CONVTRANSPOSE_PLANS = store;
Object.assign(globalThis, globals);
globalThis.navigator = { gpu: create([]) };
const m = await import(pathToFileURL(`${kernelDir}/web/runtime/node.mjs`).href);
const a = await m.getKernel("webgpu-kernels/ai.onnx.ConvTranspose"), b = await m.getKernel("webgpu-kernels/ai.onnx.ConvTranspose");
const t = (n, c) => ({ data: new Float32Array(n * c * 9).fill(0.5), shape: [n, c, 3, 3] });
await a({ x: t(1, 2), w: t(2, 2) });
await b({ x: t(1, 3), w: t(3, 1) });
await a({ x: t(2, 2), w: t(2, 2), strides: [2, 2] });
await Promise.all([a.idle(), b.idle()]);  // exiting under a compile crashes Dawn (docs/npm.md#node)
process.exit(0);
"""


def test_two_kernels_in_one_process_keep_every_signature(kernel, tmp_path):
    store = tmp_path / "plans.json"
    done = subprocess.run(["node", "--input-type=module", "-e", TWO_KERNELS, str(kernel), str(store)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=node_env())
    assert done.returncode == 0, done.stderr[-2000:]
    (text,) = json.loads(store.read_text()).values()
    (context,) = json.loads(text)["adapters"].values()
    assert len(context["entries"]) == 3, list(context["entries"])


OUTPUT_SHAPES = """
import { outputShape } from "%s";
const requests = JSON.parse(process.argv[1]);
console.log(JSON.stringify(requests.map((r) => outputShape(r.x, r.w, r.attributes))));
""" % (ROOT / "web" / "runtime" / "output-shape.mjs").as_uri()


def test_the_js_output_shape_is_pythons_on_the_fuzzers_requests():
    import numpy as np

    from app.fuzz import random_request

    rng = np.random.default_rng(2026)
    cases = []
    for _ in range(300):
        r = random_request(rng)
        cases.append(({"x": list(r["x"].shape), "w": list(r["w"].shape), "attributes": r["attributes"]},
                      list(r["geom"].y_shape)))
    done = subprocess.run(["node", "--input-type=module", "-e", OUTPUT_SHAPES, json.dumps([c for c, _ in cases])],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [want for _, want in cases]
