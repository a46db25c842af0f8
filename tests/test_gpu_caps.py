"""What a real GPU reports, as data: subgroup-matrix configurations and which variants they enable.

The configurations are the ones Dawn reported on the NVIDIA H200 (docs/h200/device.json): f16 and
8-bit integer matrices only, so the f32 subgroup-matrix paths must refuse there and the f16 ones pick
f16 components with f32 results."""
import json
from pathlib import Path

import pytest

from app.caps import DeviceCaps, matrix_configs
from app.errors import ConvTransposeError
from app.planner import plan
from app.shapes import infer

H200 = json.loads((Path(__file__).resolve().parents[1] / "docs" / "h200" / "device.json").read_text())
SGMAT = ("chromium-experimental-subgroup-matrix", "subgroups", "shader-f16")


def h200_caps(**changes) -> DeviceCaps:
    fields = dict(features=frozenset(H200["features"]), limits=H200["limits"],
                  subgroup_min_size=H200["subgroup_sizes"][0], subgroup_max_size=H200["subgroup_sizes"][1],
                  subgroup_matrix_configs=matrix_configs(H200["subgroup_matrix_configs"]))
    return DeviceCaps(**(fields | changes))


class JsLike:
    """A GPUSubgroupMatrixConfig as Pyodide shows it: attributes, not keys."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


def test_matrix_configs_reads_js_objects_and_dicts_alike():
    record = {"componentType": "f16", "resultComponentType": "f32", "M": 16, "N": 8, "K": 16}
    assert matrix_configs([JsLike(**record)]) == matrix_configs([record]) == (record,)
    assert matrix_configs(None) == ()


def test_the_h200_reports_no_f32_matrices():
    assert set(SGMAT) <= set(H200["features"])
    assert {c["componentType"] for c in H200["subgroup_matrix_configs"]} == {"f16", "u8", "i8"}


@pytest.mark.parametrize("variant, x, w", [
    ("ncdhw3d_implicit_sgmat", (1, 16, 4, 4, 4), (16, 16, 3, 3, 3)),
    ("conv1x1_sgmat", (1, 32, 8, 8), (32, 32, 1, 1)),
])
def test_float16_takes_f16_components_with_f32_results(variant, x, w):
    geom = infer(x, w, None, {}, {"x": "float16", "w": "float16"})
    params = plan(geom, h200_caps(), variant).dispatches[-1].params
    assert params["comp"] == "f16"
    assert (params["sm"], params["sn"], params["sk"]) == (16, 16, 16)  # the largest f16 -> f32 shape
    assert params["subgroup_size"] == 32


@pytest.mark.parametrize("variant, x, w", [
    ("ncdhw3d_implicit_sgmat", (1, 16, 4, 4, 4), (16, 16, 3, 3, 3)),
    ("conv1x1_sgmat", (1, 32, 8, 8), (32, 32, 1, 1)),
])
def test_float32_refuses_without_f32_matrices(variant, x, w):
    # f16 components would round every f32 input to 11 bits: not a float32 result.
    with pytest.raises(ConvTransposeError, match="f32 components"):
        plan(infer(x, w), h200_caps(), variant)


def test_without_the_feature_no_configuration_counts():
    caps = h200_caps(features=frozenset({"subgroups", "shader-f16"}))
    geom = infer((1, 32, 8, 8), (32, 32, 1, 1), None, {}, {"x": "float16", "w": "float16"})
    with pytest.raises(ConvTransposeError, match="chromium-experimental-subgroup-matrix"):
        plan(geom, caps, "conv1x1_sgmat")
