"""The docs a newcomer reads first stay whole: docs/design.md names every module of app/ and web/runtime/."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("app", "app/host", "app/variants", "web/runtime")
MODULES = sorted(f"{folder}/{p.name}" for folder in FOLDERS for p in (ROOT / folder).iterdir()
                 if p.suffix in (".py", ".mjs", ".ts") and p.name != "__init__.py")


@pytest.mark.parametrize("module", MODULES)
def test_design_names_every_module(module):
    assert f"| `{module}` |" in (ROOT / "docs" / "design.md").read_text(), \
        f"docs/design.md's 'Every module' table lacks {module} and its one job"
