"""Every pass declares its workgroup's invocations (app/plan.py Dispatch.invocations), which the cost model reads:
the declaration must be what the template renders, on every plan of the shader matrix (each variant's defaults
and tuning candidates, every device and geometry of tools/wgsl/matrix.py)."""
import itertools
import math
import re

from app import tuner
from app.plan import Refusal
from app.render import render
from app.variants import VARIANTS
from tools.wgsl.matrix import devices, geometries

WORKGROUP_SIZE = re.compile(r"@workgroup_size\(([^)]*)\)")


def rendered_invocations(template: str, params: dict) -> int:
    match = WORKGROUP_SIZE.search(render(template, params))
    return math.prod(int(v) for v in match.group(1).split(",") if v.strip())


def plans():
    grids = tuner.grids()
    for caps, geom in itertools.product(devices().values(), geometries()):
        for name, variant in VARIANTS.items():
            options = [None]
            if variant.tunable is not None:
                options += tuner.candidates(name, grids.get(name, {}), geom, caps)[1:3]
            for params in options:
                plan = variant.configured(geom, caps, forced=params)
                if not isinstance(plan, Refusal):
                    yield plan


def test_every_pass_declares_the_invocations_its_template_renders():
    checked, wrong = set(), []
    for plan in plans():
        for d in plan.dispatches + plan.weight_passes:
            key = (d.template, repr(sorted((k, repr(v)) for k, v in d.render_params.items())))
            if key in checked:
                continue
            checked.add(key)
            got = rendered_invocations(d.template, d.render_params)
            if got != d.invocations:
                wrong.append(f"{plan.variant} {d.template}: declares {d.invocations}, renders {got}")
    assert len(checked) > 100 and not wrong, wrong[:10]
