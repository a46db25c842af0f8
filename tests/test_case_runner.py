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


# -- Hostile case files and hosts: every case a line, the summary always

def test_a_file_nested_100000_deep_is_refused_in_one_line_with_the_summary(fake, tmp_path, capsys):
    fake()
    path = tmp_path / "deep.json"
    path.write_text('{"cases": [' + "[" * 100_000 + "]" * 100_000 + "]}")
    assert case_runner.main(str(path)) == 2
    out = capsys.readouterr()
    assert out.err.strip() == f"{path}: nested 100002 brackets deep, past the limit of 64"
    assert out.out.splitlines() == ["0 passed, 0 failed"]


def _limited_run(path: str, timeout: int = 60):
    """The runner on `path` in a child with 1.5 GB of address space and a time limit: an unbounded read fails
    the test in seconds instead of filling the machine's memory or hanging it."""
    import resource
    import subprocess
    import sys

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))

    script = "import sys; from app.host import case_runner; sys.exit(case_runner.main(sys.argv[1]))"
    return subprocess.run([sys.executable, "-c", script, path], capture_output=True, text=True, timeout=timeout,
                          preexec_fn=limit, cwd=case_runner.__file__.rsplit("/app/", 1)[0])


def test_a_fifo_is_refused_without_opening_it(tmp_path):
    import os

    fifo = tmp_path / "cases.json"
    os.mkfifo(fifo)  # no writer: an open or a read would block
    out = _limited_run(str(fifo))
    assert out.returncode == 2 and out.stderr.strip() == f"{fifo}: not a regular file (a FIFO)", out.stderr
    assert out.stdout.splitlines() == ["0 passed, 0 failed"]


def test_a_device_is_refused_without_reading_it():
    out = _limited_run("/dev/zero")  # its size says 0; read whole it never ends
    assert out.returncode == 2 and out.stderr.strip() == "/dev/zero: not a regular file (a character device)", out.stderr
    assert out.stdout.splitlines() == ["0 passed, 0 failed"]


def test_a_file_past_the_budget_is_refused_before_it_is_read(fake, tmp_path, capsys, monkeypatch):
    fake()
    monkeypatch.setattr(case_runner, "CASE_FILE_BUDGET", 10)
    path = tmp_path / "big.json"
    path.write_text('{"cases": []}')
    assert case_runner.main(str(path)) == 2
    out = capsys.readouterr()
    assert "the file is 13 bytes, past the budget of 10" in out.err and out.out.splitlines() == ["0 passed, 0 failed"]


def test_a_case_the_host_raises_on_is_its_fail_line_and_the_run_goes_on(fake, capsys):
    cases, path = fake()

    def run(index, variant, params=None):
        if index == 0:
            raise RuntimeError("Page.evaluate: PythonError: Traceback (most recent call last):\n  File ...")
        return {"name": "b", "status": "PASS", "variant": "chosen", "max_abs_err": 0.0}

    cases.run = run
    assert case_runner.main(path) == 1
    assert capsys.readouterr().out.splitlines() == [
        "FAIL a [-] the host failed: Page.evaluate: PythonError: Traceback (most recent call last):",
        "PASS b [chosen] max_abs_err=0", "1 passed, 1 failed"]


def test_the_summary_comes_when_the_host_itself_fails(fake, capsys, monkeypatch):
    cases, path = fake()

    def run(index, variant, params=None):
        raise KeyboardInterrupt  # not a case's fault: it stops the run, the summary still comes

    cases.run = run
    with pytest.raises(KeyboardInterrupt):
        case_runner.main(path)
    assert capsys.readouterr().out.splitlines() == ["0 passed, 0 failed"]


def test_names_and_reasons_from_the_file_are_printed_escaped(fake, capsys):
    cases, path = fake()
    name = "red\x1b[31mALERT\x1b[0m\rover\nline\u202e"
    cases.run = lambda index, variant, params=None: {
        "name": name, "status": "FAIL", "variant": "chosen", "max_abs_err": None, "detail": "bad \x07\ndata"}
    case_runner.main(path)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == r"FAIL red\x1b[31mALERT\x1b[0m\rover\nline\u202e [chosen] bad \x07\ndata"
    assert lines[1] == lines[0] and lines[2:] == ["0 passed, 2 failed"]
