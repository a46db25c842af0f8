"""The Node host (Dawn's WebGPU, SwiftShader here): same boot module, same cases, same results as the page."""
import json

import pytest

from app.host.case_runner import NodeCases, run_cases
from tests.browser_session import assert_passed_or_gated
from tools.wgsl import credited

TEST_JSON = credited.TEST_JSON
CASE_NAMES = [case["name"] for case in json.loads(TEST_JSON.read_text())["cases"]]


@pytest.fixture(scope="module")
def node(node_host):
    return node_host


@pytest.fixture(scope="module")
def run(node):
    """test.json's results, and the sha256 of every shader the run compiled (on Node's SwiftShader)."""
    node.py("record_compiles")
    results = {r["name"]: r for r in run_cases(NodeCases(node), TEST_JSON.read_text())}
    return results, set(node.py("recorded_compiles"))


@pytest.fixture(scope="module")
def results(run):
    return run[0]


def test_node_host_has_a_webgpu_adapter(node):
    device = node.py("report_device")
    assert device["features"] is not None and device["limits"]["maxComputeWorkgroupsPerDimension"] >= 65535


@pytest.mark.parametrize("name", CASE_NAMES)
def test_case_in_node(results, name):
    result = results[name]
    assert_passed_or_gated(result)


def test_compiles_every_shader_the_swiftshader_pass_leaves_to_it(run):
    """The SwiftShader back-end pass of tests/test_wgsl_compilers.py does not compile what this run compiles on
    the same Dawn (tools/wgsl/credited.py): the run must compile every shader it is credited with."""
    missing = credited.uncompiled(credited.case_file(credited.NODE_SWIFTSHADER), run[1])
    assert not missing, f"{len(missing)} credited shader(s) not compiled, e.g. {sorted(missing)[:3]}"


def test_node_host_compares_with_both_ort_builds_and_breaks_a_call_down(node):
    """The GPU machine's path (bench --host node --against ort / --breakdown) on one small case here."""
    case = {"name": "tiny", "tier": "test", "x": [1, 4, 5, 5], "w": [4, 3, 3, 3], "bias": True,
            "attributes": {"strides": [2, 2]}, "dtype": "float32",
            "fill": {"distribution": "uniform", "low": -1.0, "high": 1.0, "seed": 0}}
    row = node.call("compare", case, {"runs": 1, "warmup": 0})
    assert row["ours"]["max_abs_diff_reference"] < 1e-5
    assert all(row["ort"][ep]["max_abs_diff_ours"] < 1e-5 for ep in ("webgpu", "jsep")), row["ort"]
    parts = node.call("breakdown", case, {"runs": 2})
    assert parts["first_call"]["python"]["plan_render_compile_ms"] > 0
    assert "python" not in parts["repeat_cpu"] and parts["repeat_resident"]["total"] > 0


def test_bench_against_ort_and_breakdown_command_lines_on_the_node_host(tmp_path):
    """The README's two H200 commands, run here on one small case (`--bench` picks the file)."""
    import subprocess
    import sys

    bench_file = tmp_path / "bench.json"
    doc = json.loads((TEST_JSON.parent / "bench.json").read_text())
    doc["cases"] = [dict(c, tier="full") for c in doc["cases"] if c["name"] == "tiny_k3s2"]
    bench_file.write_text(json.dumps(doc))
    base = [sys.executable, "-m", "app", "bench", "--tier", "full", "--host", "node", "--bench", str(bench_file)]
    ort = subprocess.run(base + ["--against", "ort", "--runs", "2", "--warmup", "1"], capture_output=True, text=True,
                         timeout=600, cwd=TEST_JSON.parent)
    assert ort.returncode == 0, ort.stderr[-2000:]
    assert "tiny_k3s2" in ort.stdout and "e2e: geometric mean ours/faster ORT" in ort.stdout, ort.stdout
    parts = subprocess.run(base + ["--breakdown", "--runs", "3"], capture_output=True, text=True, timeout=600,
                           cwd=TEST_JSON.parent)
    assert parts.returncode == 0, parts.stderr[-2000:]
    assert "repeat_resident" in parts.stdout and "first call in Python" in parts.stdout, parts.stdout
