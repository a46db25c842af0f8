"""Case specs for app/variants/halo_sgmat.py (stride1_halo_sgmat): stride 1, out-channels per group a
multiple of 8 and at least 16 (its right matrices are read straight from the packed weights), so that the
variant covers them; every one also as float16 (F16_EVERY = 1: the variant runs where subgroup matrices of
f16 exist, an H200 here). Boxes are 128 outputs (4 x 16 x 2 in 3D, 8 x 16 in 2D): sizes are odd so that no box
divides them, halos cross every edge of x, and the in-channels end inside a chunk of 16.
"""

F16_EVERY = 1

SPECS = [
    {"name": "h1d_pads_dil", "x": [2, 9, 150], "w": [9, 16, 5], "bias": True,
     "attributes": {"dilations": [2], "pads": [3, 1]}},
    {"name": "h1d_grouped_output_shape", "x": [1, 24, 70], "w": [24, 16, 4], "bias": False,
     "attributes": {"group": 2, "output_shape": [73]}},
    {"name": "h2d_pad1_bias", "x": [1, 20, 19, 37], "w": [20, 24, 3, 3], "bias": True,
     "attributes": {"pads": [1, 1, 1, 1]}},
    {"name": "h2d_dilated_asym_batch", "x": [2, 17, 11, 21], "w": [17, 16, 3, 2], "bias": False,
     "attributes": {"dilations": [2, 3], "pads": [2, 0, 1, 3]}},
    {"name": "h2d_same_lower", "x": [1, 16, 9, 17], "w": [16, 40, 4, 3], "bias": True,
     "attributes": {"auto_pad": "SAME_LOWER"}},
    {"name": "h2d_grouped", "x": [1, 32, 10, 18], "w": [32, 16, 3, 3], "bias": True,
     "attributes": {"group": 2, "pads": [0, 2, 1, 0]}},
    {"name": "h3d_pad1_bias", "x": [1, 20, 5, 6, 19], "w": [20, 16, 3, 3, 3], "bias": True,
     "attributes": {"pads": [1, 1, 1, 1, 1, 1]}},
    {"name": "h3d_dilated_output_shape", "x": [1, 9, 4, 5, 17], "w": [9, 24, 2, 3, 2], "bias": False,
     "attributes": {"dilations": [2, 1, 3], "output_shape": [6, 6, 20]}},
    {"name": "h3d_grouped_wide", "x": [1, 36, 3, 4, 18], "w": [36, 16, 3, 2, 3], "bias": True,
     "attributes": {"group": 2, "pads": [1, 0, 2, 1, 0, 1]}},
]
