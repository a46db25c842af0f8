"""The Node host (Dawn's WebGPU, SwiftShader here): same boot module, same cases, same results as the page."""
import json
from pathlib import Path

import pytest

from app.host.case_runner import NodeCases, run_cases
from app.host.node import NodeHost
from tests.browser_session import assert_passed_or_gated

TEST_JSON = Path(__file__).resolve().parent.parent / "test.json"
CASE_NAMES = [case["name"] for case in json.loads(TEST_JSON.read_text())["cases"]]


@pytest.fixture(scope="module")
def node():
    with NodeHost() as host:
        yield host


@pytest.fixture(scope="module")
def results(node):
    return {r["name"]: r for r in run_cases(NodeCases(node), TEST_JSON.read_text())}


def test_node_host_has_a_webgpu_adapter(node):
    device = node.py("report_device")
    assert device["features"] is not None and device["limits"]["maxComputeWorkgroupsPerDimension"] >= 65535


@pytest.mark.parametrize("name", CASE_NAMES)
def test_case_in_node(results, name):
    result = results[name]
    assert_passed_or_gated(result)


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
