"""The bench report's CPython parts: like-for-like ratios, refusal rows, the geometric mean, the table, the chart."""
import math

import pytest

from app.host import bench_report

OURS = {"case": "dcgan", "tier": "small", "variant": "nchw2d_phase_gemm_tiled", "flop": 2_000_000,
        "median_ms": 2.0, "min_ms": 1.9, "source": "timestamp-query", "wall_median_ms": 10.0, "wall_min_ms": 9.0,
        "gflops": 1.0, "max_abs_diff_reference": 1e-6, "y": b"\0" * 8, "inputs": {"x": b""}}


def ort(median, source="timestamp-query", wall=20.0, **extra):
    return {"impl": "onnxruntime-web 1.30.0", "median_ms": median, "min_ms": median, "source": source,
            "wall_median_ms": wall, "wall_min_ms": wall} | extra


REFUSED = {"impl": "onnxruntime-web 1.30.0 jsep", "source": "none", "error": "currently only support 2-dimensional conv"}


def test_ratios_compare_gpu_with_gpu_and_wall_with_wall():
    assert bench_report.compare(OURS, ort(8.0)) == {"ratio": 0.25, "method": "gpu"}
    assert bench_report.compare(OURS, ort(40.0, source="wall", wall=40.0)) == {"ratio": 0.25, "method": "wall"}
    wall_only_ours = OURS | {"source": "wall", "median_ms": 10.0}
    assert bench_report.compare(wall_only_ours, ort(8.0, wall=5.0)) == {"ratio": 2.0, "method": "wall"}


def test_the_headline_ratio_is_against_the_faster_ep():
    row = bench_report.combine(OURS, {"webgpu": ort(8.0), "jsep": ort(4.0)}, {"webgpu": 1e-6, "jsep": 2e-6})
    assert row["ratio_vs_faster"] == pytest.approx(0.5)
    assert "y" not in row and "inputs" not in row and row["ort"]["jsep"]["max_abs_diff"] == 2e-6
    # The lead joins these rows with torch timings: the keys must stay.
    assert {"case", "variant", "median_ms", "gflops", "flop"} <= set(row)


def test_an_ort_refusal_is_a_row_without_ratio_not_a_crash():
    row = bench_report.combine(OURS, {"webgpu": REFUSED | {"ep": "webgpu"}, "jsep": REFUSED}, {})
    assert row["ratio_vs_faster"] is None and row["ratios"] == {"webgpu": None, "jsep": None}
    line = bench_report.format_row(row)
    assert line.count("refused") == 2 and line.rstrip().endswith("-")
    summary = bench_report.summary([row])
    assert any("jsep refused: currently only support 2-dimensional conv" in s for s in summary)
    assert summary[-1].endswith("- (ORT ran no case)")


def test_one_ep_refusing_leaves_the_other_as_the_headline():
    row = bench_report.combine(OURS, {"webgpu": ort(8.0), "jsep": REFUSED}, {"webgpu": 0.0})
    assert row["ratio_vs_faster"] == pytest.approx(0.25)


def test_geometric_mean():
    assert bench_report.geometric_mean([0.5, 2.0]) == pytest.approx(1.0)
    assert bench_report.geometric_mean([0.1, 0.1, 0.1]) == pytest.approx(0.1)
    assert bench_report.geometric_mean([0.25, None, 4.0, 1.0]) == pytest.approx(1.0)
    assert bench_report.geometric_mean([None]) is None
    with pytest.raises(ValueError):
        bench_report.geometric_mean([1.0, 0.0])


def test_summary_counts_only_cases_ort_ran():
    rows = [bench_report.combine(OURS, {"webgpu": ort(8.0), "jsep": ort(8.0)}, {}),
            bench_report.combine(OURS | {"case": "c2"}, {"webgpu": ort(2.0), "jsep": ort(2.0)}, {}),
            bench_report.combine(OURS | {"case": "c3"}, {"webgpu": REFUSED, "jsep": REFUSED}, {})]
    last = bench_report.summary(rows)[-1]
    assert "2 of 3 cases" in last and f"{math.sqrt(0.25 * 1.0):.3f}" in last and "speed-up 2.00x" in last


def test_row_formatting_lines_up_with_the_header():
    row = bench_report.combine(OURS, {"webgpu": ort(8.0, source="wall", wall=8.0), "jsep": ort(4.0)},
                               {"webgpu": 1.5e-5, "jsep": 0.0})
    line = bench_report.format_row(row)
    assert line.split()[:2] == ["dcgan", "nchw2d_phase_gemm_tiled"]
    assert "8.00 wall  1.5e-05" in line and "4.00 gpu   0.0e+00" in line
    assert len(line) == len(bench_report.HEADER)


def test_chart_has_a_bar_per_measured_series_and_names_refusals():
    rows = [bench_report.combine(OURS, {"webgpu": ort(8.0), "jsep": ort(4.0)}, {}),
            bench_report.combine(OURS | {"case": "conv3d"}, {"webgpu": REFUSED, "jsep": REFUSED}, {})]
    svg = bench_report.chart_svg(rows, "title")
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert ">dcgan<" in svg and ">conv3d<" in svg and svg.count("refused") == 2


@pytest.mark.parametrize("kwargs, words", [
    ({"host": "node", "against": "ort"}, "use --host browser"),
    ({"variants": "all", "against": "ort"}, "leave out --variants"),
    ({"plot": "x.png"}, "add --against ort"),
])
def test_bench_options_that_do_not_go_together_are_refused_before_any_browser(kwargs, words):
    from app.host.bench_runner import main

    with pytest.raises(SystemExit, match=words):
        main(**kwargs)
