"""`python -m app model FILE.onnx` on models built here with onnx.helper, and the Benchmarks view's drop zone.

The decoder: four ConvTranspose nodes with Relu, Add and Sigmoid between them (two of one signature, one
grouped with asymmetric pads, one grouped with output_padding), a 1D and a 3D layer on inputs of their own,
a node whose weight is a graph input and one whose input keeps a dynamic batch (both listed and skipped)."""
import base64
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from app import onnx_model
from app.host import model_runner
from app.host.server import ROOT

RNG = np.random.default_rng(7)
DECODER_LAYERS = ["up0", "up1", "up2", "up3", "line1d", "cube3d"]


def _init(name, shape, scale=0.5):
    return numpy_helper.from_array((RNG.uniform(-1, 1, shape) * scale).astype(np.float32), name)


def decoder_model() -> onnx.ModelProto:
    f = TensorProto.FLOAT
    nodes = [
        helper.make_node("ConvTranspose", ["x", "w0", "b0"], ["t0"], name="up0", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["t0"], ["r0"]),
        helper.make_node("ConvTranspose", ["r0", "w1", "b1"], ["t1"], name="up1", pads=[1, 1, 1, 1]),  # up0's signature
        helper.make_node("Add", ["t1", "skip"], ["a1"]),
        helper.make_node("ConvTranspose", ["a1", "w2"], ["t2"], name="up2", strides=[2, 2], pads=[1, 0, 2, 1], group=2),
        helper.make_node("Sigmoid", ["t2"], ["s2"]),
        helper.make_node("ConvTranspose", ["s2", "w3", "b3"], ["y"], name="up3", strides=[2, 1], group=3,
                         output_padding=[1, 0]),
        helper.make_node("ConvTranspose", ["x1", "w4", "b4"], ["y1"], name="line1d", strides=[3], pads=[1, 2],
                         output_padding=[1]),
        helper.make_node("ConvTranspose", ["x3", "w5"], ["y3"], name="cube3d", strides=[2, 2, 2], pads=[0, 1, 0, 1, 0, 0]),
        helper.make_node("ConvTranspose", ["x", "wdyn"], ["ydyn"], name="fed_weight", strides=[2, 2]),
        helper.make_node("ConvTranspose", ["xn", "w0"], ["yn"], name="dynamic_batch"),
    ]
    inits = [_init("w0", [8, 8, 3, 3]), _init("b0", [8]), _init("w1", [8, 8, 3, 3]), _init("b1", [8]),
             _init("skip", [1, 8, 3, 3]), _init("w2", [8, 3, 4, 4]), _init("w3", [6, 2, 3, 3]), _init("b3", [6]),
             _init("w4", [4, 3, 5]), _init("b4", [3]), _init("w5", [2, 2, 2, 2, 2])]
    graph = helper.make_graph(
        nodes, "decoder",
        [helper.make_tensor_value_info("x", f, [1, 8, 3, 3]), helper.make_tensor_value_info("x1", f, [1, 4, 10]),
         helper.make_tensor_value_info("x3", f, [1, 2, 3, 3, 3]), helper.make_tensor_value_info("wdyn", f, [8, 4, 2, 2]),
         helper.make_tensor_value_info("xn", f, ["N", 8, 3, 3])],
        [helper.make_tensor_value_info(n, f, [None] * r) for n, r in (("y", 4), ("y1", 3), ("y3", 5), ("ydyn", 4), ("yn", 4))],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture(scope="module")
def decoder_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("models") / "decoder.onnx"
    onnx.save(decoder_model(), path)
    return path


SUMMARY_ONLY = "0 passed, 0 failed\n"  # the whole stdout of a run that refused the file


def cli(*args, timeout=900, preexec_fn=None):
    return subprocess.run([sys.executable, "-m", "app", "model", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, preexec_fn=preexec_fn)


# -- Reading, in CPython alone

def test_reads_every_convtranspose_node_and_skips_with_the_reason(decoder_file):
    ml = onnx_model.read(decoder_file)
    assert [l.name for l in ml.layers] == DECODER_LAYERS
    by = {l.name: l for l in ml.layers}
    assert by["up2"].x_shape == (1, 8, 3, 3) and by["up2"].y_shape == (1, 6, 5, 7)  # shape inference through Add
    assert by["up2"].attributes == {"strides": [2, 2], "pads": [1, 0, 2, 1], "group": 2} and by["up2"].b is None
    assert by["up3"].x_shape == (1, 6, 5, 7) and by["up3"].y_shape == (1, 6, 12, 9)
    assert by["line1d"].y_shape == (1, 3, 30) and by["cube3d"].y_shape == (1, 2, 5, 5, 6)
    skipped = {s.name: s.reason for s in ml.skipped}
    assert skipped == {"fed_weight": "w ('wdyn') is a graph input, not an initializer",
                       "dynamic_batch": "x ('xn') stays dynamic after shape inference: [?,8,3,3]"}


def test_the_chain_is_the_four_decoder_layers_with_the_ops_between_dropped(decoder_file):
    ml = onnx_model.read(decoder_file)
    layers = onnx_model.chain(ml)
    assert [l.name for l in layers] == ["up0", "up1", "up2", "up3"]
    assert onnx_model.dropped_between(ml, layers) == ["Add", "Relu", "Sigmoid"]
    model = onnx_model.chain_model(ml, layers)
    assert [n.op_type for n in model.graph.node] == ["ConvTranspose"] * 4
    # The chain model is the file's layers with the file's weights: ORT on it equals the ConvTranspose
    # nodes of the original graph applied one after another with nothing between them.
    x = onnx_model.seeded_input([1, 8, 3, 3], "float32", 0)
    got = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    t = x
    for layer in layers:
        t = onnxruntime.InferenceSession(onnx_model.one_node(ml, layer).SerializeToString(),
                                         providers=["CPUExecutionProvider"]).run(None, {"x": t})[0]
    assert got.shape == (1, 6, 12, 9)
    np.testing.assert_allclose(got, t, rtol=1e-6, atol=1e-6)


def test_one_node_models_keep_the_weights_and_compute_what_the_file_computes(decoder_file):
    ml = onnx_model.read(decoder_file)
    layer = next(l for l in ml.layers if l.name == "line1d")
    cut = onnx_model.one_node(ml, layer)
    onnx.checker.check_model(cut, full_check=True)
    original = onnx.load(decoder_file)
    w4 = next(t for t in original.graph.initializer if t.name == "w4")
    np.testing.assert_array_equal(numpy_helper.to_array(cut.graph.initializer[0]), numpy_helper.to_array(w4))
    x1 = RNG.uniform(-1, 1, [1, 4, 10]).astype(np.float32)
    full = onnxruntime.InferenceSession(original.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {"x": np.zeros([1, 8, 3, 3], np.float32), "x1": x1, "x3": np.zeros([1, 2, 3, 3, 3], np.float32),
             "wdyn": np.zeros([8, 4, 2, 2], np.float32), "xn": np.zeros([1, 8, 3, 3], np.float32)}
    want = full.run(["y1"], feeds)[0]
    got = onnxruntime.InferenceSession(cut.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x1})[0]
    np.testing.assert_array_equal(got, want)


def test_a_chain_is_refused_when_no_two_layers_feed_one_another(tmp_path):
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2]),
         helper.make_node("ConvTranspose", ["x", "w"], ["z"])],
        "parallel", [helper.make_tensor_value_info("x", f, [1, 2, 3, 3])],
        [helper.make_tensor_value_info("y", f, [None] * 4), helper.make_tensor_value_info("z", f, [None] * 4)],
        [_init("w", [2, 2, 2, 2])])
    path = tmp_path / "parallel.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    assert onnx_model.chain(onnx_model.read(path)) == []
    out = cli(path, "--chain", timeout=60)
    assert out.returncode == 2 and out.stdout == SUMMARY_ONLY
    assert out.stderr.strip() == f"{path}: --chain: no two consecutive ConvTranspose layers feed one another (docs/models.md)"


# -- Refusals: one line, before any host starts (no Chromium, no Node: fast), and the summary

def test_a_file_that_is_not_onnx_is_refused_in_one_line(tmp_path):
    path = tmp_path / "notes.onnx"
    path.write_bytes(b"\xff\xfe this is not a protobuf \x00\x01\x02")
    out = cli(path, timeout=60)
    assert out.returncode == 2 and out.stdout == SUMMARY_ONLY, out
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{path}: not an ONNX model"), out.stderr


def test_a_text_file_that_parses_as_empty_protobuf_is_refused(tmp_path):
    path = tmp_path / "empty.onnx"
    path.write_bytes(b"")
    out = cli(path, timeout=60)
    assert out.returncode == 2 and out.stderr.strip() == f"{path}: not an ONNX model (no graph, IR version or opset in the file)"
    assert out.stdout == SUMMARY_ONLY


def test_a_model_the_checker_rejects_is_refused_in_one_line(tmp_path):
    f = TensorProto.FLOAT
    graph = helper.make_graph(  # "w" is neither an input, an initializer nor a node's output
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"])], "broken",
        [helper.make_tensor_value_info("x", f, [1, 2, 3, 3])], [helper.make_tensor_value_info("y", f, [None] * 4)])
    path = tmp_path / "broken.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)
    out = cli(path, timeout=60)
    assert out.returncode == 2 and out.stdout == SUMMARY_ONLY
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{path}: rejected by onnx.checker: "), out.stderr
    assert "w" in lines[0]


# -- The model on real WebGPU

def _check_decoder_output(out, against: bool):
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.strip().splitlines()
    status = {line.split()[1].rstrip(":"): line.split()[0] for line in lines[1:-1]}
    assert status == {**{n: "PASS" for n in DECODER_LAYERS}, "fed_weight": "SKIP", "dynamic_batch": "SKIP",
                      "chain": "PASS"}, out.stdout
    assert lines[-1] == "7 passed, 0 failed, 2 skipped"
    line = {l.split()[1].rstrip(":"): l for l in lines[1:-1]}
    assert "up0 -> up1 -> up2 -> up3 (4 layers; Add, Relu, Sigmoid between them dropped)" in line["chain"]
    if against:
        # ORT-web refuses 3D ConvTranspose: not comparable, not failed
        assert "ort: not comparable (onnxruntime-web refuses it" in line["cube3d"], line["cube3d"]
        for name in ("up0", "up2", "line1d", "chain"):
            assert "e2e ours" in line[name] and "ort-" in line[name], line[name]
            # y into an array each side reuses (a FAIL line if its y were not e2e's)
            assert "| e2e-into ours " in line[name], line[name]
    else:
        assert "ours e2e" in line["up0"] and "e2e-into" in line["up0"]


@pytest.mark.browser
def test_the_decoder_in_chromium_against_ort(decoder_file):
    _check_decoder_output(cli(decoder_file, "--against", "ort", "--chain", "--runs", "2"), against=True)


@pytest.mark.browser
def test_the_decoder_in_node_on_dawn_against_ort(decoder_file):
    out = cli(decoder_file, "--host", "node", "--against", "ort", "--chain", "--runs", "2")
    _check_decoder_output(out, against=True)
    # Node says how long it waited for its background threads (V8 compiling ORT's wasm) to go quiet before the
    # timed rounds, and how busy the process was during them; the test's Node runs Liftoff-only: nothing to wait for
    for line in out.stdout.splitlines()[1:-1]:
        if line.startswith("PASS"):
            settled = re.search(r"\| host settled ([0-9.]+) s, ([0-9.]+) cores in the rounds$", line)
            assert settled and float(settled.group(1)) < 60, line


@pytest.mark.browser
def test_float16_layers_pass_or_say_the_device_lacks_shader_f16(decoder_file):
    out = cli(decoder_file, "--host", "node", "--dtype", "float16")
    lines = out.stdout.strip().splitlines()
    ran = [l for l in lines[1:-1] if l.split()[1] in DECODER_LAYERS]
    assert len(ran) == 6
    if all(l.startswith("SKIP") for l in ran):  # SwiftShader: no shader-f16
        assert all("shader-f16" in l for l in ran), ran
        assert lines[-1] == "0 passed, 0 failed, 8 skipped" and out.returncode == 0
    else:
        assert all(l.startswith("PASS") for l in ran), out.stdout
        assert out.returncode == 0


# -- The drop zone, in the page

DROP = """async (b64) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const drop = document.getElementById('model-drop');
    const data = new DataTransfer();
    data.items.add(new File([bytes], 'decoder.onnx', { type: 'application/octet-stream' }));
    drop.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
}"""


@pytest.mark.browser
def test_the_drop_zone_lists_and_runs_the_layers(page, decoder_file):
    """Layers the page can size: value_info is dropped from the file, so shapes come through Relu/Add/Sigmoid
    from the graph inputs; the checks are ORT-web's y where it runs the layer, else the float64 reference."""
    page.click("nav a[data-view=bench]")
    page.wait_for_selector("#view-bench:not([hidden])")
    page.evaluate(DROP, base64.b64encode(decoder_file.read_bytes()).decode())
    page.wait_for_function("/^Done|^Could not/.test(document.getElementById('model-status').textContent)",
                           timeout=600_000)
    status = page.text_content("#model-status")
    assert status.startswith("Done: decoder.onnx, 8 ConvTranspose node(s): 6 passed, 0 failed, 2 skipped"), status
    rows = page.locator("#model-table tbody tr")
    assert rows.count() == 8
    cells = lambda i: [rows.nth(i).locator("td").nth(k).text_content() for k in range(7)]  # noqa: E731
    table = {cells(i)[0]: cells(i) for i in range(8)}
    for name in DECODER_LAYERS:
        assert table[name][5].startswith("PASS"), table[name]
    assert table["up2"][1] == "x[1,8,3,3] w[8,3,4,4] group=2 pads=1,0,2,1 strides=2,2 -> y[1,6,5,7]"
    ort_ran = "not available" not in page.text_content("#bench-ort-status")
    if ort_ran:
        assert "onnxruntime-web" in table["up0"][6] and "float64" in table["cube3d"][6], table["cube3d"]
    assert table["fed_weight"][5] == "SKIP" and "graph input" in table["fed_weight"][6]
    assert table["dynamic_batch"][5] == "SKIP" and "static shape" in table["dynamic_batch"][6]
    assert page.is_visible("#model-chart")

    # The file input takes the same path.
    page.set_input_files("#model-file", str(decoder_file))
    page.wait_for_function("/^Done|^Could not/.test(document.getElementById('model-status').textContent)",
                           timeout=600_000)
    assert page.text_content("#model-status").startswith("Done: decoder.onnx")


@pytest.mark.browser
def test_the_drop_zone_refuses_a_file_that_is_not_onnx(page):
    page.click("nav a[data-view=bench]")
    page.evaluate(DROP, base64.b64encode(b"\xff\xfe not onnx").decode())
    page.wait_for_function("/^Done|^Could not/.test(document.getElementById('model-status').textContent)")
    assert page.text_content("#model-status").startswith("Could not read decoder.onnx: not an ONNX model")
    assert page.locator("#model-table tbody tr").count() == 0


# -- Hostile files: refused or reported per layer, in CPython (no host starts for a file with nothing to run)



def _layers_model(attrs_list, w_shape=(4, 2, 3, 3), x_shape=(1, 4, 5, 5), inits=None):
    f = TensorProto.FLOAT
    nodes, weights, inputs, outputs = [], [], [], []
    for i, attrs in enumerate(attrs_list):
        nodes.append(helper.make_node("ConvTranspose", [f"x{i}", f"w{i}"], [f"y{i}"], name=f"L{i}", **attrs))
        weights.append((inits or {}).get(i) or numpy_helper.from_array(np.ones(w_shape, np.float32), f"w{i}"))
        inputs.append(helper.make_tensor_value_info(f"x{i}", f, list(x_shape)))
        outputs.append(helper.make_tensor_value_info(f"y{i}", f, [None] * len(x_shape)))
    graph = helper.make_graph(nodes, "g", inputs, outputs, weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _run_main(path, monkeypatch, capsys, **env):
    def no_host(*args, **kwargs):
        raise AssertionError("a host started for a file with nothing to run")

    monkeypatch.setattr(model_runner, "open_host", no_host)
    for key, value in env.items():
        monkeypatch.setenv(key, str(value))
    code = model_runner.main(str(path))
    out = capsys.readouterr()
    return code, out.out.strip().splitlines(), out.err


BAD_ATTRIBUTES = [
    ({"group": 0}, "attribute 'group' must be an integer from 1", "group"),
    ({"strides": [0, 0]}, "attribute 'strides' entries must be >= 1", "strides"),
    ({"pads": [-1, 0, 0, 0]}, "attribute 'pads' entries must be >= 0", "pads"),
    ({"kernel_shape": [2, 2]}, "does not match w's spatial dims", "kernel_shape"),
    ({"strides": [2, 2], "output_padding": [2, 0]}, "attribute 'output_padding'", "output_padding"),
    ({"dilations": [1]}, "attribute 'dilations'", "dilations"),
    ({"auto_pad": "SIDEWAYS"}, "auto_pad", "auto_pad"),
    ({"group": 3}, "group", None),
]


def test_bad_attributes_fail_by_name_each_layer_goes_on_and_the_summary_comes(tmp_path, monkeypatch, capsys):
    path = tmp_path / "bad.onnx"
    onnx.save(_layers_model([a for a, _, _ in BAD_ATTRIBUTES]), path)
    code, lines, _ = _run_main(path, monkeypatch, capsys)
    assert code == 1 and lines[-1] == f"0 passed, {len(BAD_ATTRIBUTES)} failed"
    for i, (_, message, field) in enumerate(BAD_ATTRIBUTES):
        line = next(l for l in lines if l.startswith(f"FAIL L{i} "))
        assert message in line and (field is None or f"(field {field})" in line), line


def test_weights_short_of_their_dims_fail_that_layer(tmp_path, monkeypatch, capsys):
    short = numpy_helper.from_array(np.ones(10, np.float32), "w0")
    short.dims[:] = [4, 2, 3, 3]
    model = _layers_model([{}], inits={0: short})
    path = tmp_path / "short.onnx"
    path.write_bytes(model.SerializeToString())
    code, lines, err = _run_main(path, monkeypatch, capsys)
    assert code in (1, 2), lines
    text = "\n".join(lines) + err
    assert "Traceback" not in text and ("holds 40 bytes" in text or "rejected by onnx.checker" in text), text


def test_sizes_past_the_memory_budget_fail_before_anything_is_allocated(tmp_path, monkeypatch, capsys):
    path = tmp_path / "huge.onnx"
    onnx.save(_layers_model([{"strides": [2, 2]}, {}, {"strides": [4096, 4096]}], x_shape=(1, 4, 4096, 4096)), path)
    code, lines, _ = _run_main(path, monkeypatch, capsys, CONVTRANSPOSE_MODEL_BUDGET=1 << 30)
    assert code == 1 and lines[-1] == "0 passed, 3 failed"
    assert "needs about 2304 MiB of host memory, past the budget of 1024 MiB ($CONVTRANSPOSE_MODEL_BUDGET)" in lines[1]
    assert "past the budget of 1024 MiB" in lines[2]
    assert "more than 2^31-1 elements" in lines[3]  # our validation first: no budget arithmetic on it
    code, lines, err = _run_main(path, monkeypatch, capsys, CONVTRANSPOSE_MODEL_BUDGET=100)
    assert code == 2 and "past the budget of 100" in err


def test_a_file_of_10000_layers_runs_the_capped_first_ones_and_says_so(tmp_path, monkeypatch, capsys):
    import time

    path = tmp_path / "many.onnx"
    onnx.save(_layers_model([{"group": 0}] * 10_000), path)
    started = time.monotonic()
    code, lines, _ = _run_main(path, monkeypatch, capsys, CONVTRANSPOSE_MODEL_MAX_LAYERS=20)
    assert time.monotonic() - started < 120
    assert lines[-1] == "0 passed, 20 failed, 9980 skipped"
    assert any(l.startswith("SKIP 9980 layer(s) past the first 20 ($CONVTRANSPOSE_MODEL_MAX_LAYERS): L20 onwards")
               for l in lines)
    monkeypatch.setenv("CONVTRANSPOSE_MODEL_MAX_LAYERS", "0")
    assert model_runner.main(str(path)) == 2 and "must be a positive integer" in capsys.readouterr().err


def _external(folder: Path, location: str, offset=None, length=None):
    model = _layers_model([{}])
    tensor = model.graph.initializer[0]
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            entry = tensor.external_data.add()
            entry.key, entry.value = key, str(value)
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, folder / "m.onnx")
    return folder / "m.onnx"



W_BYTES = np.arange(72, dtype=np.float32).tobytes()


@pytest.mark.parametrize("location, setup, why", [
    (".git/config", None, "is not a regular file beside the model"),
    ("secret.bin", None, "is not a regular file beside the model"),
    ("../secret.bin", None, "is not a file name inside the model's folder"),
    ("/etc/passwd", None, "is not a file name inside the model's folder"),
    ("link.bin", "link", "leads out of the model's folder"),
    ("sub", "dir", "is not a regular file"),
    ("w.bin", "short", "has 100 bytes, its dims"),
    ("w.bin", "long", "has 300 bytes, its dims"),
    ("", None, "is not a file name inside"),
])
def test_external_data_comes_from_the_models_folder_only(tmp_path, monkeypatch, location, setup, why):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.bin").write_bytes(W_BYTES)
    (outside / ".git").mkdir()
    (outside / ".git" / "config").write_bytes(W_BYTES)
    folder = tmp_path / "outside" / "models"
    folder.mkdir()
    monkeypatch.chdir(outside)  # the caller's folder holds files of those names: none may be read
    if setup == "link":
        (folder / "link.bin").symlink_to(outside / "secret.bin")
    elif setup == "dir":
        (folder / "sub").mkdir()
    elif setup == "short":
        (folder / "w.bin").write_bytes(W_BYTES[:100])
    elif setup == "long":
        (folder / "w.bin").write_bytes(W_BYTES + b"\0" * 12)
    path = _external(folder, location)
    with pytest.raises(onnx_model.ModelError, match=why):
        onnx_model.read(path)


def test_external_data_beside_the_model_is_read_with_offset_and_length(tmp_path):
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "weights.bin").write_bytes(b"\1" * 16 + W_BYTES)
    ml = onnx_model.read(_external(folder, "weights.bin", offset=16, length=len(W_BYTES)))
    w = onnx_model.weights(ml, ml.layers[0], "float32")["w"]
    assert np.array_equal(w.reshape(-1), np.arange(72, dtype=np.float32))
    with pytest.raises(onnx_model.ModelError, match=r"\(offset 17, length 288\) is past the end"):
        onnx_model.read(_external(folder, "weights.bin", offset=17, length=len(W_BYTES)))
    with pytest.raises(onnx_model.ModelError, match="external data entries are not valid"):
        onnx_model.read(_external(folder, "weights.bin", offset="ten"))
    # and onnx's own writer's layout
    model = _layers_model([{}], inits={0: numpy_helper.from_array(np.arange(72, dtype=np.float32).reshape(4, 2, 3, 3), "w0")})
    onnx.save(model, folder / "saved.onnx", save_as_external_data=True, location="saved.bin", size_threshold=0)
    ml = onnx_model.read(folder / "saved.onnx")
    assert np.array_equal(onnx_model.weights(ml, ml.layers[0], "float32")["w"].reshape(-1), np.arange(72))


def test_temporary_folders_go_on_sigterm_and_stale_ones_on_the_next_run(tmp_path):
    import os
    import signal
    import time

    stale = tmp_path / f"{model_runner.TEMP_PREFIX}999999999-abc"  # no such process
    stale.mkdir()
    (stale / "layer0.onnx").write_bytes(b"x")
    live = tmp_path / f"{model_runner.TEMP_PREFIX}{os.getpid()}-abc"
    live.mkdir()
    assert model_runner.remove_stale_folders(str(tmp_path)) == 1
    assert not stale.exists() and live.exists()

    path = tmp_path / "one.onnx"
    onnx.save(_layers_model([{}]), path)
    script = f"""
import sys, time, contextlib, tempfile
tempfile.tempdir = {str(tmp_path)!r}
from app.host import model_runner
@contextlib.contextmanager
def slow_host(host, folder):
    print("host up", folder, flush=True)
    time.sleep(60)
    yield None
model_runner.open_host = slow_host
sys.exit(model_runner.main({str(path)!r}))
"""
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    lines = [proc.stdout.readline(), proc.stdout.readline()]
    folder = Path(lines[1].split()[-1])
    assert lines[1].startswith("host up") and folder.is_dir(), lines
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 10 and proc.returncode == 128 + signal.SIGTERM, err
    assert not folder.exists() and out.strip().splitlines()[-1] == "0 passed, 0 failed"


# -- Files that are not regular, names a terminal would obey, empty x and non-finite weights

def _address_space_1_5_gb():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_only_a_regular_file_is_read(tmp_path, kind):
    """In a child with 1.5 GB of address space and a time limit: an unbounded read (/dev/zero's size says 0)
    or a blocking open (a FIFO with no writer) fails the test in seconds instead of taking the machine."""
    import os

    if kind == "fifo":
        path, what = tmp_path / "m.onnx", "a FIFO"
        os.mkfifo(path)
    else:
        path, what = "/dev/zero", "a character device"
    out = cli(path, timeout=60, preexec_fn=_address_space_1_5_gb)
    assert out.returncode == 2 and out.stderr.strip() == f"{path}: not a regular file ({what})", out.stderr
    assert out.stdout == SUMMARY_ONLY
    with pytest.raises(onnx_model.ModelError, match=r"not a regular file \(a directory\)"):
        onnx_model.read(tmp_path)


def test_layer_names_are_printed_escaped(tmp_path, monkeypatch, capsys):
    model = _layers_model([{"group": 0}])
    model.graph.node[0].name = "L\x1b[2J\x1b[31mred\rover\nline\u202e"
    path = tmp_path / "names.onnx"
    onnx.save(model, path)
    code, lines, _ = _run_main(path, monkeypatch, capsys)
    assert code == 1 and lines[1].startswith(r"FAIL L\x1b[2J\x1b[31mred\rover\nline\u202e x[1,4,5,5] w[4,2,3,3] group=0: ")
    assert len(lines) == 3 and lines[-1] == "0 passed, 1 failed"


class _FakeModels:
    """A host in CPython: run() is onnxruntime's CPU provider on the cut model (as ours would compute it), and
    the case API runs app/cases.py on the float64 reference as the kernel, as the page's bridge does."""

    def __init__(self, folder: Path):
        from app.cases import parse_case_file, run_case
        from app.host.case_runner import Cases
        from tests.async_helper import run_coroutine
        from tests.test_case_checks import ReferenceKernel

        self.folder, self.cut_runs, loaded = folder, [], []

        def call(name, *args):
            if name == "load_cases":
                loaded[:] = parse_case_file(args[0])
                return [c["name"] for c in loaded]
            assert name == "run_case_at", name
            return run_coroutine(run_case(ReferenceKernel(), loaded[args[0]], args[1], args[2]))

        self.cases = Cases(call)

    def run(self, name: str, spec: dict) -> dict:
        self.cut_runs.append(name)
        model = onnx.load(self.folder / name)
        dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        if 0 in dims:  # what the page does with it (web/views/onnx-convtranspose.mjs staticDims)
            raise RuntimeError("Page.evaluate: ConvTransposeError: input 'upload': shape must be a list of "
                               "non-negative integers, got [" + ",".join(str(d or "null") for d in dims) + "]")
        x = np.frombuffer(base64.b64decode(spec["x"]), np.float32).reshape(dims)
        y = model_runner.ort_cpu(model.SerializeToString(), x)
        ours = {"e2e_ms": 1.0, "e2e_into_ms": 1.0, "resident_ms": 1.0, "gpu_ms": None}
        return {"y": base64.b64encode(y.tobytes()).decode(), "y_shape": list(y.shape), "variants": ["fake"],
                "ours": ours}


def _fake_host(monkeypatch):
    import contextlib

    hosts = []

    def open_host(host, folder):
        hosts.append(_FakeModels(folder))
        return contextlib.nullcontext(hosts[-1])

    monkeypatch.setattr(model_runner, "open_host", open_host)
    return hosts


def _empty_x_model(path: Path, nonfinite: bool = False):
    """spatial0 (x [1,2,0,4]) feeding after, and batch0 (x [0,2,3,4]); with `nonfinite`, a layer whose w holds
    NaN, Inf and -Inf on an x of its own."""
    f = TensorProto.FLOAT
    nodes = [helper.make_node("ConvTranspose", ["x0", "w0", "b0"], ["y0"], name="spatial0", strides=[2, 2]),
             helper.make_node("ConvTranspose", ["y0", "w1"], ["y1"], name="after", pads=[1, 1, 1, 1]),
             helper.make_node("ConvTranspose", ["x2", "w0", "b0"], ["y2"], name="batch0", strides=[2, 2])]
    inits = [_init("w0", [2, 3, 3, 3]), _init("b0", [3]), _init("w1", [3, 2, 3, 3])]
    inputs = [helper.make_tensor_value_info("x0", f, [1, 2, 0, 4]), helper.make_tensor_value_info("x2", f, [0, 2, 3, 4])]
    outputs = ["y1", "y2"]
    if nonfinite:
        w = RNG.uniform(-1, 1, (2, 3, 3, 3)).astype(np.float32)
        w[0, 0, 1, 1], w[1, 2, 0, 0], w[0, 1, 2, 2] = np.nan, np.inf, -np.inf
        nodes.append(helper.make_node("ConvTranspose", ["x3", "wn", "b0"], ["y3"], name="nonfinite", strides=[2, 2]))
        inits.append(numpy_helper.from_array(w, "wn"))
        inputs.append(helper.make_tensor_value_info("x3", f, [1, 2, 3, 4]))
        outputs.append("y3")
    graph = helper.make_graph(nodes, "empty", inputs, [helper.make_tensor_value_info(n, f, [None] * 4) for n in outputs],
                              inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), path)


def test_a_zero_size_x_dim_gives_the_references_y_of_the_right_shape(tmp_path, monkeypatch, capsys):
    path = tmp_path / "empty.onnx"
    _empty_x_model(path)
    ml = onnx_model.read(path)
    by = {l.name: l for l in ml.layers}
    assert by["spatial0"].x_shape == (1, 2, 0, 4) and by["spatial0"].y_shape == (1, 3, 1, 9)  # 0, not unknown
    assert by["batch0"].y_shape == (0, 3, 7, 9)
    hosts = _fake_host(monkeypatch)
    code = model_runner.main(str(path), chain=True)
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 0, lines
    line = {l.split()[1].rstrip(":"): l for l in lines[1:-1]}
    # y is the bias broadcast over [1,3,1,9], and an empty [0,3,7,9]: each checked against onnxruntime's
    for name in ("spatial0", "batch0"):
        assert line[name].startswith(f"PASS {name} ") and line[name].endswith(
            "[reference] max_abs_err=0 (atol 0.00018) | x is empty: not timed"), line[name]
    assert line["after"].startswith("PASS after ")
    assert line["chain"] == "SKIP chain: its x is empty [1,2,0,4]; each layer ran alone, untimed"
    assert lines[-1] == "3 passed, 0 failed, 1 skipped"
    assert hosts[0].cut_runs == [f"layer{by['after'].index}.onnx"]  # the empty ones never reach the model page


def test_nan_and_inf_weights_pass_where_y_has_the_references_nans_and_infinities(tmp_path, monkeypatch, capsys):
    w = RNG.uniform(-1, 1, (4, 2, 3, 3)).astype(np.float32)
    w[0, 0, 1, 1], w[1, 1, 0, 0], w[2, 0, 2, 2] = np.nan, np.inf, -np.inf
    path = tmp_path / "nonfinite.onnx"
    onnx.save(_layers_model([{"strides": [2, 2]}], inits={0: numpy_helper.from_array(w, "w0")}), path)
    _fake_host(monkeypatch)
    assert model_runner.main(str(path)) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[1].startswith("PASS L0 ") and lines[-1] == "1 passed, 0 failed", lines
    ml = onnx_model.read(path)
    x = onnx_model.seeded_input(ml.layers[0].x_shape, "float32", 0)
    want = model_runner.ort_cpu(onnx_model.one_node(ml, ml.layers[0]).SerializeToString(), x)
    assert np.isnan(want).any() and np.isposinf(want).any() and np.isneginf(want).any()
    # and a y with one NaN moved is a FAIL that says where
    got = want.copy()
    got[np.unravel_index(np.flatnonzero(np.isnan(want))[0], want.shape)] = 0
    ok, _, why = model_runner.check(got, want, 1e-4, 1e-4)
    assert not ok and "NaNs must be in the same places, infinities equal" in why


@pytest.mark.browser
def test_empty_x_non_finite_weights_and_odd_names_in_chromium(tmp_path):
    path = tmp_path / "odd.onnx"
    _empty_x_model(path, nonfinite=True)
    model = onnx.load(path)
    model.graph.node[1].name = "after\x1b[31m\n"
    onnx.save(model, path)
    out = cli(path, "--runs", "1", timeout=600)
    lines = out.stdout.strip().splitlines()
    assert out.returncode == 0 and lines[-1] == "4 passed, 0 failed", out.stdout + out.stderr[-3000:]
    status = {l.split()[1].rstrip(":"): l for l in lines[1:-1]}
    # y [1,3,1,9] is the bias (one fill, x and w unread); y [0,3,7,9] holds nothing to compute
    for name, x, variant in (("spatial0", "1,2,0,4", "empty_input_fill"), ("batch0", "0,2,3,4", "none (empty output)")):
        assert status[name].startswith(f"PASS {name} x[{x}] ") and f"[{variant}]" in status[name], status[name]
        assert status[name].endswith("| x is empty: not timed"), status[name]
    assert status[r"after\x1b[31m\n"].startswith(r"PASS after\x1b[31m\n x[1,3,1,9] ")
    assert status["nonfinite"].startswith("PASS nonfinite x[1,2,3,4] "), status["nonfinite"]
