"""Proof cases for nchw2d_phase_gemm_tiled (rank 2, dense, every stride >= 2).

Tiles are 16/32/64 rows (batch x a phase's output sub-grid) by 16/32/64 out-channels, 16 in-channels per
reduction chunk: the sizes below straddle those edges, and cover phases with unequal, zero, or no rows.
"""

SPECS = [
    # DCGAN generator block: k4 s2 p1, batch 2, bias; C = 20 ends on a short chunk.
    {"name": "dcgan_k4s2p1_b2_bias", "x": [2, 20, 5, 5], "w": [20, 21, 4, 4], "bias": True,
     "attributes": {"strides": [2, 2], "pads": [1, 1, 1, 1]}},
    # U-Net up-conv k2 s2, batch 3, odd sizes, no bias.
    {"name": "unet_k2s2_b3_odd", "x": [3, 17, 7, 9], "w": [17, 19, 2, 2], "bias": False,
     "attributes": {"strides": [2, 2]}},
    # Past one tile in every dimension: 72 rows per phase (> 64), M = 70 (> 64), C = 37 (3 chunks).
    {"name": "tiles_past_64_rows_cols_k", "x": [1, 37, 8, 9], "w": [37, 70, 2, 2], "bias": True,
     "attributes": {"strides": [2, 2]}},
    # k3 s2 p1 op1: phases with 2x2, 2x1, 1x2, 1x1 taps.
    {"name": "k3s2p1_op1_unequal_taps", "x": [2, 9, 6, 5], "w": [9, 10, 3, 3], "bias": True,
     "attributes": {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}},
    # k1 s2: three of four phases get no tap at all (bias only).
    {"name": "k1s2_zero_tap_phases_bias", "x": [2, 6, 5, 4], "w": [6, 7, 1, 1], "bias": True,
     "attributes": {"strides": [2, 2]}},
    # k1 s3 with output_padding: zero-tap phases and no bias (zeros).
    {"name": "k1s3_op2_zero_taps_no_bias", "x": [1, 5, 4, 3], "w": [5, 6, 1, 1], "bias": False,
     "attributes": {"strides": [3, 3], "output_padding": [2, 1]}},
    # Unequal strides and kernels, asymmetric pads.
    {"name": "s3x2_k5x3_asym_pads", "x": [2, 7, 5, 6], "w": [7, 9, 5, 3], "bias": True,
     "attributes": {"strides": [3, 2], "pads": [2, 1, 0, 2]}},
    # Dilation 2 with stride 2: gcd 2, so only even-offset phases get taps.
    {"name": "dil2_s2_k3_p1", "x": [1, 8, 6, 6], "w": [8, 12, 3, 3], "bias": True,
     "attributes": {"strides": [2, 2], "dilations": [2, 2], "pads": [1, 1, 1, 1]}},
    # Dilation 3 with stride 2 (coprime): every phase gets taps, input step 3 per tap.
    {"name": "dil3_s2_k3_b2", "x": [2, 5, 5, 4], "w": [5, 6, 3, 3], "bias": False,
     "attributes": {"strides": [2, 2], "dilations": [3, 3], "pads": [0, 1, 2, 0]}},
    # Mixed dilations and strides per axis, output_padding.
    {"name": "s2x3_d1x2_op", "x": [1, 6, 5, 4], "w": [6, 8, 3, 2], "bias": True,
     "attributes": {"strides": [2, 3], "dilations": [1, 2], "pads": [1, 0, 0, 1], "output_padding": [1, 2]}},
    # SAME_UPPER with a kernel smaller than the stride: negative pad_begin.
    {"name": "same_upper_k2_s3_negative_pad", "x": [2, 4, 4, 5], "w": [4, 5, 2, 2], "bias": True,
     "attributes": {"strides": [3, 3], "auto_pad": "SAME_UPPER"}},
    # output_shape larger than natural, SAME_LOWER split.
    {"name": "output_shape_same_lower", "x": [1, 6, 5, 5], "w": [6, 7, 3, 3], "bias": False,
     "attributes": {"strides": [2, 2], "auto_pad": "SAME_LOWER", "output_shape": [12, 11]}},
    # Stride 4 with kernel 4: one tap per phase (sub-pixel shuffle), 16 phases.
    {"name": "k4s4_pixel_shuffle_b2", "x": [2, 11, 3, 4], "w": [11, 9, 4, 4], "bias": True,
     "attributes": {"strides": [4, 4]}},
    # 1x1 input: each phase has a single row.
    {"name": "one_pixel_input_k4s2p1", "x": [1, 40, 1, 1], "w": [40, 33, 4, 4], "bias": True,
     "attributes": {"strides": [2, 2], "pads": [1, 1, 1, 1]}},
    # Output smaller than the stride along an axis: some phases own no output at all.
    {"name": "phases_without_rows", "x": [2, 3, 1, 2], "w": [3, 4, 1, 2], "bias": True,
     "attributes": {"strides": [3, 2]}},
    # M = 33 (a 64-wide tile with a tail), rows 20 per phase (32-row tile), C = 16 exactly one chunk.
    {"name": "m33_c16_b5", "x": [5, 16, 2, 2], "w": [16, 33, 4, 4], "bias": False,
     "attributes": {"strides": [2, 2], "pads": [1, 1, 1, 1]}},
    # Large pads cropping most of the output, stride 3.
    {"name": "s3_k5_big_pads", "x": [1, 10, 6, 6], "w": [10, 11, 5, 5], "bias": True,
     "attributes": {"strides": [3, 3], "pads": [4, 3, 3, 4]}},
    # Channels 1 -> many (reduction shorter than a chunk), batch 4.
    {"name": "c1_to_m24_b4", "x": [4, 1, 6, 7], "w": [1, 24, 3, 3], "bias": True,
     "attributes": {"strides": [2, 2], "pads": [1, 0, 1, 0]}},
    # Few rows (9 per phase) and M = 30: a 16 x 32 tile.
    {"name": "rows9_m30_k3s2p1", "x": [1, 20, 3, 3], "w": [20, 30, 3, 3], "bias": True,
     "attributes": {"strides": [2, 2], "pads": [1, 1, 1, 1]}},
    # 18 rows per phase over a batch of 2, M = 25: a 32 x 32 tile.
    {"name": "rows18_m25_b2", "x": [2, 12, 3, 3], "w": [12, 25, 2, 2], "bias": False,
     "attributes": {"strides": [2, 2]}},
    # M = 2 over many rows (a 4-wide tile), stride 3 by 2, batch 3.
    {"name": "m2_narrow_tile_b3", "x": [3, 5, 3, 4], "w": [5, 2, 3, 3], "bias": True,
     "attributes": {"strides": [3, 2], "pads": [1, 0, 1, 0]}},
    # 9 rows per phase, M = 13 (a 16 x 16 tile), C = 9.
    {"name": "rows9_m13_k2s2", "x": [1, 9, 3, 3], "w": [9, 13, 2, 2], "bias": False,
     "attributes": {"strides": [2, 2]}},
]
