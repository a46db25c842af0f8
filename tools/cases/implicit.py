"""Case specs for app/variants/implicit.py.

stride1_implicit_gemm: every spec below (all strides 1, at least 8 in- and out-channels per group, as the
variant requires). Sizes are odd so that no tile divides them, and pass one tile (64-128 pixels, 8-64
out-channels, 4-32 in-channels per reduction step) along every GEMM axis.

SGMAT_SPECS and CONV1X1_SPECS (stride-1 3D and 1x1 shapes with and without bias) were written for the
seed's subgroup-matrix kernels, since replaced by phase_gemm_sgmat (app/variants/phase_gemm.py), which
covers them as it covers every dense case; stride1_implicit_gemm and phase_gemm cover them too.
"""

STRIDE1_SPECS = [
    # 1D
    {"name": "s1_1d_basic", "x": [1, 8, 7], "w": [8, 9, 3], "bias": False, "attributes": {}},
    {"name": "s1_1d_batch_pads_dil", "x": [3, 9, 29], "w": [9, 9, 4], "bias": True,
     "attributes": {"dilations": [2], "pads": [3, 1]}},
    {"name": "s1_1d_long_outpad", "x": [2, 10, 150], "w": [10, 8, 3], "bias": True,
     "attributes": {"dilations": [3], "output_padding": [2], "pads": [0, 4]}},
    {"name": "s1_1d_grouped", "x": [2, 24, 33], "w": [24, 8, 5], "bias": True,
     "attributes": {"group": 3, "pads": [2, 1]}},
    {"name": "s1_1d_output_shape", "x": [1, 8, 20], "w": [8, 11, 5], "bias": False,
     "attributes": {"output_shape": [24]}},
    # 2D
    {"name": "s1_2d_basic", "x": [1, 8, 5, 5], "w": [8, 8, 3, 3], "bias": False, "attributes": {}},
    {"name": "s1_2d_pad1_bias", "x": [2, 9, 11, 10], "w": [9, 13, 3, 3], "bias": True,
     "attributes": {"pads": [1, 1, 1, 1]}},
    {"name": "s1_2d_wide_channels", "x": [1, 37, 6, 7], "w": [37, 70, 3, 2], "bias": True,
     "attributes": {"pads": [1, 0, 1, 1]}},
    {"name": "s1_2d_dilated_asym", "x": [2, 10, 9, 8], "w": [10, 9, 3, 2], "bias": False,
     "attributes": {"dilations": [2, 3], "pads": [2, 0, 1, 3]}},
    {"name": "s1_2d_outpad_dilation", "x": [1, 8, 6, 5], "w": [8, 10, 2, 3], "bias": True,
     "attributes": {"dilations": [3, 2], "output_padding": [2, 1]}},
    {"name": "s1_2d_grouped", "x": [3, 16, 7, 9], "w": [16, 8, 3, 3], "bias": True,
     "attributes": {"group": 2, "pads": [1, 2, 0, 1]}},
    {"name": "s1_2d_grouped_wide", "x": [1, 36, 5, 5], "w": [36, 9, 3, 3], "bias": False,
     "attributes": {"group": 4, "pads": [1, 1, 1, 1]}},
    {"name": "s1_2d_same_upper", "x": [1, 8, 9, 6], "w": [8, 9, 4, 3], "bias": True,
     "attributes": {"auto_pad": "SAME_UPPER"}},
    {"name": "s1_2d_same_lower_dil", "x": [2, 8, 7, 7], "w": [8, 8, 2, 4], "bias": False,
     "attributes": {"auto_pad": "SAME_LOWER", "dilations": [2, 1]}},
    {"name": "s1_2d_output_shape_at_bound", "x": [1, 8, 5, 6], "w": [8, 8, 3, 3], "bias": True,
     "attributes": {"output_shape": [7, 8]}},
    {"name": "s1_2d_1x1_valid", "x": [2, 19, 9, 9], "w": [19, 21, 1, 1], "bias": True,
     "attributes": {"auto_pad": "VALID"}},
    {"name": "s1_2d_long_reduction", "x": [1, 70, 5, 5], "w": [70, 9, 3, 3], "bias": False,
     "attributes": {"pads": [1, 1, 1, 1]}},
    # 3D
    {"name": "s1_3d_basic", "x": [1, 8, 3, 3, 3], "w": [8, 8, 2, 2, 2], "bias": False, "attributes": {}},
    {"name": "s1_3d_pad1_bias", "x": [2, 8, 5, 6, 7], "w": [8, 17, 3, 3, 3], "bias": True,
     "attributes": {"pads": [1, 1, 1, 1, 1, 1]}},
    {"name": "s1_3d_dilated_asym", "x": [1, 8, 5, 4, 6], "w": [8, 9, 2, 3, 2], "bias": False,
     "attributes": {"dilations": [2, 1, 3], "pads": [0, 1, 2, 1, 0, 1]}},
    {"name": "s1_3d_grouped_outpad", "x": [2, 16, 4, 5, 3], "w": [16, 8, 3, 2, 2], "bias": True,
     "attributes": {"group": 2, "dilations": [2, 2, 1], "output_padding": [1, 0, 0], "pads": [1, 0, 0, 1, 1, 0]}},
    {"name": "s1_3d_1x1", "x": [1, 9, 4, 5, 6], "w": [9, 11, 1, 1, 1], "bias": False, "attributes": {}},
]

# The subgroup-matrix variants' own cases (run them with --variant on a device that has the feature).
SGMAT_SPECS = [
    {"name": "sg3d_basic", "x": [1, 8, 4, 4, 4], "w": [8, 8, 3, 3, 3], "bias": False,
     "attributes": {"pads": [1, 1, 1, 1, 1, 1]}},
    {"name": "sg3d_odd", "x": [1, 9, 3, 5, 7], "w": [9, 11, 2, 3, 2], "bias": False, "attributes": {}},
    {"name": "sg3d_batch", "x": [3, 8, 3, 4, 5], "w": [8, 9, 3, 2, 3], "bias": False,
     "attributes": {"pads": [1, 0, 1, 0, 1, 1]}},
    {"name": "sg3d_dilated", "x": [1, 10, 4, 4, 5], "w": [10, 10, 2, 2, 3], "bias": False,
     "attributes": {"dilations": [2, 3, 1]}},
    {"name": "sg3d_wide", "x": [1, 20, 3, 3, 3], "w": [20, 40, 3, 3, 3], "bias": False,
     "attributes": {"pads": [1, 1, 1, 1, 1, 1]}},
    {"name": "sg3d_grouped", "x": [2, 16, 3, 4, 4], "w": [16, 8, 2, 2, 2], "bias": False,
     "attributes": {"group": 2}},
    {"name": "sg3d_outpad", "x": [1, 8, 3, 3, 4], "w": [8, 8, 2, 2, 2], "bias": False,
     "attributes": {"dilations": [2, 2, 2], "output_padding": [1, 1, 0], "pads": [0, 1, 1, 0, 0, 1]}},
    {"name": "sg3d_long_k", "x": [1, 33, 3, 3, 3], "w": [33, 8, 3, 3, 3], "bias": False,
     "attributes": {"pads": [1, 1, 1, 1, 1, 1]}},
    {"name": "sg3d_one_pixel", "x": [1, 8, 1, 1, 1], "w": [8, 8, 1, 1, 1], "bias": False, "attributes": {}},
    {"name": "sg3d_output_shape", "x": [1, 8, 3, 3, 3], "w": [8, 9, 3, 3, 3], "bias": False,
     "attributes": {"output_shape": [5, 5, 5]}},
    {"name": "sg3d_same_upper", "x": [2, 8, 3, 4, 3], "w": [8, 10, 2, 3, 2], "bias": False,
     "attributes": {"auto_pad": "SAME_UPPER"}},
    {"name": "sg3d_many_pixels", "x": [2, 8, 9, 9, 9], "w": [8, 8, 2, 2, 2], "bias": False, "attributes": {}},
    {"name": "sg3d_target", "x": [1, 16, 8, 8, 8], "w": [16, 16, 3, 3, 3], "bias": False,
     "attributes": {"pads": [1, 1, 1, 1, 1, 1]}},
    {"name": "sg3d_grouped_wide", "x": [1, 24, 4, 4, 4], "w": [24, 12, 3, 3, 3], "bias": False,
     "attributes": {"group": 2, "pads": [1, 1, 1, 1, 1, 1]}},
    {"name": "sg3d_17ch", "x": [1, 17, 3, 4, 5], "w": [17, 17, 1, 2, 3], "bias": False,
     "attributes": {"pads": [0, 1, 1, 0, 0, 1]}},
]
SGMAT_SPECS += [spec | {"name": spec["name"] + "_bias", "bias": True} for spec in SGMAT_SPECS]

CONV1X1_SPECS = [
    {"name": "c1_2d_basic", "x": [1, 8, 4, 4], "w": [8, 8, 1, 1], "bias": False, "attributes": {}},
    {"name": "c1_2d_odd", "x": [1, 9, 5, 9], "w": [9, 11, 1, 1], "bias": True, "attributes": {}},
    {"name": "c1_2d_batch", "x": [3, 16, 7, 7], "w": [16, 24, 1, 1], "bias": True, "attributes": {}},
    {"name": "c1_2d_wide", "x": [1, 40, 6, 6], "w": [40, 70, 1, 1], "bias": False, "attributes": {}},
    {"name": "c1_2d_long_k", "x": [1, 100, 3, 5], "w": [100, 9, 1, 1], "bias": True, "attributes": {}},
    {"name": "c1_2d_grouped", "x": [2, 24, 5, 5], "w": [24, 8, 1, 1], "bias": True, "attributes": {"group": 3}},
    {"name": "c1_2d_many_pixels", "x": [1, 8, 41, 43], "w": [8, 9, 1, 1], "bias": False, "attributes": {}},
    {"name": "c1_2d_valid", "x": [2, 9, 6, 5], "w": [9, 10, 1, 1], "bias": False, "attributes": {"auto_pad": "VALID"}},
    {"name": "c1_2d_dilation", "x": [1, 10, 4, 4], "w": [10, 8, 1, 1], "bias": True,
     "attributes": {"dilations": [2, 3]}},
    {"name": "c1_1d", "x": [2, 10, 37], "w": [10, 10, 1], "bias": True, "attributes": {}},
    {"name": "c1_1d_long", "x": [1, 8, 300], "w": [8, 8, 1], "bias": False, "attributes": {}},
    {"name": "c1_3d", "x": [1, 10, 3, 4, 5], "w": [10, 12, 1, 1, 1], "bias": True, "attributes": {}},
    {"name": "c1_3d_batch", "x": [2, 8, 5, 5, 5], "w": [8, 9, 1, 1, 1], "bias": False, "attributes": {}},
    {"name": "c1_one_pixel", "x": [1, 8, 1, 1], "w": [8, 8, 1, 1], "bias": False, "attributes": {}},
    {"name": "c1_2d_grouped_wide", "x": [1, 32, 5, 5], "w": [32, 16, 1, 1], "bias": True,
     "attributes": {"group": 2}},
    {"name": "c1_2d_17", "x": [2, 17, 3, 3], "w": [17, 17, 1, 1], "bias": False, "attributes": {}},
]

SPECS = STRIDE1_SPECS + SGMAT_SPECS + CONV1X1_SPECS
