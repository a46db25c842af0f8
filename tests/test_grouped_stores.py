"""The grouped stride-phase kernel's store width in CPython: one 16-byte store per output row on GPUs (a
vec4 of f32, or eight float16 outputs packed into a vec4<u32>), narrower where the row is not a multiple
of the width, about 32 outputs per invocation through stride cells of the next-to-last axis, blocks of
output channels per invocation (checked against the reference on SwiftShader), and refusals that say why."""
import json

import pytest

from app.planner import plan
from app.render import render
from app.shapes import infer
from app.variants import grouped
from tests.test_gpu_caps import h200_caps

DEPTHWISE = ((1, 256, 128, 128), (256, 1, 4, 4), {"group": 256, "strides": [2, 2], "pads": [1, 1, 1, 1]})
GROUPED = ((1, 256, 32, 32), (256, 32, 4, 4), {"group": 8, "strides": [2, 2], "pads": [1, 1, 1, 1]})


def geometry(case, dtype, bias=True):
    x, w, attrs = case
    m = w[1] * attrs["group"]
    return infer(x, w, [m] if bias else None, attrs, {"x": dtype, "w": dtype} | ({"b": dtype} if bias else {}))


@pytest.mark.parametrize("case, dtype, want", [
    (DEPTHWISE, "float32", (4, 4, 4, 1)), (DEPTHWISE, "float16", (8, 8, 2, 1)),
    (GROUPED, "float32", (4, 4, 1, 4)), (GROUPED, "float16", (4, 4, 1, 4)),
])
def test_gpus_store_16_bytes_per_row_over_32_outputs(case, dtype, want):
    launch = plan(geometry(case, dtype), h200_caps(), "nchw2d_grouped_stride_phase")
    assert (launch.tiles["vec"], launch.tiles["outs"], launch.tiles["cells"], launch.tiles["chans"]) == want


def test_float16_rows_are_packed_into_one_wide_store():
    launch = plan(geometry(DEPTHWISE, "float16"), h200_caps(), "nchw2d_grouped_stride_phase")
    (d,) = launch.dispatches
    source = render(d.template, d.render_params)
    assert "var<storage, read_write> y: array<vec4<u32>>;" in source
    assert source.count("pack2x16float(vec2<f32>(acc0 + bias0, acc1 + bias0))") == 1


def test_rows_not_a_multiple_of_eight_store_narrower():
    x, w, attrs = DEPTHWISE
    geom = geometry(((1, 256, 6, 6), w, attrs), "float16")  # 12 outputs per row
    assert grouped.resolved({"vec": 8, "outs": 8, "workgroup_size": 128, "cells": 1, "chans": 1, "xv": 0}, geom)[0] == 4


def test_eight_wide_stores_are_refused_for_float32():
    geom = geometry(DEPTHWISE, "float32")
    params = {"vec": 8, "outs": 8, "workgroup_size": 128, "cells": 1, "chans": 1, "xv": 0}
    reason = grouped.params_refusal(params, geom, h200_caps())
    assert "float16" in reason
    assert grouped.params_refusal(params, geometry(DEPTHWISE, "float16"), h200_caps()) is None


def test_software_adapters_keep_vec4_and_long_rows():
    caps = h200_caps(architecture="swiftshader", is_fallback=True)
    launch = plan(geometry(DEPTHWISE, "float32"), caps, "nchw2d_grouped_stride_phase")
    assert (launch.tiles["vec"], launch.tiles["outs"]) == (4, 16)


def test_cells_drop_where_the_body_would_not_fit():
    # A 10x10 kernel at stride 2: four cells of 2 rows x 4 outputs would keep 180 values live per invocation
    geom = infer((1, 8, 8, 8), (8, 1, 10, 10), attributes={"group": 8, "strides": [2, 2]})
    params = grouped.default_params(geom, h200_caps())
    assert (params["vec"], params["outs"], params["cells"]) == (4, 4, 2)
    assert "unrolled body" in grouped.params_refusal(params | {"cells": 4}, geom, h200_caps())


def test_one_dimension_has_no_cells_to_take():
    geom = infer((1, 8, 16), (8, 1, 4), attributes={"group": 8, "strides": [2]})
    assert grouped.default_params(geom, h200_caps())["cells"] == 1
    params = {"vec": 4, "outs": 4, "workgroup_size": 128, "cells": 2, "chans": 1, "xv": 0}
    assert "1D has none" in grouped.params_refusal(params, geom, h200_caps())


def test_output_channels_per_invocation_divide_the_group_and_fit_the_registers():
    geom = geometry(GROUPED, "float32")  # 32 output channels per group
    params = grouped.default_params(geom, h200_caps()) | {"chans": 2, "cells": 2}
    assert grouped.params_refusal(params, geom, h200_caps()) is None
    assert "does not divide the 1 output channels" in grouped.params_refusal(
        params, geometry(DEPTHWISE, "float32"), h200_caps())
    assert "unrolled body" in grouped.params_refusal(params | {"chans": 4, "cells": 4}, geom, h200_caps())
    launch = plan(geom, h200_caps(), "nchw2d_grouped_stride_phase", {"chans": 1, "cells": 2})
    forced = plan(geom, h200_caps(), "nchw2d_grouped_stride_phase", {"chans": 2, "cells": 2})
    # half the planes on the grid, each invocation storing two channels' rows
    assert forced.dispatches[0].workgroups[2] * 2 == launch.dispatches[0].workgroups[2]
    source = render(forced.dispatches[0].template, forced.dispatches[0].render_params)
    assert "let bias1 = f32(b[m + 1]);" in source and "(yr + y_chan) / 4" in source


# Grouped shapes of every rank with several output channels per group and even rows, with and without bias:
# every channel block, cell count and x read as scalars or vec2s must match the float64 reference.
CHANS_CASES = [
    ("g1d", [2, 8, 10], [8, 4, 4], True, {"group": 2, "strides": [2], "pads": [1, 1]}),
    ("g2d", [1, 8, 7, 6], [8, 4, 3, 3], False, {"group": 2, "strides": [2, 2], "pads": [1, 1, 1, 1],
                                                "output_padding": [1, 1]}),
    ("g3d", [1, 4, 3, 4, 6], [4, 4, 2, 3, 2], True, {"group": 2, "strides": [2, 3, 2], "dilations": [1, 2, 1]}),
]
VARIANT_OF = {1: "ncl1d_grouped_stride_phase", 2: "nchw2d_grouped_stride_phase", 3: "ncdhw3d_grouped_stride_phase"}


def test_forced_channel_blocks_match_the_reference_on_swiftshader(node_host):
    """The tuner checks every candidate of the grid against the float64 reference before timing it: none may be
    rejected, and every one is measured (none refused)."""
    fill = {"distribution": "uniform", "low": -1.0, "high": 1.0, "seed": 11}
    cases = [{"name": name, "tier": "t", "x": x, "w": w, "bias": bias, "attributes": attrs,
              "variant": VARIANT_OF[len(x) - 2]} for name, x, w, bias, attrs in CHANS_CASES]
    # four outputs per row, so that every block of four channels fits the registers
    grids = {v: {"chans": [1, 2, 4], "cells": [1] if v.startswith("ncl1d") else [1, 2], "outs": [4], "xv": [0, 1]}
             for v in VARIANT_OF.values()}
    doc = {"fill": fill, "cases": cases, "tuning": {"grids": grids}}
    table = node_host.py("tune", json.dumps(doc), "t", None, 1)["table"]
    assert table["rejected"] == []
    measured = {m["case"]: {(p["chans"], p["cells"], p["xv"]) for p in map(json.loads, m["medians"]) if p["outs"] == 4}
                for m in table["measured"]}
    # the tuner names a measured layer tier/case/dtype
    assert measured == {"t/g1d/float32": {(c, 1, v) for c in (1, 2, 4) for v in (0, 1)},
                        "t/g2d/float32": {(c, n, v) for c in (1, 2, 4) for n in (1, 2) for v in (0, 1)},
                        # four channels of two cells of 2 x 6 rows would keep 192 accumulators: refused
                        "t/g3d/float32": {(c, n, v) for c in (1, 2, 4) for n in (1, 2) for v in (0, 1)
                                          if (c, n) != (4, 2)}}


def test_x_reads_as_vectors_where_every_chunk_starts_on_one():
    caps = h200_caps()
    dw16 = plan(geometry(DEPTHWISE, "float16"), caps, "nchw2d_grouped_stride_phase")
    assert dw16.tiles["xv"] == 4  # 8 outputs per row at stride 2: 4 inputs, read as one vec4 of halves
    source = render(dw16.dispatches[0].template, dw16.dispatches[0].render_params)
    assert "var<storage, read> x: array<vec4<T>>;" in source and "let xs0 = f32(xq0.w);" in source
    # a row of odd length does not start every row on a vector: scalar reads, and forcing vectors is refused
    x, w, attrs = DEPTHWISE
    odd = geometry(((1, 256, 9, 9), w, attrs), "float32")
    params = grouped.default_params(odd, caps)
    assert params["xv"] == 0
    assert "must start every chunk and row" in grouped.params_refusal(params | {"xv": 1}, odd, caps)
    # pads of 2 at stride 2 start chunk 0 one input in, off a vec2
    shifted = geometry(((1, 256, 8, 8), w, attrs | {"pads": [2, 2, 2, 2]}), "float32")
    assert grouped.default_params(shifted, caps)["xv"] == 0
