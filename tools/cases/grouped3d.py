"""Case specs for app/variants/grouped.py at rank 3: grouped and depthwise 3D, every stride >= 2.

Every spec is covered by ncdhw3d_grouped_stride_phase. They vary the store width (last output axis a
multiple of 4, of 2 only, odd), the last axis's `pads mod stride`, cover more than one workgroup, batch > 1,
each axis's phase arithmetic (dilation with gcd(s, d) of 1, s and between; kernels smaller than the stride;
negative pads; output_padding; non-cubic strides and kernels; asymmetric pads) and channel multipliers > 1.
"""


def spec(name, x, w, bias, **attributes):
    return {"name": name, "x": x, "w": w, "bias": bias, "attributes": attributes}


SPECS = [
    spec("dw_k3_s2_p1_op1_bias", [1, 4, 4, 5, 6], [4, 1, 3, 3, 3], True, group=4, strides=[2, 2, 2],
         pads=[1, 1, 1, 1, 1, 1], output_padding=[1, 1, 1]),
    spec("dw_k2_s2", [1, 3, 3, 4, 5], [3, 1, 2, 2, 2], False, group=3, strides=[2, 2, 2]),
    spec("dw_k4_s2_p1_batch2", [2, 2, 3, 3, 4], [2, 1, 4, 4, 4], False, group=2, strides=[2, 2, 2],
         pads=[1, 1, 1, 1, 1, 1]),
    spec("g2_c2_m3_k3_s2_p1", [1, 4, 3, 3, 3], [4, 3, 3, 3, 3], True, group=2, strides=[2, 2, 2],
         pads=[1, 1, 1, 1, 1, 1]),
    spec("dw_m2_k3_s223", [1, 3, 3, 4, 3], [3, 2, 3, 3, 3], False, group=3, strides=[2, 2, 3]),
    spec("dw_s2_d2_step1", [1, 2, 3, 3, 4], [2, 1, 3, 3, 3], True, group=2, strides=[2, 2, 2], dilations=[2, 2, 2]),
    spec("dw_s3_d2_inverse_pads", [1, 2, 3, 3, 3], [2, 1, 3, 2, 3], False, group=2, strides=[3, 3, 3],
         dilations=[2, 2, 2], pads=[1, 0, 2, 0, 1, 1]),
    spec("dw_same_upper_k2_s3_negative_pad", [1, 2, 3, 2, 3], [2, 1, 2, 2, 2], False, group=2, strides=[3, 3, 3],
         auto_pad="SAME_UPPER"),
    spec("dw_k3_s2_op_101", [1, 4, 2, 3, 3], [4, 1, 3, 3, 3], True, group=4, strides=[2, 2, 2],
         output_padding=[1, 0, 1]),
    spec("g2_valid_k3_s2", [1, 4, 3, 3, 2], [4, 2, 3, 3, 3], False, group=2, strides=[2, 2, 2], auto_pad="VALID"),
    spec("dw_k1_s2_only_one_phase", [1, 3, 3, 4, 4], [3, 1, 1, 1, 1], True, group=3, strides=[2, 2, 2]),
    spec("dw_k343_s232_asym_pads", [1, 4, 3, 3, 3], [4, 1, 3, 4, 3], False, group=4, strides=[2, 3, 2],
         pads=[0, 1, 2, 1, 0, 2]),
    spec("g2_c2_m2_k2_s2_batch2", [2, 4, 2, 3, 4], [4, 2, 2, 2, 2], True, group=2, strides=[2, 2, 2]),
    spec("g4_c4_m2_k3_s2_p1", [1, 16, 3, 3, 3], [16, 2, 3, 3, 3], False, group=4, strides=[2, 2, 2],
         pads=[1, 1, 1, 1, 1, 1]),
    spec("dw_output_shape_past_natural", [1, 2, 3, 3, 3], [2, 1, 3, 3, 3], True, group=2, strides=[2, 2, 2],
         output_shape=[8, 7, 8]),
    spec("dw_s424_d2_gcd2", [1, 2, 2, 3, 3], [2, 1, 3, 2, 3], False, group=2, strides=[4, 2, 4],
         dilations=[2, 2, 2], pads=[1, 0, 1, 2, 1, 0]),
    spec("dw_k3_s2_p1_op1_6ch_wide", [1, 6, 6, 8, 8], [6, 1, 3, 3, 3], True, group=6, strides=[2, 2, 2],
         pads=[1, 1, 1, 1, 1, 1], output_padding=[1, 1, 1]),
    spec("dw_m2_s3_k5_many_phases", [1, 2, 2, 2, 3], [2, 2, 5, 4, 5], False, group=2, strides=[3, 3, 3],
         pads=[2, 1, 0, 1, 2, 3]),
]
