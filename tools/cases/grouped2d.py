"""Case specs for app/variants/grouped.py at rank 2: grouped and depthwise 2D, every stride >= 2.

Every spec is covered by nchw2d_grouped_stride_phase. They vary the channel multiplier (M/group of 1, 2, 3,
5, 6, 8, 9, 12, 16) and in-channels per group, the store width (last output axis a multiple of 4, of 2
only, odd), the last axis's `pads mod stride`, cover more than one workgroup, several groups, batch > 1,
and each axis's phase arithmetic: dilation with gcd(s, d) of 1 and > 1, kernels smaller than the stride
(outputs no tap reaches), negative pads (SAME_UPPER with k < s, output_shape past the natural size),
asymmetric pads, output_padding, non-square strides, and many phases (strides 4-6, kernels up to 7).
"""


def spec(name, x, w, bias, **attributes):
    return {"name": name, "x": x, "w": w, "bias": bias, "attributes": attributes}


SPECS = [
    # depthwise, M/group = 1
    spec("dw_k4_s2_p1_odd", [1, 8, 9, 7], [8, 1, 4, 4], True, group=8, strides=[2, 2], pads=[1, 1, 1, 1]),
    spec("dw_k4_s2_p1_batch2", [2, 6, 5, 6], [6, 1, 4, 4], False, group=6, strides=[2, 2], pads=[1, 1, 1, 1]),
    spec("dw_k3_s2_batch2_16ch", [2, 16, 6, 5], [16, 1, 3, 3], True, group=16, strides=[2, 2]),
    spec("dw_k2_s3_kernel_lt_stride", [1, 4, 5, 6], [4, 1, 2, 2], False, group=4, strides=[3, 3]),
    spec("dw_k1_s2_only_one_phase", [1, 3, 6, 5], [3, 1, 1, 1], True, group=3, strides=[2, 2], pads=[0, 1, 1, 0]),
    # depthwise channel multiplier 2
    spec("dw_m2_k3_s2_p1_op1", [1, 5, 7, 9], [5, 2, 3, 3], True, group=5, strides=[2, 2], pads=[1, 1, 1, 1],
         output_padding=[1, 1]),
    spec("dw_m2_k3_s2_asym_pads_batch3", [3, 4, 5, 4], [4, 2, 3, 3], False, group=4, strides=[2, 2],
         pads=[0, 1, 2, 0]),
    spec("dw_m2_k3_s2_same_upper", [1, 6, 6, 7], [6, 2, 3, 3], False, group=6, strides=[2, 2], auto_pad="SAME_UPPER"),
    # grouped, M/group = 8
    spec("g2_c8_m8_k4_s2_p1", [1, 16, 5, 6], [16, 8, 4, 4], True, group=2, strides=[2, 2], pads=[1, 1, 1, 1]),
    spec("g4_c2_m8_k3_s2_batch2", [2, 8, 4, 5], [8, 8, 3, 3], False, group=4, strides=[2, 2], pads=[1, 0, 0, 1]),
    # M/group = 3, 5, 6
    spec("g2_m3_k3_s2_batch2", [2, 6, 5, 5], [6, 3, 3, 3], True, group=2, strides=[2, 2]),
    spec("g3_c3_m5_k3_s3", [1, 9, 4, 5], [9, 5, 3, 3], False, group=3, strides=[3, 3], pads=[1, 2, 0, 1]),
    spec("g2_c2_m6_k2_s2", [1, 4, 6, 7], [4, 6, 2, 2], True, group=2, strides=[2, 2]),
    # M/group = 12, 9
    spec("g2_c1_m12_k3_s2", [1, 2, 5, 4], [2, 12, 3, 3], False, group=2, strides=[2, 2], pads=[1, 1, 1, 1]),
    spec("g3_c2_m9_k3_s2", [1, 6, 4, 4], [6, 9, 3, 3], True, group=3, strides=[2, 2], pads=[1, 1, 1, 1]),
    # dilation: gcd(s, d) = s, gcd 1, gcd 2 < s
    spec("g2_d2_s2_step1", [1, 4, 6, 5], [4, 2, 3, 3], False, group=2, strides=[2, 2], dilations=[2, 2]),
    spec("dw_s32_d23_inverse", [1, 3, 5, 6], [3, 1, 3, 3], True, group=3, strides=[3, 2], dilations=[2, 3],
         pads=[1, 0, 2, 1]),
    spec("g2_s64_d42_gcd2", [2, 4, 3, 4], [4, 3, 3, 3], False, group=2, strides=[6, 4], dilations=[4, 2],
         pads=[2, 1, 0, 3]),
    spec("dw_m2_s3_d2_op", [1, 4, 4, 5], [4, 2, 3, 2], True, group=4, strides=[3, 3], dilations=[2, 2],
         output_padding=[2, 1]),
    # negative pads: SAME_UPPER with k < s, and an output_shape one past the natural size
    spec("dw_same_upper_k2_s3_negative_pad", [1, 4, 5, 4], [4, 1, 2, 2], False, group=4, strides=[3, 3],
         auto_pad="SAME_UPPER"),
    spec("g2_output_shape_past_natural", [1, 4, 5, 5], [4, 2, 3, 3], True, group=2, strides=[2, 2],
         output_shape=[12, 12]),
    # non-square strides, output_padding, large pads, VALID
    spec("g2_s2x3_op", [2, 4, 4, 5], [4, 4, 3, 4], False, group=2, strides=[2, 3], output_padding=[1, 2]),
    spec("dw_s4x2_k5_pads", [1, 5, 5, 6], [5, 1, 5, 5], True, group=5, strides=[4, 2], pads=[3, 2, 4, 1]),
    spec("g4_valid_s2", [1, 8, 5, 3], [8, 4, 3, 3], False, group=4, strides=[2, 2], auto_pad="VALID"),
    spec("g2_same_lower_s2_k4", [1, 6, 5, 6], [6, 4, 4, 4], True, group=2, strides=[2, 2], auto_pad="SAME_LOWER"),
    # long reductions per group, and more than one workgroup
    spec("g2_c16_m2_k3_s2", [1, 32, 4, 4], [32, 2, 3, 3], False, group=2, strides=[2, 2], pads=[1, 1, 1, 1]),
    spec("g8_c8_m8_k4_s2_p1", [1, 64, 4, 5], [64, 8, 4, 4], True, group=8, strides=[2, 2], pads=[1, 1, 1, 1]),
    spec("dw_m4_k4_s2_batch2_wide", [2, 3, 11, 13], [3, 4, 4, 4], False, group=3, strides=[2, 2], pads=[1, 1, 1, 1]),
    spec("g2_c3_m7_k3_s3_tall", [1, 6, 9, 3], [6, 7, 3, 3], True, group=2, strides=[3, 3], pads=[0, 1, 1, 0]),
    spec("dw_m1_s2_batch4", [4, 2, 7, 6], [2, 1, 3, 2], False, group=2, strides=[2, 2], pads=[1, 0, 0, 1],
         output_padding=[1, 1]),
    spec("g5_c1_m3_k3_s2_d3", [1, 5, 6, 5], [5, 3, 3, 3], True, group=5, strides=[2, 2], dilations=[3, 3],
         pads=[2, 2, 1, 1]),
    spec("g2_c4_m16_k2_s2", [1, 8, 5, 4], [8, 16, 2, 2], False, group=2, strides=[2, 2]),
    spec("dw_m8_k3_s2_bias", [1, 2, 5, 5], [2, 8, 3, 3], True, group=2, strides=[2, 2], pads=[1, 1, 1, 1]),
    # many phases: long unrolled bodies
    spec("g2_s5x4_k6_many_phases", [1, 4, 3, 4], [4, 3, 6, 5], False, group=2, strides=[5, 4], pads=[2, 1, 1, 2],
         output_padding=[3, 1]),
    spec("dw_m2_s4x5_k7_many_phases_bias", [2, 3, 3, 3], [3, 2, 7, 6], True, group=3, strides=[4, 5],
         pads=[3, 2, 0, 1]),
    # blocks of 2 or 4 of a group's output channels (M/group even): the seed's blocked kernel,
    # nchw2d_grouped_stride_phase_blocked(_bias), with and without bias
    spec("blocked_g2_c4_m4_k4_s2_p1", [1, 8, 6, 7], [8, 4, 4, 4], True, group=2, strides=[2, 2], pads=[1, 1, 1, 1]),
    spec("blocked_g4_c2_m2_k3_s2_batch2", [2, 8, 5, 5], [8, 2, 3, 3], False, group=4, strides=[2, 2]),
    spec("blocked_dw_m2_k4_s2_p1", [1, 8, 5, 6], [8, 2, 4, 4], True, group=8, strides=[2, 2], pads=[1, 1, 1, 1]),
    spec("blocked_g2_c2_m8_k2_s2", [1, 4, 6, 6], [4, 8, 2, 2], False, group=2, strides=[2, 2]),
    spec("blocked_g3_c2_m4_k3_s2_op1", [1, 6, 5, 4], [6, 4, 3, 3], True, group=3, strides=[2, 2], pads=[1, 1, 1, 1],
         output_padding=[1, 1]),
    spec("blocked_g4_c2_m6_k4_s2_p1", [1, 8, 4, 5], [8, 6, 4, 4], False, group=4, strides=[2, 2], pads=[1, 1, 1, 1]),
    spec("blocked_g2_c3_m4_k3_s3_batch2", [2, 6, 4, 4], [6, 4, 3, 3], False, group=2, strides=[3, 3], pads=[1, 0, 1, 0]),
    spec("blocked_dw_m4_k2_s2_asym", [1, 4, 5, 7], [4, 4, 2, 2], False, group=4, strides=[2, 2], pads=[0, 1, 1, 0]),
]
