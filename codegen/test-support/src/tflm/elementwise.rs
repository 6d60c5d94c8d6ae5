//! Pooling and elementwise binary ops.

use super::*;

// ---------------------------------------------------------------------------------------------
// Pooling
// ---------------------------------------------------------------------------------------------

/// The parameters of AVERAGE_POOL_2D / MAX_POOL_2D. Input and output share `quant` (TFLM
/// requires it); it only feeds the activation range.
#[derive(Clone, Copy, Debug)]
pub struct PoolParams {
    /// NHWC.
    pub input_shape: [usize; 4],
    /// `[height, width]`.
    pub filter: [usize; 2],
    /// `[height, width]`.
    pub stride: [usize; 2],
    pub padding: Padding,
    pub activation: Activation,
    pub quant: Quant,
}

impl PoolParams {
    /// Output size and padding (dilation 1).
    pub fn padding_values(&self) -> PaddingValues {
        compute_padding_height_width(
            self.stride,
            [1, 1],
            [self.input_shape[1], self.input_shape[2]],
            self.filter,
            self.padding,
        )
    }

    /// NHWC output shape.
    pub fn output_shape(&self) -> [usize; 4] {
        let pad = self.padding_values();
        [
            self.input_shape[0],
            pad.out_height,
            pad.out_width,
            self.input_shape[3],
        ]
    }

    /// Calls `visit(out_index, window values)` for every output element, with the in-bounds
    /// input values of its window.
    fn for_each_window(&self, input: &[i8], mut visit: impl FnMut(usize, &[i8])) {
        assert_eq!(
            input.len(),
            self.input_shape.iter().product::<usize>(),
            "input length"
        );
        let out_shape = self.output_shape();
        let pad = self.padding_values();
        let [_, in_h, in_w, _] = self.input_shape;
        let mut window = Vec::new();
        for batch in 0..out_shape[0] {
            for out_y in 0..out_shape[1] {
                for out_x in 0..out_shape[2] {
                    for channel in 0..out_shape[3] {
                        window.clear();
                        for fy in 0..self.filter[0] {
                            let Some(in_y) =
                                tap_coordinate(out_y, self.stride[0], pad.height, 1, fy, in_h)
                            else {
                                continue;
                            };
                            for fx in 0..self.filter[1] {
                                let Some(in_x) =
                                    tap_coordinate(out_x, self.stride[1], pad.width, 1, fx, in_w)
                                else {
                                    continue;
                                };
                                window.push(
                                    input[offset4(self.input_shape, batch, in_y, in_x, channel)],
                                );
                            }
                        }
                        visit(offset4(out_shape, batch, out_y, out_x, channel), &window);
                    }
                }
            }
        }
    }

    fn activation_range(&self) -> (i32, i32) {
        calculate_activation_range_quantized(
            self.activation,
            self.quant.scale,
            self.quant.zero_point,
            -128,
            127,
        )
    }
}

/// Int8 AVERAGE_POOL_2D (`reference_integer_ops::AveragePool`): the raw int8 values of the
/// in-bounds part of each window are summed and divided by their count `n`, rounding half away
/// from zero (`(acc ± n/2) / n`, truncating); clamp. An empty window is an error in TFLM.
pub fn average_pool2d(p: &PoolParams, input: &[i8]) -> Vec<i8> {
    let (act_min, act_max) = p.activation_range();
    let mut output = vec![0i8; p.output_shape().iter().product()];
    p.for_each_window(input, |index, window| {
        let count = window.len() as i32;
        assert!(count > 0, "average pool window entirely in padding");
        let sum: i32 = window.iter().map(|&v| v as i32).sum();
        let average = if sum > 0 {
            (sum + count / 2) / count
        } else {
            (sum - count / 2) / count
        };
        output[index] = clamp_to(average, act_min, act_max) as i8;
    });
    output
}

/// Int8 MAX_POOL_2D (`reference_integer_ops::MaxPool`): the maximum over the in-bounds part of
/// each window (-128 for an empty one), clamped to the activation range.
pub fn max_pool2d(p: &PoolParams, input: &[i8]) -> Vec<i8> {
    let (act_min, act_max) = p.activation_range();
    let mut output = vec![0i8; p.output_shape().iter().product()];
    p.for_each_window(input, |index, window| {
        let mut max = i8::MIN as i32;
        for &v in window {
            max = max.max(v as i32);
        }
        output[index] = clamp_to(max, act_min, act_max) as i8;
    });
    output
}

// ---------------------------------------------------------------------------------------------
// Elementwise binary ops
// ---------------------------------------------------------------------------------------------

/// The parameters of ADD / SUB / MUL: shapes (broadcast NumPy-style, right-aligned, up to any
/// rank), quantization of both inputs and the output, fused activation.
#[derive(Clone, Copy, Debug)]
pub struct BinaryParams<'a> {
    pub input1_shape: &'a [usize],
    pub input1: Quant,
    pub input2_shape: &'a [usize],
    pub input2: Quant,
    pub output: Quant,
    pub activation: Activation,
}

/// The broadcast output shape of two shapes (each dimension equal, or 1 on one side).
pub fn broadcast_shape(shape1: &[usize], shape2: &[usize]) -> Vec<usize> {
    let rank = shape1.len().max(shape2.len());
    let dim = |shape: &[usize], i: usize| -> usize {
        let missing = rank - shape.len();
        if i < missing {
            1
        } else {
            shape[i - missing]
        }
    };
    (0..rank)
        .map(|i| {
            let (a, b) = (dim(shape1, i), dim(shape2, i));
            assert!(
                a == b || a == 1 || b == 1,
                "shapes {shape1:?} and {shape2:?} do not broadcast"
            );
            if a == 1 {
                b
            } else {
                a
            }
        })
        .collect()
}

/// Applies `f` elementwise over the broadcast of `a` (of `shape1`) and `b` (of `shape2`).
pub(super) fn broadcast_apply<T: Copy, U>(
    shape1: &[usize],
    a: &[T],
    shape2: &[usize],
    b: &[T],
    f: impl Fn(T, T) -> U,
) -> Vec<U> {
    assert_eq!(a.len(), shape1.iter().product::<usize>(), "input1 length");
    assert_eq!(b.len(), shape2.iter().product::<usize>(), "input2 length");
    let out_shape = broadcast_shape(shape1, shape2);
    let rank = out_shape.len();
    let padded = |shape: &[usize]| -> Vec<usize> {
        let mut full = vec![1; rank - shape.len()];
        full.extend_from_slice(shape);
        full
    };
    let (full1, full2) = (padded(shape1), padded(shape2));
    let total: usize = out_shape.iter().product();
    let mut out = Vec::with_capacity(total);
    let mut coords = vec![0usize; rank];
    for flat in 0..total {
        // Decompose `flat` into output coordinates, last dimension fastest.
        let mut rest = flat;
        for d in (0..rank).rev() {
            coords[d] = rest % out_shape[d];
            rest /= out_shape[d];
        }
        let (mut index1, mut index2) = (0usize, 0usize);
        for d in 0..rank {
            index1 = index1 * full1[d] + if full1[d] == 1 { 0 } else { coords[d] };
            index2 = index2 * full2[d] + if full2[d] == 1 { 0 } else { coords[d] };
        }
        out.push(f(a[index1], b[index2]));
    }
    out
}

/// The quantized add/sub of one pair of values (`AddFunc` / `SubElementwise`): each input
/// `(x − zp) << left_shift` scaled by its multiplier, summed (or subtracted), scaled by the
/// output multiplier, `+ zp_out`, clamp.
pub(super) fn add_sub_one(
    x1: i32,
    x2: i32,
    p: &BinaryParams,
    q: &AddSubParams,
    subtract: bool,
    range: (i32, i32),
) -> i32 {
    let shifted1 = (x1 - p.input1.zero_point).wrapping_mul(1 << q.left_shift);
    let shifted2 = (x2 - p.input2.zero_point).wrapping_mul(1 << q.left_shift);
    let scaled1 = multiply_by_quantized_multiplier_smaller_than_one_exp(
        shifted1,
        q.input1_multiplier,
        q.input1_shift,
    );
    let scaled2 = multiply_by_quantized_multiplier_smaller_than_one_exp(
        shifted2,
        q.input2_multiplier,
        q.input2_shift,
    );
    let raw = if subtract {
        scaled1.wrapping_sub(scaled2)
    } else {
        scaled1.wrapping_add(scaled2)
    };
    let out = multiply_by_quantized_multiplier_smaller_than_one_exp(
        raw,
        q.output_multiplier,
        q.output_shift,
    )
    .wrapping_add(p.output.zero_point);
    clamp_to(out, range.0, range.1)
}

pub(super) fn activation_range_of(p: &BinaryParams, qmin: i32, qmax: i32) -> (i32, i32) {
    calculate_activation_range_quantized(
        p.activation,
        p.output.scale,
        p.output.zero_point,
        qmin,
        qmax,
    )
}

/// Int8 ADD (`reference_integer_ops::Add` / `BroadcastAdd6DSlow`), with [`add_params`] and
/// left shift 20.
pub fn add(p: &BinaryParams, input1: &[i8], input2: &[i8]) -> Vec<i8> {
    let q = add_params(p.input1.scale, p.input2.scale, p.output.scale, 20);
    let range = activation_range_of(p, -128, 127);
    broadcast_apply(p.input1_shape, input1, p.input2_shape, input2, |a, b| {
        add_sub_one(a as i32, b as i32, p, &q, false, range) as i8
    })
}

/// Int16 ADD (`reference_ops::AddGeneralParamScale`, the path TFLM takes): as [`add`] with left
/// shift 15 and the int16 range.
pub fn add_i16(p: &BinaryParams, input1: &[i16], input2: &[i16]) -> Vec<i16> {
    let q = add_params(p.input1.scale, p.input2.scale, p.output.scale, 15);
    let range = activation_range_of(p, -32768, 32767);
    broadcast_apply(p.input1_shape, input1, p.input2_shape, input2, |a, b| {
        add_sub_one(a as i32, b as i32, p, &q, false, range) as i16
    })
}

/// Int8 SUB (`reference_ops::Sub` / `BroadcastQuantSubSlow`), with [`sub_params`] (float set-up)
/// and left shift 20.
pub fn sub(p: &BinaryParams, input1: &[i8], input2: &[i8]) -> Vec<i8> {
    let q = sub_params(p.input1.scale, p.input2.scale, p.output.scale, 20);
    let range = activation_range_of(p, -128, 127);
    broadcast_apply(p.input1_shape, input1, p.input2_shape, input2, |a, b| {
        add_sub_one(a as i32, b as i32, p, &q, true, range) as i8
    })
}

/// Int16 SUB: as [`sub`] with left shift 15 and the int16 range.
pub fn sub_i16(p: &BinaryParams, input1: &[i16], input2: &[i16]) -> Vec<i16> {
    let q = sub_params(p.input1.scale, p.input2.scale, p.output.scale, 15);
    let range = activation_range_of(p, -32768, 32767);
    broadcast_apply(p.input1_shape, input1, p.input2_shape, input2, |a, b| {
        add_sub_one(a as i32, b as i32, p, &q, true, range) as i16
    })
}

/// Int8 MUL (`reference_integer_ops::Mul` / `BroadcastMul6DSlow`):
/// `zp_out + MBQM((x1 − zp1) · (x2 − zp2), M, shift)` with [`mul_multiplier`], clamp.
pub fn mul(p: &BinaryParams, input1: &[i8], input2: &[i8]) -> Vec<i8> {
    let (multiplier, shift) = mul_multiplier(p.input1.scale, p.input2.scale, p.output.scale);
    let (act_min, act_max) = activation_range_of(p, -128, 127);
    broadcast_apply(p.input1_shape, input1, p.input2_shape, input2, |a, b| {
        let product = (a as i32 - p.input1.zero_point) * (b as i32 - p.input2.zero_point);
        let out = p
            .output
            .zero_point
            .wrapping_add(multiply_by_quantized_multiplier(product, multiplier, shift));
        clamp_to(out, act_min, act_max) as i8
    })
}
