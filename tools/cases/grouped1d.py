"""Case specs for app/variants/grouped.py at rank 1: grouped and depthwise 1D, every stride >= 2.

Every spec is covered by ncl1d_grouped_stride_phase. They vary the store width (output lengths that are
multiples of 4, of 2 only, odd), the last axis's `pads mod stride` (the phase of an invocation's first
output), cover more than one workgroup, batch > 1, dilation with gcd(s, d) of 1, s and between, kernels
smaller than the stride (outputs no tap reaches), negative pads (SAME_UPPER with k < s, output_shape past
the natural size), output_padding, VALID/SAME_LOWER, vocoder-sized strides, and channel multipliers > 1.
"""


def spec(name, x, w, bias, **attributes):
    return {"name": name, "x": x, "w": w, "bias": bias, "attributes": attributes}


SPECS = [
    spec("dw_k3_s2_p1_op1_bias", [1, 16, 37], [16, 1, 3], True, group=16, strides=[2], pads=[1, 1],
         output_padding=[1]),
    spec("dw_k4_s2_p1_batch2", [2, 8, 40], [8, 1, 4], False, group=8, strides=[2], pads=[1, 1]),
    spec("dw_k2_s3_kernel_lt_stride", [1, 6, 21], [6, 1, 2], False, group=6, strides=[3]),
    spec("dw_k1_s2_only_one_phase", [1, 5, 30], [5, 1, 1], True, group=5, strides=[2], pads=[0, 1]),
    spec("dw_m2_k3_s2_p1_op1", [1, 6, 25], [6, 2, 3], True, group=6, strides=[2], pads=[1, 1], output_padding=[1]),
    spec("g2_c4_m3_k5_s2_asym_pads_batch2", [2, 8, 19], [8, 3, 5], False, group=2, strides=[2], pads=[2, 1]),
    spec("g4_c2_m2_k3_s3_d2_inverse", [1, 8, 17], [8, 2, 3], True, group=4, strides=[3], dilations=[2]),
    spec("dw_s4_d2_gcd2", [1, 4, 15], [4, 1, 3], False, group=4, strides=[4], dilations=[2], pads=[1, 2]),
    spec("dw_s2_d2_step1_bias", [1, 4, 20], [4, 1, 3], True, group=4, strides=[2], dilations=[2]),
    spec("dw_same_upper_k2_s3_negative_pad", [1, 4, 13], [4, 1, 2], False, group=4, strides=[3],
         auto_pad="SAME_UPPER"),
    spec("g2_output_shape_past_natural", [1, 4, 10], [4, 2, 3], True, group=2, strides=[2], output_shape=[22]),
    spec("dw_valid_k4_s2", [1, 6, 11], [6, 1, 4], False, group=6, strides=[2], auto_pad="VALID"),
    spec("g3_same_lower_k4_s2", [1, 6, 12], [6, 2, 4], True, group=3, strides=[2], auto_pad="SAME_LOWER"),
    spec("dw_k16_s8_p4_vocoder", [1, 4, 20], [4, 1, 16], True, group=4, strides=[8], pads=[4, 4]),
    spec("g2_c8_m4_k4_s2_d3", [1, 16, 18], [16, 4, 4], False, group=2, strides=[2], dilations=[3], pads=[1, 1]),
    spec("dw_k3_s2_op1_batch3", [3, 5, 9], [5, 1, 3], False, group=5, strides=[2], output_padding=[1]),
    spec("dw_k5_s2_pads_3_0", [1, 3, 33], [3, 1, 5], True, group=3, strides=[2], pads=[3, 0]),
    spec("dw_m3_s5_k7_op3", [1, 4, 9], [4, 3, 7], False, group=4, strides=[5], pads=[2, 3], output_padding=[3]),
    spec("dw_k4_s2_p1_64ch_long", [1, 64, 100], [64, 1, 4], True, group=64, strides=[2], pads=[1, 1]),
]
