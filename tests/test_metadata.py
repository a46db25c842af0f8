"""metadata.json never goes stale, and kernel lookup refuses unknown ids, versions and revisions."""
import json

import pytest

import app
from app.metadata import METADATA_PATH, build


def test_metadata_matches_the_templates_and_variants():
    assert json.loads(METADATA_PATH.read_text()) == build(), "run: python tools/gen_metadata.py"


def test_revision_is_40_hex():
    revision = build()["revision"]
    assert len(revision) == 40 and int(revision, 16) >= 0


@pytest.mark.parametrize("kwargs, message", [
    ({"kernel_id": "webgpu-kernels/ai.onnx.Conv"}, "unknown kernel"),
    ({"version": 2}, "contract version 1"),
    ({"revision": "f" * 40}, "does not match"),
])
def test_get_kernel_refuses(kwargs, message):
    args = {"kernel_id": "webgpu-kernels/ai.onnx.ConvTranspose", "version": 1} | kwargs
    coroutine = app.get_kernel(**args)
    # The refusal comes before the coroutine's first await, so one step runs it (no event loop needed:
    # the browser tests' Playwright already runs one in this thread).
    with pytest.raises(app.KernelNotFoundError, match=message):
        coroutine.send(None)
