"""The judge and planner a new signature on a revisit runs before Python is up (web/runtime/quick-start.mjs), held
to Python's: every request the JS judge accepts, app/shapes.py infer accepts with the same y, and the gather launch
JS plans for it is the one Python plans (uniforms, grid, buffers). Requests the JS judge is unsure of go to Python."""
import json
import math
import subprocess
from pathlib import Path

import numpy as np

from app import planner
from app.caps import DeviceCaps
from app.errors import ConvTransposeError
from app.fuzz import random_request
from app.hostile import hostile_request
from app.shapes import infer
from app.split import buffer_bytes
from app.variants import gather

ROOT = Path(__file__).resolve().parent.parent
CAPS = DeviceCaps(vendor="google", architecture="swiftshader", is_fallback=True)
MAX_PER_DIM = CAPS.limit("maxComputeWorkgroupsPerDimension")

QUICK = """
import { quickGeometry, quickSpec } from "%s";
const requests = JSON.parse(process.argv[1]);
const pipeline = { key: "k", source: "s", label: "l" };
console.log(JSON.stringify(requests.map((r) => {
  const geom = quickGeometry(r.tensors, r.attributes);
  return geom && quickSpec(geom, pipeline, 256, %d);
})));
""" % ((ROOT / "web" / "runtime" / "quick-start.mjs").as_uri(), MAX_PER_DIM)


def quick(requests: list[dict]) -> list[dict | None]:
    done = subprocess.run(["node", "--input-type=module", "-e", QUICK, json.dumps(requests)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_js_gather_launch_is_pythons_on_the_fuzzers_requests():
    rng = np.random.default_rng(5150)
    requests, geoms = [], []
    for _ in range(300):
        r = random_request(rng)
        tensors = {n: {"shape": list(r[n].shape), "dtype": "float32"} for n in ("x", "w", "b") if r[n] is not None}
        requests.append({"tensors": tensors, "attributes": r["attributes"]})
        geoms.append(r["geom"])
    got = quick(requests)
    sure = [(g, s, r) for g, s, r in zip(geoms, got, requests) if s is not None]
    # what it leaves to Python: output_shape and SAME_* padding (and nothing else the fuzzer draws)
    for g, s, r in zip(geoms, got, requests):
        if s is None:
            assert r["attributes"].get("output_shape") is not None or \
                r["attributes"].get("auto_pad") in ("SAME_UPPER", "SAME_LOWER"), r
    assert len(sure) >= 150, len(sure)
    for geom, spec, _ in sure:
        made = planner.plan(geom, CAPS, variant=gather.NAMES[geom.rank])
        (d,) = made.dispatches
        assert spec["variant"] == made.variant and spec["y_shape"] == list(geom.y_shape)
        sizes = buffer_bytes(geom)
        assert spec["y_bytes"] == sizes["y"] and spec["inputs"] == {n: sizes[n] for n in ("x", "w", "b") if n in d.bindings}
        (p,) = spec["passes"]
        assert p["bindings"] == list(d.bindings) and p["uniforms"] == [v for _, v in d.uniforms]
        assert p["workgroups"] == list(d.workgroups) and d.render_params["workgroup_size"] == 64
        assert not made.weight_passes and not made.scratch and not made.finite_only


def test_every_request_the_js_judge_accepts_python_accepts_with_the_same_y():
    """Hostile requests (one bad attribute, shape, dtype or name each): JS accepts only what infer accepts."""
    rng = np.random.default_rng(2718)
    requests, verdicts = [], []
    while len(requests) < 400:
        _, r = hostile_request(rng)
        tensors = {}
        for n in ("x", "w", "b"):
            t = r.get(n)
            if t is None:
                continue
            shape = list(t.shape) if isinstance(t, np.ndarray) else t.get("shape")
            dtype = str(t.dtype) if isinstance(t, np.ndarray) else t.get("dtype", "float32")
            tensors[n] = {"shape": shape, "dtype": dtype}
        request = {"tensors": tensors, "attributes": r["attributes"]}
        try:
            text = json.dumps(request, allow_nan=False)
        except (TypeError, ValueError):
            continue  # not JSON (NaN, objects): no JS caller gets it past requestAttributes either
        if len(text) > 200_000:
            continue
        requests.append(json.loads(text))
        try:
            shapes = {n: t["shape"] for n, t in tensors.items()}
            geom = infer(shapes["x"], shapes["w"], shapes.get("b"), r["attributes"],
                         {n: t["dtype"] for n, t in tensors.items()})
            verdicts.append(list(geom.y_shape) if math.prod(geom.y_shape) else None)
        except (ConvTransposeError, KeyError, TypeError):
            verdicts.append(None)
    got = quick(requests)
    accepted = [(s, v, r) for s, v, r in zip(got, verdicts, requests) if s is not None]
    assert accepted  # hostile requests that stay valid (a harmless change) are accepted
    for spec, verdict, request in accepted:
        assert verdict == spec["y_shape"], request


BASE = {"x": [1, 4, 5, 5], "w": [4, 2, 3, 3]}
REFUSED = [  # (what is wrong, x, w, b, attributes, dtypes): one rule of infer broken each
    ("x of rank 2", [4, 5], [4, 2], None, {}, None),
    ("w's rank", BASE["x"], [4, 2, 3], None, {}, None),
    ("w's dtype", BASE["x"], BASE["w"], None, {}, {"x": "float32", "w": "float16"}),
    ("an unknown dtype", BASE["x"], BASE["w"], None, {}, {"x": "float64", "w": "float64"}),
    ("an unknown attribute", BASE["x"], BASE["w"], None, {"stride": [2, 2]}, None),
    ("w's input channels", BASE["x"], [3, 2, 3, 3], None, {}, None),
    ("a group that does not divide C", BASE["x"], BASE["w"], None, {"group": 3}, None),
    ("kernel_shape", BASE["x"], BASE["w"], None, {"kernel_shape": [3, 2]}, None),
    ("the bias's length", BASE["x"], BASE["w"], [3], {}, None),
    ("output_padding past the stride", BASE["x"], BASE["w"], None, {"strides": [2, 2], "output_padding": [2, 0]}, None),
    ("pads that leave no output", BASE["x"], BASE["w"], None, {"pads": [4, 4, 4, 4]}, None),
    ("strides' length", BASE["x"], BASE["w"], None, {"strides": [2]}, None),
    ("a negative pad", BASE["x"], BASE["w"], None, {"pads": [-1, 0, 0, 0]}, None),
    ("a zero stride", BASE["x"], BASE["w"], None, {"strides": [0, 1]}, None),
    ("a fractional stride", BASE["x"], BASE["w"], None, {"strides": [1.5, 1]}, None),
    ("a bool group", BASE["x"], BASE["w"], None, {"group": True}, None),
    ("an unknown auto_pad", BASE["x"], BASE["w"], None, {"auto_pad": "SAME"}, None),
    ("an extent past 2^31", [1, 4, 3, 3], BASE["w"], None, {"strides": [2**30, 1]}, None),
    ("y past 2^31 elements", [1, 4, 2**15, 2**15], [4, 4, 3, 3], None, {}, None),
    ("an empty x", [0, 4, 5, 5], BASE["w"], None, {}, None),  # valid, but Python runs empty requests
]


def test_each_rule_infer_refuses_by_the_js_judge_leaves_to_python():
    requests = []
    for what, x, w, b, attributes, dtypes in REFUSED:
        dtypes = dtypes or {}
        tensors = {"x": {"shape": x, "dtype": dtypes.get("x", "float32")}, "w": {"shape": w, "dtype": dtypes.get("w", "float32")}}
        if b is not None:
            tensors["b"] = {"shape": b, "dtype": "float32"}
        requests.append({"tensors": tensors, "attributes": attributes})
        if what != "an empty x":
            try:
                infer(x, w, b, attributes, {n: t["dtype"] for n, t in tensors.items()})
            except ConvTransposeError:
                pass
            else:
                raise AssertionError(f"infer accepts {what}")
    got = quick(requests)
    assert [what for (what, *_), s in zip(REFUSED, got) if s is not None] == []
    assert quick([{"tensors": {"x": {"shape": BASE["x"], "dtype": "float32"}, "w": {"shape": BASE["w"], "dtype": "float32"}},
                   "attributes": {}}]) != [None]  # the same request, unbroken, is accepted


LIMITS = """
import { quickGeometry, quickSpec } from "%s";
import { storedSpecFault } from "%s";
const limits = { maxStorageBufferBindingSize: 2 ** 27, maxBufferSize: 2 ** 28, maxComputeWorkgroupsPerDimension: 65535,
                 maxStorageBuffersPerShaderStage: 8, maxComputeInvocationsPerWorkgroup: 256 };
const faults = JSON.parse(process.argv[1]).map((r) => {
  const geom = quickGeometry(r.tensors, r.attributes);
  return storedSpecFault(quickSpec(geom, { key: "k", source: "s", label: "l" }, 256, 65535), r, limits);
});
console.log(JSON.stringify(faults));
""" % ((ROOT / "web" / "runtime" / "quick-start.mjs").as_uri(), (ROOT / "web" / "runtime" / "plan-store.mjs").as_uri())


def test_a_quick_launch_past_the_devices_limits_is_faulted_as_a_stored_plan_would_be():
    """kernel.mjs checks the quick spec with storedSpecFault: y past the binding limit (a request Python runs in
    pieces) is not run by the quick start; one within it is."""
    def request(h):
        return {"tensors": {"x": {"shape": [1, 64, h, 1024], "dtype": "float32"},
                            "w": {"shape": [64, 64, 1, 1], "dtype": "float32"}}, "attributes": {}}

    done = subprocess.run(["node", "--input-type=module", "-e", LIMITS, json.dumps([request(8), request(1024)])],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    within, past = json.loads(done.stdout)
    assert within is None and past and "y_bytes" in past, (within, past)
