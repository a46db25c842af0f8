import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.browser_session import app_url, node_host, page  # noqa: E402,F401  (session fixtures for browser tests)
from app.host.child import NODE_FLAGS_ENV  # noqa: E402

# Node 20's V8 compiles onnxruntime-web's wasm (both builds) with TurboFan in the background once a host has run
# it: two cores busy for a minute and more after each `compare` (measured: 107 s of CPU in 60 s idle), work
# that no test waits for and that the other tests pay for. Liftoff-only (wasm's baseline compiler; same
# semantics) costs nothing there: 150 test.json cases took the same time, `compare` 1.9 s instead of 3.9 s.
# Set for every Node child a test starts, the command lines' hosts included (they inherit the environment);
# the GPU machine's benchmarks keep V8's defaults.
os.environ.setdefault(NODE_FLAGS_ENV, "--liftoff-only")

# tools/test.sh runs the suite in two pytest workers (`-n 2 --dist loadfile`, pytest-xdist), refined here:
# - each file runs whole in one worker (its module fixtures, a Firefox page or a wheel's virtual environment,
#   are made once), and the files below that write into the checkout or copy it share one worker, one after
#   the other: test_server.py links out of web/ and build/pyodide/ for a moment, test_wheel.py and
#   test_pack.py copy the tree; and test_browser_variants.py and test_browser_cases.py share one worker's
#   page, whose pipelines the first compiles for both (test.json's planner choices are among the forced
#   variants': 147 SwiftShader pipelines not compiled twice, 214 -> 161 s for the two files);
# - the slowest files go out first (xdist would order them by test count), so that neither worker is left
#   with a long file at the end (docs/testing.md has the figures).
# What a test writes elsewhere is its own already: tmp_path is per worker, each Node host boots from an
# assets folder of its own (app/host/node.py), every server listens on a free port.
SAME_WORKER = {"tests/test_server.py": "the checkout", "tests/test_wheel.py": "the checkout",
               "tests/test_pack.py": "the checkout", "tests/test_browser_variants.py": "the page's pipelines",
               "tests/test_browser_cases.py": "the page's pipelines"}
SLOWEST_FIRST = [
    "tests/test_wgsl_compilers.py", "tests/test_tuning_candidates.py", "tests/test_browser_variants.py",
    "tests/test_firefox.py", "tests/test_node_host.py", "tests/test_phase_gemm_cl.py", "tests/test_model.py",
    "tests/test_browser_reliability.py", "tests/test_browser_cases.py", "tests/test_ort_bench.py", "tests/test_wheel.py",
    "tests/test_server.py", "tests/test_pack.py", "tests/test_npm_package.py", "tests/test_export.py", "tests/test_fuzz.py",
    "tests/test_phase_gemm.py", "tests/test_web_bench.py", "tests/test_browser_api.py", "tests/test_readme.py",
    "tests/test_grouped_stores.py", "tests/test_autotune.py", "tests/test_web_no_webgpu.py", "tests/test_web_run.py",
]


def pytest_addoption(parser):
    parser.addoption("--fuzz-long", type=int, default=int(os.environ.get("FUZZ_LONG", "0")),
                     metavar="N", help="also run the long differential-fuzz tier of N cases (env FUZZ_LONG)")


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(config, items):
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker's collection is the order its files are handed out in
        rank = {path: i for i, path in enumerate(SLOWEST_FIRST)}
        items.sort(key=lambda item: rank.get(_file(item.nodeid), len(rank)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FilesInGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return SAME_WORKER.get(_file(nodeid), _file(nodeid))

    config.option.loadscopereorder = False  # hand the files out in the collection's order: slowest first
    return FilesInGroups(config, log)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory) -> Path:
    """The package exported (`python -m app export`) once per test module that runs it in Node or a page: each
    module's visits and stores stay its own."""
    from app.host.export import export

    folder = tmp_path_factory.mktemp("kernel") / "kernel"
    export(folder)
    return folder
