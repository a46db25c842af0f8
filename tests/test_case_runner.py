"""The case runner's command line in CPython, over a fake host: forced-variant lists, summaries, exit status."""
import contextlib

import pytest

from app.host import case_runner
from app.variants import VARIANTS


class FakeCases:
    def __init__(self, fail: set):
        self.fail, self.runs = fail, []

    def load(self, text):
        return ["a", "b"]

    def run(self, index, variant, params=None):
        self.runs.append((index, variant) if params is None else (index, variant, params))
        status = "FAIL" if (index, variant) in self.fail else "PASS"
        return {"name": "ab"[index], "status": status, "variant": variant or "chosen", "max_abs_err": 0.0}


@pytest.fixture
def fake(monkeypatch, tmp_path):
    def install(fail=()):
        cases = FakeCases(set(fail))
        monkeypatch.setattr(case_runner, "open_host", lambda host, browser="chromium": contextlib.nullcontext(cases))
        path = tmp_path / "cases.json"
        path.write_text('{"op": "ai.onnx.ConvTranspose", "version": 1, "cases": []}')
        return cases, str(path)

    return install


def test_planner_choice_by_default(fake, capsys):
    cases, path = fake()
    assert case_runner.main(path) == 0
    assert cases.runs == [(0, None), (1, None)]
    assert capsys.readouterr().out.splitlines()[-1] == "2 passed, 0 failed"


def test_a_list_forces_each_variant_in_one_host(fake, capsys):
    cases, path = fake(fail={(1, "nchw2d_gather")})
    assert case_runner.main(path, "ncl1d_gather,nchw2d_gather") == 1
    out = capsys.readouterr().out.splitlines()
    assert "variant ncl1d_gather: 2 passed, 0 failed" in out
    assert "variant nchw2d_gather: 1 passed, 1 failed" in out
    assert out[-1] == "3 passed, 1 failed"


def test_all_means_every_variant(fake):
    cases, path = fake()
    assert case_runner.main(path, "all") == 0
    assert [v for i, v in cases.runs if i == 0] == list(VARIANTS)


def test_params_go_with_the_forced_variant_to_every_case(fake):
    cases, path = fake()
    assert case_runner.main(path, "phase_gemm", params={"rv": 1}) == 0
    assert cases.runs == [(0, "phase_gemm", {"rv": 1}), (1, "phase_gemm", {"rv": 1})]
