"""Writes the passes of one variant's launch, rendered for the H200 (docs/results/h200-device.json), as JSON for
tools/gpu/kernel_probe.mjs, which times the main pass on the GPU as rendered and with parts of it cut out
(ablations by text substitution), to see where a kernel's time goes without a profiler.
Usage: python tools/gpu/kernel_probe.py VARIANT 'X' 'W' 'ATTRS' DTYPE 'PARAMS' > probe.json
  e.g. phase_gemm_sgmat '[1,512,128,128]' '[512,256,1,1]' '{}' float16 '{"sg_m":4,"sg_n":2,"cm":2,"cn":4,"kb":2}'"""
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tools.wgsl.matrix import _geom, _h200  # noqa: E402
from app.render import render  # noqa: E402
from app.variants import VARIANTS  # noqa: E402

name, x, w, attrs, dtype, params = sys.argv[1:7]
caps = _h200()
geom = _geom(json.loads(x), json.loads(w), json.loads(attrs), False, dtype)
launch = VARIANTS[name].configured(geom, caps, forced=json.loads(params))
elem = 2 if dtype == "float16" else 4
sizes = {"x": geom.x_size * elem, "w": math.prod(geom.w_shape) * elem, "y": geom.y_size * elem} | launch.scratch | launch.prepared
passes = [{"code": render(d.template, d.render_params), "bindings": list(d.bindings),
           "uniforms": [v for _, v in d.uniforms], "workgroups": list(d.workgroups)}
          for d in (*launch.weight_passes, *launch.dispatches)]
print(json.dumps({"tiles": launch.tiles, "sizes": sizes, "weight_passes": len(launch.weight_passes),
                  "passes": passes, "flop": 2 * geom.multiply_adds(),
                  "bytes": sizes["x"] + sizes["w"] + sizes["y"]}))
