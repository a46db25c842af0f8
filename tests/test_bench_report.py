"""The bench report's CPython parts: ratios against the faster ORT build per metric, refusals, geometric
means, the table, the chart, and the bench options that do not go together."""
import math
import runpy

import pytest

from app.host import bench_report


def ours(e2e=1.0, resident=0.5, gpu=0.2, host=0.05, into=0.8, **extra):
    return {"e2e_ms": e2e, "e2e_into_ms": into, "into_same_as_e2e": True, "resident_ms": resident, "gpu_ms": gpu,
            "host_ms": host, "variant": "nchw2d_phase_gemm_tiled", "max_abs_diff_reference": 1e-6} | extra


def ort(e2e=2.0, resident=1.0, gpu=0.4, into=1.6, same=True):
    return {"e2e_ms": e2e, "e2e_into_ms": into, "into_same_as_e2e": same, "resident_ms": resident, "gpu_ms": gpu,
            "max_abs_diff_ours": 1e-6}


REFUSED = {"error": "currently only support 2-dimensional conv"}


def row(case="dcgan", o=None, webgpu=None, jsep=None):
    return bench_report.combine({"case": case, "tier": "small", "ours": o or ours(),
                                 "ort": {"webgpu": webgpu or ort(), "jsep": jsep or ort()}})


def test_ratios_are_against_the_faster_build_per_metric():
    r = row(webgpu=ort(e2e=4.0, resident=1.0, gpu=0.8), jsep=ort(e2e=2.0, resident=2.0, gpu=0.4))
    assert r["ratios"] == pytest.approx({"e2e": 0.5, "e2e_into": 0.5, "resident": 0.5, "gpu": 0.5})
    assert r["ep_ratios"]["webgpu"] == pytest.approx({"e2e": 0.25, "e2e_into": 0.5, "resident": 0.5, "gpu": 0.25})


def test_an_ort_refusal_is_a_row_without_ratio_not_a_crash():
    r = row("conv3d", webgpu=REFUSED, jsep=REFUSED)
    assert r["ratios"] == {"e2e": None, "e2e_into": None, "resident": None, "gpu": None} and r["ep_ratios"] == {}
    line = bench_report.format_row(r)
    assert line.split()[0] == "conv3d" and " - " in line
    summary = bench_report.summary([r])
    assert any("jsep refused: currently only support 2-dimensional conv" in s for s in summary)
    assert "e2e: ORT ran no case" in summary


def test_one_build_refusing_leaves_the_other_as_the_peer():
    r = row(webgpu=ort(e2e=8.0), jsep=REFUSED)
    assert r["ratios"]["e2e"] == pytest.approx(0.125)


def test_e2e_into_whose_y_is_not_e2e_s_counts_for_nothing_and_is_named():
    """e2e_into times the same calls as e2e with y read into a reused array: a y that differs voids it."""
    r = row(webgpu=ort(into=0.5, same=False), jsep=ort(into=1.6))
    assert r["ratios"]["e2e_into"] == pytest.approx(0.5) and r["ep_ratios"]["webgpu"]["e2e_into"] is None
    assert "e2e_into void where its y differs from e2e's (the same calls, y read elsewhere): dcgan (webgpu)" \
        in bench_report.summary([r])
    mine = row(o=ours(into_same_as_e2e=False))
    assert mine["ratios"]["e2e_into"] is None and mine["ratios"]["e2e"] == pytest.approx(0.5)
    line = next(s for s in bench_report.summary([row()]) if s.startswith("e2e_into:"))
    assert "geometric mean ours/faster ORT 0.500 over 1 cases" in line


def test_geometric_mean():
    assert bench_report.geometric_mean([0.5, 2.0]) == pytest.approx(1.0)
    assert bench_report.geometric_mean([0.25, None, 4.0, 1.0]) == pytest.approx(1.0)
    assert bench_report.geometric_mean([None]) is None
    with pytest.raises(ValueError):
        bench_report.geometric_mean([1.0, 0.0])


def test_summary_counts_only_cases_ort_ran_and_the_slower_ones():
    rows = [row("a", o=ours(e2e=1.0), webgpu=ort(e2e=4.0), jsep=ort(e2e=4.0)),
            row("b", o=ours(e2e=3.0), webgpu=ort(e2e=2.0), jsep=ort(e2e=2.0)),
            row("c", webgpu=REFUSED, jsep=REFUSED)]
    e2e = next(s for s in bench_report.summary(rows) if s.startswith("e2e:"))
    assert f"{math.sqrt(0.25 * 1.5):.3f} over 2 cases" in e2e and "max 1.500, slower on 1" in e2e
    host = bench_report.summary(rows)[-1]
    assert host.startswith("host time of a repeat call") and "median 0.050 ms" in host


def test_summary_reports_two_same_signature_layers_in_turn_against_one_alone():
    rows = [row("a", o=dict(ours(e2e=2.0), in_turn_e2e_ms=2.2, weight_bytes_written_in_rounds=0), webgpu=ort(e2e=4.0),
                jsep=ort(e2e=4.0)),
            row("b", o=dict(ours(e2e=1.0), in_turn_e2e_ms=1.0, weight_bytes_written_in_rounds=64), webgpu=ort(e2e=2.0),
                jsep=ort(e2e=2.0))]
    turn = next(s for s in bench_report.summary(rows) if s.startswith("two same-signature layers"))
    assert f"geometric mean {math.sqrt(1.1):.3f}, max 1.100 over 2 cases" in turn
    assert turn.endswith("weight bytes written in the timed rounds: 64")


def test_row_formatting_lines_up_with_the_header():
    line = bench_report.format_row(row())
    assert line.split()[:2] == ["dcgan", "nchw2d_phase_gemm_tiled"]
    assert len(line) == len(bench_report.HEADER)


def test_chart_has_a_bar_per_measured_series_and_names_refusals():
    svg = bench_report.chart_svg([row(), row("conv3d", webgpu=REFUSED, jsep=REFUSED)], "title")
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert ">dcgan<" in svg and ">conv3d<" in svg and svg.count("refused") == 2


@pytest.mark.parametrize("kwargs, words", [
    ({"host": "node", "against": "ort", "plot": "x.png"}, "use --host browser"),
    ({"variants": "all", "against": "ort"}, "leave out --variants"),
    ({"variants": "all", "breakdown": True}, "leave out --variants"),
    ({"against": "ort", "breakdown": True}, "pick one"),
    ({"plot": "x.png"}, "add --against ort"),
])
def test_bench_options_that_do_not_go_together_are_refused_before_any_browser(kwargs, words):
    from app.host.bench_runner import main

    with pytest.raises(SystemExit, match=words):
        main(**kwargs)


def test_the_readme_table_has_a_row_per_case_and_the_geometric_means(tmp_path, capsys):
    import json
    import sys

    path = tmp_path / "rows.json"
    path.write_text(json.dumps([row("a", o=ours(e2e=1.0, resident=0.5), webgpu=ort(e2e=2.0, resident=1.0)),
                                row("conv3d", webgpu=REFUSED, jsep=REFUSED)]))
    sys.argv = ["ort_table.py", str(path)]
    runpy.run_path("tools/gpu/ort_table.py", run_name="__main__")
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "| `a` | 1.00 | 2.00 | 0.50 | 0.50 | 1.00 | 0.50 |"
    assert "refused (3D)" in lines[3] and lines[-1].endswith("**0.50** |")


def test_scaling_times_onnxruntime_web_only_up_to_its_bound():
    # its runs past 1e10 multiply-adds did not finish inside a device call (tools/gpu/scaling.py ORT_MAX_MADDS)
    scaling = runpy.run_path("tools/gpu/scaling.py")
    every, ort = scaling["cases"]()["cases"], scaling["cases"](ort=True)["cases"]
    bound = scaling["ORT_MAX_MADDS"]
    assert [c["name"] for c in ort] == [c["name"] for c in every if scaling["madds"](c) <= bound]
    assert {c["model"] for c in ort} == {c["model"] for c in every}  # both classes
    assert max(map(scaling["madds"], every)) > 10 * bound > 10 * max(map(scaling["madds"], ort))
