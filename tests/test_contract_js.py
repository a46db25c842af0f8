"""web/runtime/contract.mjs, the one copy of the kernel id in web/, says what manifest.json says."""
import re

from app.contract import ROOT, contract_version, kernel_id


def test_web_contract_module_matches_the_manifest():
    text = (ROOT / "web" / "runtime" / "contract.mjs").read_text()
    assert re.search(r'export const KERNEL_ID = "([^"]+)";', text).group(1) == kernel_id()
    assert int(re.search(r"export const CONTRACT_VERSION = (\d+);", text).group(1)) == contract_version()


def test_no_other_web_module_spells_the_kernel_id():
    spelled = [p.name for p in (ROOT / "web").rglob("*.mjs")
               if p.name != "contract.mjs" and kernel_id() in re.sub(r"^\s*//.*$", "", p.read_text(), flags=re.M)]
    assert spelled == []
