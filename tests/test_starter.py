"""A revisit's starter (web/runtime/kernel.mjs): where a signature's plan compiled slowly on a first visit, the
rank's general gather kernel (app/planner.py starter) is stored beside it, and a revisit runs its first calls on it
while the plan compiles. Node on Dawn/SwiftShader, each visit a new process (tests/starter_probe.mjs)."""
import json
import subprocess
from pathlib import Path

import pytest

from app import planner
from app.caps import DeviceCaps
from app.host.node import node_env
from app.shapes import infer
from app.variants import gather
from tests.test_stored_plans import digest, wrong_uniform

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "tests" / "starter_probe.mjs"
STARTER_REASON = "the quick first kernel"


def visit(kernel: Path, store: Path, mode: str, adapt: bool = True) -> dict:
    done = subprocess.run(["node", str(PROBE), str(kernel), str(store), mode, str(adapt).lower()], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=node_env())
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and rows, done.stderr[-3000:]
    return rows[-1]


# float32 through either kernel's rounding, against the float64 reference: 32 x 16 taps summed, relative to y's
# largest value (tests/test_stored_plans.py allows 1e-4 on such layers)
TOLERANCE = 1e-4


def edited(store: Path, tmp_path: Path, change) -> tuple[Path, str]:
    """A copy of the first visit's store with `change(entry)` applied to each entry that holds a starter: (its
    path, the record's key)."""
    items = json.loads(store.read_text())
    (key, text), = items.items()
    record = json.loads(text)
    for context in record["adapters"].values():
        for entry in context["entries"].values():
            if "starter" in entry:
                change(entry)
    items[key] = json.dumps(record)
    plans = tmp_path / "plans.json"
    plans.write_text(json.dumps(items))
    return plans, key


@pytest.fixture(scope="module")
def first_visit(kernel, tmp_path_factory) -> tuple[Path, dict]:
    store = tmp_path_factory.mktemp("first") / "plans.json"
    first = visit(kernel, store, "first")
    assert first["starterStored"], first
    assert all(STARTER_REASON not in c["reason"] for c in first["calls"]) and first["firstErr"] < TOLERANCE
    return store, first


def test_a_revisit_runs_its_first_call_on_the_starter_then_the_stored_plan(kernel, first_visit, tmp_path):
    store, first = first_visit
    plans = tmp_path / "plans.json"
    plans.write_text(store.read_text())
    again = visit(kernel, plans, "revisit")
    calls = again["calls"]
    assert calls[0]["variant"] == gather.NAMES[2] and calls[0]["reason"].startswith(STARTER_REASON)
    assert calls[-1]["variant"] == first["calls"][0]["variant"] and STARTER_REASON not in calls[-1]["reason"]
    assert again["firstErr"] < TOLERANCE and again["lastErr"] < TOLERANCE
    assert not again["warnings"], again["warnings"]


def test_a_new_signature_on_an_adapter_whose_plans_compile_slowly_runs_its_starter_first(kernel, first_visit, tmp_path):
    """A stored starter says this adapter compiles plans slowly: a signature no plan is stored for runs its first
    calls on its starter while Python plans and compiles the plan behind them; the plan is stored for the next visit."""
    store, first = first_visit
    plans = tmp_path / "plans.json"
    plans.write_text(store.read_text())
    got = visit(kernel, plans, "new")
    calls = got["calls"]
    # judged and planned in JS from the stored starter's WGSL, before Python is up (web/runtime/quick-start.mjs)
    assert calls[0]["variant"] == gather.NAMES[2] and calls[0]["reason"].startswith(STARTER_REASON), calls
    assert "while Python starts" in calls[0]["reason"], calls
    assert calls[-1]["variant"] != gather.NAMES[2] and STARTER_REASON not in calls[-1]["reason"], calls
    assert got["firstErr"] < TOLERANCE and got["lastErr"] < TOLERANCE and not got["warnings"], got
    record = json.loads(next(iter(json.loads(plans.read_text()).values())))
    assert sum(len(c["entries"]) for c in record["adapters"].values()) == 2


def test_adapt_false_runs_the_stored_plan_alone(kernel, first_visit, tmp_path):
    store, first = first_visit
    plans = tmp_path / "plans.json"
    plans.write_text(store.read_text())
    again = visit(kernel, plans, "revisit", adapt=False)
    assert [c["variant"] for c in again["calls"]] == [first["calls"][0]["variant"]]


@pytest.mark.parametrize("fault", ["digest", "spec"])
def test_a_bad_stored_starter_is_dropped_with_a_warning_and_the_plan_runs(kernel, first_visit, tmp_path, fault):
    def change(entry):
        if fault == "digest":
            entry["starter"]["digest"] = "0" * 64
        else:
            entry["starter"]["spec"] = "not a spec"

    plans, key = edited(first_visit[0], tmp_path, change)
    again = visit(kernel, plans, "revisit")
    assert all(STARTER_REASON not in c["reason"] for c in again["calls"]) and again["firstErr"] < TOLERANCE
    assert any("a stored starter was dropped" in w for w in again["warnings"]), again["warnings"]
    kept = json.loads(json.loads(plans.read_text())[key])
    entries = [e for c in kept["adapters"].values() for e in c["entries"].values()]
    assert entries and all("starter" not in e for e in entries)  # the starter alone went; the plan stayed


def test_the_starter_is_the_ranks_gather_kernel_and_none_where_the_plan_is_that_kernel():
    caps = DeviceCaps(vendor="google", architecture="swiftshader", is_fallback=True)
    geom = infer([1, 32, 16, 16], [32, 16, 4, 4], None, {"strides": [2, 2], "pads": [1, 1, 1, 1]})
    chosen = planner.plan(geom, caps).variant
    got = planner.starter(geom, caps, chosen)
    assert got["variant"] == gather.NAMES[2] and got["predicted_ms"] > 0 and got["chosen_ms"] > 0
    assert planner.starter(geom, caps, gather.NAMES[2]) is None


def test_a_starter_made_beside_another_plan_is_dropped(kernel, first_visit, tmp_path):
    """A plan entry replaced (by the package, or edited with its digest recomputed) leaves no starter of the old one
    running before it."""
    def change(entry):  # the plan edited, its digest recomputed: the starter was made beside the old one
        wrong_uniform(entry["spec"])
        entry["digest"] = digest(entry["spec"])

    plans, _ = edited(first_visit[0], tmp_path, change)
    again = visit(kernel, plans, "revisit")
    # the edited plan runs (Python replaces it once up: tests/test_stored_plans.py), never the old plan's starter
    assert all(STARTER_REASON not in c["reason"] for c in again["calls"])
    assert any("made beside another plan" in w for w in again["warnings"]), again["warnings"]


def test_a_starter_measured_slower_than_its_plan_on_a_revisit_runs_that_visit_and_is_dropped(kernel, first_visit,
                                                                                          tmp_path):
    """Its own compile is measured on the revisit that runs it (startWith): past what the plan's compile and run
    took, the next visits run the plan alone."""
    def change(entry):
        entry["starter"]["mainMs"] = 0.001

    plans, key = edited(first_visit[0], tmp_path, change)
    again = visit(kernel, plans, "revisit")
    assert again["calls"][0]["reason"].startswith(STARTER_REASON) and not again["warnings"], again
    kept = json.loads(json.loads(plans.read_text())[key])
    entries = [e for c in kept["adapters"].values() for e in c["entries"].values()]
    assert entries and all("starter" not in e for e in entries)


def test_a_new_signature_whose_stored_starter_source_is_not_the_packages_drops_it(kernel, first_visit, tmp_path):
    """The WGSL a new signature borrows before Python is up comes from a stored starter: altered (its key and digest
    made to match), it serves that first call, and once Python has planned the same kernel the two differ, so the
    stored starter goes, with a warning."""
    import hashlib

    def change(entry):
        (p,) = entry["starter"]["spec"]["passes"]
        p["pipeline"]["source"] += "\n// altered\n"
        p["pipeline"]["key"] = p["pipeline"]["key"].rsplit("|", 1)[0] + "|" + \
            hashlib.sha256(p["pipeline"]["source"].encode()).hexdigest()
        entry["starter"]["digest"] = digest(entry["starter"]["spec"])

    plans, key = edited(first_visit[0], tmp_path, change)
    got = visit(kernel, plans, "new")
    assert "while Python starts" in got["calls"][0]["reason"] and got["firstErr"] < TOLERANCE, got
    assert any("differs from the package's own" in w for w in got["warnings"]), got["warnings"]
    kept = json.loads(json.loads(plans.read_text())[key])
    # the altered starter went; the new signature may keep its own, the package's (the first of its kind now stored)
    starters = [e["starter"] for c in kept["adapters"].values() for e in c["entries"].values() if "starter" in e]
    assert all("// altered" not in s["spec"]["passes"][0]["pipeline"]["source"] for s in starters), starters


def test_a_new_signature_whose_gather_run_is_predicted_long_waits_for_python(kernel, first_visit, tmp_path):
    """The quick start's gather run is predicted from the stored starter's (scaled by their work): past
    STARTER.quickMs, Python plans the new signature (its own starter, on this slow-compiling adapter)."""
    def change(entry):
        entry["starter"]["runMs"] = 5000.0
        entry["starter"]["mainMs"] = 6000.0

    plans, _ = edited(first_visit[0], tmp_path, change)
    got = visit(kernel, plans, "new")
    first = got["calls"][0]
    assert "while Python starts" not in first["reason"] and got["firstErr"] < TOLERANCE, got
    assert first["reason"].startswith(STARTER_REASON), first  # Python's starter, planned once Python is up
