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
