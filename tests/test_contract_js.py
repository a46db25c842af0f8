"""web/runtime/contract.mjs, the one copy of the kernel id in web/, says what manifest.json says; the JS input
checks read their dtypes from it."""
import json
import re
import subprocess

import pytest

from app.contract import ROOT, contract_version, kernel_id
from app.errors import ConvTransposeError
from app.tensors import as_array


def test_web_contract_module_matches_the_manifest():
    text = (ROOT / "web" / "runtime" / "contract.mjs").read_text()
    assert re.search(r'export const KERNEL_ID = "([^"]+)";', text).group(1) == kernel_id()
    assert int(re.search(r"export const CONTRACT_VERSION = (\d+);", text).group(1)) == contract_version()
    # what a revisit accepts before Python is up: the manifest's input dtypes, as tensors.mjs inputDtypes reads them
    manifest = json.loads((ROOT / "manifest.json").read_text())
    dtypes = sorted({c["dtype"] for i in manifest["inputs"] for c in manifest["type_constraints"][i["type"]]})
    assert json.loads(re.search(r"export const DTYPES = (\[[^\]]*\]);", text).group(1)) == dtypes


def test_no_other_web_module_spells_the_kernel_id():
    spelled = [p.name for p in (ROOT / "web").rglob("*.mjs")
               if p.name != "contract.mjs" and kernel_id() in re.sub(r"^\s*//.*$", "", p.read_text(), flags=re.M)]
    assert spelled == []


def test_js_input_checks_take_their_dtypes_from_the_manifest_and_refuse_as_python_does():
    """web/runtime/tensors.mjs reads the allowed dtypes from manifest.json's type constraints (a changed
    manifest changes them), and refuses another dtype listing what app/tensors.py lists."""
    manifest = json.loads((ROOT / "manifest.json").read_text())
    narrowed = json.loads(json.dumps(manifest))
    narrowed["type_constraints"]["T"] = [c for c in narrowed["type_constraints"]["T"] if c["dtype"] == "float32"]
    module = (ROOT / "web" / "runtime" / "tensors.mjs").as_uri()
    script = f"""import({json.dumps(module)}).then((m) => {{
        const refusal = (dtypes, dtype = "float64") => {{ try {{ m.tensor("x", {{data: [1], shape: [1], dtype}}, dtypes); }}
                                       catch (e) {{ return e.message; }} }};
        const shipped = m.inputDtypes({json.dumps(manifest)}), narrowed = m.inputDtypes({json.dumps(narrowed)});
        console.log(JSON.stringify({{shipped, narrowed, refusal: refusal(shipped),
            half: m.tensor("x", {{data: new Uint16Array(1), shape: [1], dtype: "float16"}}, shipped).dtype,
            halfNarrowed: refusal(narrowed, "float16") ?? null}}));
    }})"""
    out = json.loads(subprocess.run(["node", "-e", script], capture_output=True, text=True, check=True).stdout)
    allowed = sorted({c["dtype"] for c in manifest["type_constraints"]["T"]})
    assert out["shipped"] == allowed and out["narrowed"] == ["float32"]
    with pytest.raises(ConvTransposeError) as python:
        as_array("x", {"data": [1.0], "shape": [1], "dtype": "float64"})
    # the same allowed list as Python's (the dtype itself is quoted as JSON in JS, as repr in Python)
    assert out["refusal"].startswith("input 'x': dtype \"float64\" is not supported")
    assert out["refusal"].split("allowed: ")[1] == str(python.value).split("allowed: ")[1]
    assert out["half"] == "float16" and "allowed: ['float32']" in out["halfNarrowed"]
