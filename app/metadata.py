"""metadata.json: kernel id, per-variant templates with sha256 digests, requirements and provenance, and
every template file's digest (the seed's names among them: thin entries over rank-generic templates).

`build()` derives it from the variant table and the template files; tools/gen_metadata.py writes it and a
test checks that the committed file equals a fresh build, so digests never go stale. The package
revision is a 40-hex sha1 over the manifest and every template digest: it changes whenever a kernel's
source or the contract does.
"""
from __future__ import annotations

import hashlib
import json
from functools import lru_cache

from . import contract
from .contract import ROOT
from .render import SHARED_TEMPLATES, TEMPLATES
from .variants import VARIANTS

METADATA_PATH = ROOT / "metadata.json"
PROVENANCE = ("Written for this package from the ONNX ConvTranspose definition (opsets 11-22); "
              "checked against a float64 numpy reference and onnxruntime's CPU provider.")


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build() -> dict:
    digests = {p.name: _digest(p) for p in sorted(TEMPLATES.glob("*.wgsl.jinja"))}
    revision = hashlib.sha1(json.dumps({"manifest": _digest(contract.MANIFEST_PATH), "templates": digests},
                                       sort_keys=True).encode()).hexdigest()
    return {
        "kernel": contract.kernel_id(),
        "contract_version": contract.contract_version(),
        "revision": revision,
        "variants": [
            {"name": v.name, "summary": v.summary,
             "templates": [{"file": t, "sha256": digests[t]} for t in v.templates],
             "requires": v.requirements(),
             "provenance": PROVENANCE}
            for v in VARIANTS.values()
        ],
        "shared_templates": [{"file": t, "sha256": digests[t], "purpose": purpose}
                             for t, purpose in SHARED_TEMPLATES.items()],
        "templates": [{"file": t, "sha256": d} for t, d in digests.items()],
    }


@lru_cache(maxsize=1)
def recorded() -> dict:
    return json.loads(METADATA_PATH.read_text())
