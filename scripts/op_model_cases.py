"""The single-op ONNX cases of make_op_models.py: one `case(...)` per model, grouped by family,
with the seeded generator their inputs draw from (the order of the draws fixes the files)."""

import dataclasses

import numpy as np
from onnx import TensorProto, numpy_helper

RNG = np.random.default_rng(20250)
F32 = np.float32


@dataclasses.dataclass
class Case:
    name: str
    op: str
    args: list  # ("x", array): runtime input; ("c", array): initializer; None: omitted
    attrs: dict
    opset: int
    outputs: int
    # Who computes the expected outputs: onnxruntime, or onnx's reference evaluator for ops
    # newer than onnxruntime runs.
    reference: str = "onnxruntime"


CASES = []


def case(name, op, *args, opset=17, outputs=1, reference="onnxruntime", **attrs):
    CASES.append(Case(name, op, list(args), attrs, opset, outputs, reference))


def X(v):
    return ("x", v)


def C(v):
    return ("c", v)


def rn(*shape):
    return RNG.standard_normal(shape).astype(F32)


def pos(*shape):
    return RNG.uniform(0.5, 2.0, shape).astype(F32)


def away(*shape):
    return (pos(*shape) * RNG.choice([-1, 1], shape)).astype(F32)


def ints(*v, dtype=np.int64):
    return np.array(v, dtype=dtype)


def elementwise_cases():
    for op in ["Add", "Sub", "Mul"]:
        case(f"{op.lower()}_broadcast", op, X(rn(2, 3, 4)), X(rn(3, 1)))
    case("add_const", "Add", X(rn(2, 3, 4)), C(rn(4)))
    case("add_int", "Add", X(ints(1, -2, 3, dtype=np.int32)), C(ints(5, dtype=np.int32)))
    case("div", "Div", X(rn(2, 3, 4)), X(away(2, 3, 4)))
    case("div_int", "Div", X(ints(7, -7, 9, -9, dtype=np.int32)), C(ints(2, 2, -4, -4, dtype=np.int32)))
    for e in [2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 0.0, 1.5]:
        name = f"pow_{e:+}".replace(".", "p").replace("+", "").replace("-", "neg")
        case(name, "Pow", X(pos(3, 4)), C(np.array(e, dtype=F32)))
    case("pow_runtime", "Pow", X(pos(3, 4)), X(rn(3, 4)))
    case("pow_negative_base", "Pow", X(rn(3, 4)), C(np.array([2, 3, -1, 4], dtype=F32)))
    case("pow_int_exponent", "Pow", X(pos(3, 4)), C(ints(3)))
    case("pow_int_base", "Pow", X(ints(2, -3, 4, dtype=np.int32)), C(ints(3, dtype=np.int32)))
    case("mod_fmod", "Mod", X(rn(3, 4) * 5), X(away(3, 4)), fmod=1)
    case("mod_int", "Mod", X(ints(7, -7, 7, -7, 6, dtype=np.int32)),
         C(ints(3, 3, -3, -3, 3, dtype=np.int32)))
    unary = {
        "Neg": rn(2, 5), "Abs": rn(2, 5), "Sqrt": pos(2, 5), "Reciprocal": away(2, 5),
        "Exp": rn(2, 5), "Log": pos(2, 5), "Sin": rn(2, 5) * 3, "Cos": rn(2, 5) * 3,
        "Floor": rn(3, 5) * 4, "Ceil": rn(3, 5) * 4, "Relu": rn(2, 5), "Sigmoid": rn(2, 5) * 3,
        "Tanh": rn(2, 5) * 2, "Softplus": rn(2, 5) * 4, "Softsign": rn(2, 5) * 3,
        "Erf": np.linspace(-4, 4, 41, dtype=F32), "Identity": rn(2, 5),
    }
    for op, x in unary.items():
        case(op.lower(), op, X(x))
    case("round", "Round", X(np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, 1.3, -1.7,
                                        3.5, 1e8], dtype=F32)))
    case("sign", "Sign", X(np.array([-2.0, 0.0, 3.5, -0.1, 0.0], dtype=F32)))
    case("max", "Max", X(rn(2, 3)), X(rn(3)), X(rn(2, 1)))
    case("min", "Min", X(rn(2, 3)), X(rn(3)))
    case("sum", "Sum", X(rn(2, 3)), X(rn(3)), X(rn(2, 3)))
    case("mean", "Mean", X(rn(2, 3)), X(rn(2, 3)))
    case("leaky_relu", "LeakyRelu", X(rn(2, 5)), alpha=0.1)
    case("prelu", "PRelu", X(rn(1, 3, 2, 2)), C(rn(3, 1, 1)))
    case("thresholded_relu", "ThresholdedRelu", X(rn(2, 5)), alpha=0.5)
    case("elu", "Elu", X(rn(2, 5)), alpha=0.7)
    case("selu", "Selu", X(rn(2, 5)))
    case("celu", "Celu", X(rn(2, 5)), alpha=1.5)
    case("clip_attrs", "Clip", X(rn(2, 5)), opset=10, min=-0.5, max=0.7)
    case("clip_inputs", "Clip", X(rn(2, 5)), C(np.array(-0.5, F32)), C(np.array(0.7, F32)))
    case("clip_max_only", "Clip", X(rn(2, 5)), None, C(np.array(0.2, F32)))
    case("clip_runtime", "Clip", X(rn(2, 5)), X(np.array(-0.3, F32)), X(np.array(0.4, F32)))
    case("hard_sigmoid", "HardSigmoid", X(rn(2, 5) * 4), alpha=0.25, beta=0.4)
    case("hard_swish", "HardSwish", X(rn(2, 5) * 4))
    case("gelu", "Gelu", X(rn(2, 5) * 2), opset=20)
    case("gelu_tanh", "Gelu", X(rn(2, 5) * 2), opset=20, approximate="tanh")


def logic_cases():
    a = np.array([1.0, 2.0, 3.0, -1.0, 0.5], F32)
    b = np.array([1.0, 3.0, 2.0, -1.0, 0.7], F32)
    for op in ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]:
        case(op.lower(), op, X(a), X(b))
    case("equal_int", "Equal", X(ints(1, 2, 3)), C(ints(2)))
    p, q = RNG.random(6) < 0.5, RNG.random(6) < 0.5
    case("not", "Not", X(p))
    for op in ["And", "Or", "Xor"]:
        case(op.lower(), op, X(p), X(q))
    case("where", "Where", X(RNG.random((2, 3)) < 0.5), X(rn(2, 3)), X(rn(3)))
    special = np.array([1.0, np.inf, -np.inf, np.nan, 0.0], F32)
    case("is_nan", "IsNaN", X(special))
    case("is_inf", "IsInf", X(special))
    case("is_inf_negative", "IsInf", X(special), detect_positive=0)
    case("cast_float_to_int", "Cast", X(rn(2, 5) * 10), to=TensorProto.INT32)
    case("cast_int_to_float", "Cast", X(ints(-3, 0, 7)), to=TensorProto.FLOAT)
    case("cast_float_to_bool", "Cast", X(np.array([0.0, 1.5, -2.0], F32)), to=TensorProto.BOOL)
    case("cast_bool_to_float", "Cast", X(p), to=TensorProto.FLOAT)
    case("cast_like", "CastLike", X(rn(2, 5) * 10), C(ints(1, dtype=np.int32)))



def shape_cases():
    x = rn(2, 3, 4)
    case("reshape", "Reshape", X(x), C(ints(0, -1, 2)))
    case("reshape_scalar_like", "Reshape", X(rn(1, 1)), C(ints(1)))
    case("flatten", "Flatten", X(rn(2, 3, 4, 5)), axis=2)
    case("flatten_axis0", "Flatten", X(x), axis=0)
    case("flatten_negative", "Flatten", X(x), axis=-1)
    case("transpose_default", "Transpose", X(x))
    case("transpose", "Transpose", X(rn(2, 3, 4, 5)), perm=[0, 3, 1, 2])
    case("squeeze_attr", "Squeeze", X(rn(1, 3, 1, 4)), opset=11, axes=[0, -2])
    case("squeeze_input", "Squeeze", X(rn(1, 3, 1, 4)), C(ints(2)))
    case("squeeze_all", "Squeeze", X(rn(1, 3, 1, 4)))
    case("unsqueeze_attr", "Unsqueeze", X(x), opset=11, axes=[0, 4])
    case("unsqueeze_input", "Unsqueeze", X(x), C(ints(-1, 1)))
    case("expand", "Expand", X(rn(3, 1)), C(ints(2, 3, 4)))
    case("expand_smaller_shape", "Expand", X(rn(2, 3, 4)), C(ints(3, 1)))
    case("tile", "Tile", X(rn(2, 3)), C(ints(2, 3)))
    case("depth_to_space", "DepthToSpace", X(rn(1, 8, 2, 3)), blocksize=2)
    case("depth_to_space_crd", "DepthToSpace", X(rn(1, 8, 2, 3)), blocksize=2, mode="CRD")
    case("space_to_depth", "SpaceToDepth", X(rn(1, 2, 4, 6)), blocksize=2)
    case("shape", "Shape", X(x))
    case("shape_slice", "Shape", X(rn(2, 3, 4, 5)), opset=15, start=1, end=-1)
    case("size", "Size", X(x))
    value = numpy_helper.from_array(np.array([2.5], F32))
    case("constant_of_shape", "ConstantOfShape", C(ints(2, 3)), value=value)
    case("constant_of_shape_default", "ConstantOfShape", C(ints(4)))
    case("range", "Range", C(np.array(1.0, F32)), C(np.array(4.0, F32)), C(np.array(0.7, F32)))
    case("range_int", "Range", C(ints(10)[0]), C(ints(-2)[0]), C(ints(-3)[0]))
    case("constant", "Constant", value=numpy_helper.from_array(rn(2, 3)))
    case("constant_ints", "Constant", value_ints=[3, 1, 4])


def index_cases():
    case("concat", "Concat", X(rn(2, 1, 3)), X(rn(2, 2, 3)), X(rn(2, 3, 3)), axis=1)
    case("concat_negative_axis", "Concat", X(rn(2, 3)), C(rn(2, 2)), axis=-1)
    case("concat_int", "Concat", X(ints(1, 2)), C(ints(3)), axis=0)
    case("split_attr", "Split", X(rn(2, 6)), opset=11, outputs=2, axis=1, split=[2, 4])
    case("split_input", "Split", X(rn(6, 2)), C(ints(1, 2, 3)), outputs=3)
    case("split_equal", "Split", X(rn(2, 6)), outputs=3, axis=-1)
    case("split_uneven", "Split", X(rn(7, 2)), opset=18, outputs=3, num_outputs=3)
    x = rn(4, 5, 6)
    case("slice_attrs", "Slice", X(x), opset=9, starts=[1, 0], ends=[3, -1], axes=[0, 2])
    case("slice", "Slice", X(x), C(ints(1, -4)), C(ints(1000, -1)), C(ints(0, 2)))
    case("slice_steps", "Slice", X(x), C(ints(0, 1)), C(ints(5, 6)), C(ints(1, 2)), C(ints(2, 3)))
    case("slice_negative_step", "Slice", X(x), C(ints(-1, 4)), C(ints(-1000, 0)),
         C(ints(2, 0)), C(ints(-2, -1)))
    case("slice_int_max", "Slice", X(x), C(ints(2)), C(ints(2**63 - 1)), C(ints(1)))
    case("slice_empty_axis_default", "Slice", X(x), C(ints(1, 1)), C(ints(3, 4)))
    y = rn(1, 2, 4, 5)
    case("pad_attrs", "Pad", X(y), opset=7, pads=[0, 0, 1, 2, 0, 0, 2, 1], value=1.5)
    case("pad_constant", "Pad", X(y), C(ints(0, 0, 1, 0, 0, 1, 2, 3)), C(np.array(-2.0, F32)))
    case("pad_reflect", "Pad", X(y), C(ints(0, 0, 2, 3, 0, 0, 3, 1)), mode="reflect")
    case("pad_edge", "Pad", X(y), C(ints(0, 0, 2, 3, 0, 0, 3, 1)), mode="edge")
    case("pad_wrap", "Pad", X(y), C(ints(0, 0, 2, 3, 0, 0, 3, 1)), opset=19, mode="wrap")
    case("pad_negative", "Pad", X(y), C(ints(0, 0, -1, 2, 0, 0, 1, -2)))
    case("pad_axes", "Pad", X(y), C(ints(1, 2, 3, 0)), None, C(ints(-1, 1)), opset=18)
    case("gather_scalar", "Gather", X(x), C(np.array(2, np.int64)), axis=1)
    case("gather_progression", "Gather", X(x), C(ints(0, 2, 4)), axis=2)
    case("gather_reversed", "Gather", X(x), C(ints(4, 2, 0)), axis=1)
    case("gather_unordered", "Gather", X(x), C(ints([3, 0], [-1, 3])), axis=0)
    case("gather_repeated", "Gather", X(x), C(ints(1, 1, 1)), axis=2)
    case("gather_runtime", "Gather", X(x), X(ints([1, -1], [0, 2])), axis=1)
    case("gather_long", "Gather", X(rn(3, 90)), C(RNG.integers(-90, 90, 70)), axis=1)
    case("gather_repeats", "Gather", X(rn(3, 4)), C(ints(0, 0, 1, 1, 2, 2, 3, 3)), axis=1)


def reduce_cases():
    x = rn(2, 3, 4)
    case("reduce_sum_attr", "ReduceSum", X(x), opset=11, axes=[1], keepdims=0)
    case("reduce_sum", "ReduceSum", X(x), C(ints(0, -1)))
    case("reduce_sum_all", "ReduceSum", X(x), keepdims=0)
    case("reduce_sum_noop", "ReduceSum", X(x), C(np.zeros(0, np.int64)), noop_with_empty_axes=1)
    case("reduce_mean_attr", "ReduceMean", X(x), opset=13, axes=[2])
    case("reduce_mean", "ReduceMean", X(x), C(ints(1)), opset=18, keepdims=0)
    for op in ["ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
               "ReduceLogSumExp"]:
        case(op.lower(), op, X(x), opset=13, axes=[1, 2])
    case("reducelogsum", "ReduceLogSum", X(pos(2, 3, 4)), opset=13, axes=[0])
    case("reduce_prod_odd", "ReduceProd", X(pos(2, 7)), C(ints(1)), opset=18)
    case("argmax", "ArgMax", X(x), axis=1, keepdims=0)
    case("argmin", "ArgMin", X(x), axis=-1)
    ties = np.array([[1, 3, 3, 0], [2, 2, 1, 2]], F32)
    case("argmax_last", "ArgMax", X(ties), axis=1, select_last_index=1)
    case("argmin_ties", "ArgMin", X(ties), axis=1)


def nn_cases():
    case("gemm", "Gemm", X(rn(3, 4)), C(rn(5, 4)), C(rn(5)), transB=1, alpha=0.5, beta=2.0)
    case("gemm_trans_a", "Gemm", X(rn(4, 3)), C(rn(4, 5)), C(rn(3, 1)), transA=1)
    case("gemm_no_c", "Gemm", X(rn(3, 4)), X(rn(4, 2)))
    case("matmul", "MatMul", X(rn(3, 4)), C(rn(4, 5)))
    case("matmul_batched", "MatMul", X(rn(2, 1, 3, 4)), X(rn(5, 4, 2)))
    case("matmul_vector_left", "MatMul", X(rn(4)), C(rn(2, 4, 3)))
    case("matmul_vector_right", "MatMul", X(rn(2, 3, 4)), C(rn(4)))
    bn = [C(rn(3)), C(rn(3)), C(rn(3)), C(pos(3))]
    case("batch_norm", "BatchNormalization", X(rn(2, 3, 4, 5)), *bn, epsilon=1e-3)
    case("batch_norm_opset9", "BatchNormalization", X(rn(2, 3, 4)), *bn, opset=9)
    case("instance_norm", "InstanceNormalization", X(rn(2, 3, 4, 5)), C(rn(3)), C(rn(3)))
    case("layer_norm", "LayerNormalization", X(rn(2, 3, 4)), C(rn(4)), C(rn(4)))
    case("layer_norm_axis1", "LayerNormalization", X(rn(2, 3, 4)), C(rn(3, 4)), axis=1)
    case("lrn", "LRN", X(rn(1, 5, 3, 3)), size=3, alpha=0.01, beta=0.75, bias=1.5)
    case("lrn_wide", "LRN", X(rn(1, 6, 2, 2)), size=5)
    x = rn(2, 3, 4) * 3
    case("softmax_opset11", "Softmax", X(x), opset=11, axis=1)
    case("softmax_opset11_default", "Softmax", X(x), opset=11)
    case("softmax_axis1", "Softmax", X(x), axis=1)
    case("softmax", "Softmax", X(x))
    case("log_softmax_opset11", "LogSoftmax", X(x), opset=11, axis=1)
    case("log_softmax", "LogSoftmax", X(x), axis=0)
    case("hardmax", "Hardmax", X(np.round(x)), axis=1)
    case("dropout", "Dropout", X(rn(2, 5)), outputs=2)
    case("dropout_opset7", "Dropout", X(rn(2, 5)), opset=7, ratio=0.3)


def conv_cases():
    x = rn(1, 4, 7, 6)
    case("conv", "Conv", X(x), C(rn(5, 4, 3, 3)), C(rn(5)), pads=[1, 1, 1, 1])
    case("conv_no_bias", "Conv", X(x), C(rn(5, 4, 3, 2)))
    case("conv_strides_dilations", "Conv", X(x), C(rn(3, 4, 2, 2)), strides=[2, 1],
         dilations=[2, 2], pads=[1, 0, 1, 2])
    case("conv_groups", "Conv", X(x), C(rn(6, 2, 3, 3)), C(rn(6)), group=2)
    case("conv_depthwise", "Conv", X(x), C(rn(4, 1, 3, 3)), C(rn(4)), group=4, pads=[1, 1, 1, 1])
    case("conv_same_upper", "Conv", X(x), C(rn(2, 4, 3, 3)), auto_pad="SAME_UPPER",
         strides=[2, 2])
    case("conv_same_lower", "Conv", X(x), C(rn(2, 4, 2, 2)), auto_pad="SAME_LOWER")
    case("conv_valid", "Conv", X(x), C(rn(2, 4, 3, 3)), auto_pad="VALID", strides=[2, 2])
    case("conv_1d", "Conv", X(rn(2, 3, 9)), C(rn(4, 3, 3)), C(rn(4)), strides=[2], pads=[1, 2])
    case("conv_3d", "Conv", X(rn(1, 2, 4, 4, 3)), C(rn(3, 2, 2, 2, 2)), pads=[1, 0, 1, 0, 1, 1])
    case("conv_runtime_weight", "Conv", X(rn(1, 2, 5, 5)), X(rn(3, 2, 3, 3)))
    case("conv_transpose", "ConvTranspose", X(rn(1, 3, 4, 4)), C(rn(3, 2, 3, 3)), C(rn(2)),
         strides=[2, 2])
    case("conv_transpose_pads", "ConvTranspose", X(rn(1, 2, 3, 4)), C(rn(2, 3, 3, 2)),
         strides=[2, 3], pads=[1, 0, 2, 1], output_padding=[1, 1])
    case("conv_transpose_groups", "ConvTranspose", X(rn(1, 4, 3, 3)), C(rn(4, 1, 2, 2)),
         group=2, dilations=[2, 1])
    case("conv_transpose_1d", "ConvTranspose", X(rn(1, 2, 5)), C(rn(2, 3, 4)), strides=[3])
    case("conv_transpose_output_shape", "ConvTranspose", X(rn(1, 2, 3, 3)), C(rn(2, 2, 3, 3)),
         strides=[2, 2], output_shape=[6, 6])
    case("conv_transpose_same", "ConvTranspose", X(rn(1, 2, 3, 3)), C(rn(2, 2, 3, 3)),
         strides=[2, 2], auto_pad="SAME_UPPER")


def pool_cases():
    x = rn(1, 3, 7, 6)
    case("average_pool", "AveragePool", X(x), kernel_shape=[2, 2], strides=[2, 2])
    case("average_pool_pads", "AveragePool", X(x), kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    case("average_pool_include_pad", "AveragePool", X(x), kernel_shape=[3, 2],
         pads=[1, 0, 2, 1], count_include_pad=1)
    case("average_pool_ceil", "AveragePool", X(x), kernel_shape=[3, 3], strides=[2, 2],
         ceil_mode=1)
    case("average_pool_ceil_pads_include", "AveragePool", X(x), kernel_shape=[3, 3],
         strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1)
    case("average_pool_same_upper", "AveragePool", X(x), kernel_shape=[3, 3], strides=[2, 2],
         auto_pad="SAME_UPPER")
    case("average_pool_dilations", "AveragePool", X(x), kernel_shape=[2, 2], dilations=[2, 2],
         opset=19)
    case("average_pool_1d", "AveragePool", X(rn(2, 3, 9)), kernel_shape=[3], strides=[2])
    case("max_pool", "MaxPool", X(x), kernel_shape=[2, 2], strides=[2, 2])
    case("max_pool_pads", "MaxPool", X(x - 5), kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    case("max_pool_dilations", "MaxPool", X(x), kernel_shape=[2, 2], dilations=[2, 1])
    case("max_pool_ceil", "MaxPool", X(x), kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    case("max_pool_same_lower", "MaxPool", X(x), kernel_shape=[2, 3], strides=[2, 2],
         auto_pad="SAME_LOWER")
    case("max_pool_3d", "MaxPool", X(rn(1, 2, 4, 4, 4)), kernel_shape=[2, 2, 2])
    case("lp_pool", "LpPool", X(x), kernel_shape=[2, 2], strides=[2, 2])
    case("lp_pool_p1", "LpPool", X(x), kernel_shape=[3, 3], p=1, pads=[1, 1, 1, 1])
    case("lp_pool_p3", "LpPool", X(x), kernel_shape=[2, 2], p=3, opset=18)
    case("global_average_pool", "GlobalAveragePool", X(x))
    case("global_max_pool", "GlobalMaxPool", X(x))
    case("global_lp_pool", "GlobalLpPool", X(x))


def resize_cases():
    x = rn(1, 2, 4, 5)
    scales = C(np.array([1, 1, 2, 2], F32))
    case("upsample_nearest", "Upsample", X(x), C(np.array([1, 1, 2, 3], F32)), opset=9)
    case("upsample_linear", "Upsample", X(x), C(np.array([1, 1, 2, 1.5], F32)), opset=9,
         mode="linear")
    case("resize_opset10", "Resize", X(x), C(np.array([1, 1, 0.5, 2], F32)), opset=10)
    case("resize_nearest", "Resize", X(x), None, scales)
    case("resize_nearest_sizes", "Resize", X(x), None, None, C(ints(1, 2, 7, 3)))
    for coord, nearest in [("asymmetric", "floor"), ("align_corners", "round_prefer_ceil"),
                           ("half_pixel", "ceil"),
                           ("pytorch_half_pixel", "round_prefer_floor")]:
        case(f"resize_nearest_{coord}", "Resize", X(x), None, None, C(ints(1, 2, 7, 3)),
             coordinate_transformation_mode=coord, nearest_mode=nearest)
    case("resize_linear", "Resize", X(x), None, scales, mode="linear")
    case("resize_linear_down", "Resize", X(x), None, C(np.array([1, 1, 0.6, 0.5], F32)),
         mode="linear")
    for coord in ["align_corners", "asymmetric", "pytorch_half_pixel", "half_pixel_symmetric"]:
        case(f"resize_linear_{coord}", "Resize", X(x), None, None, C(ints(1, 2, 7, 3)),
             opset=19, mode="linear", coordinate_transformation_mode=coord)
    case("resize_axes", "Resize", X(x), None, None, C(ints(3, 8)), opset=18, axes=[2, 3])
    case("resize_big", "Resize", X(rn(1, 1, 3, 40)), None, C(np.array([1, 1, 1, 2.5], F32)))


def more_cases():
    case("mish", "Mish", X(rn(2, 5) * 3), opset=18)
    case("shrink", "Shrink", X(rn(2, 5)), bias=0.2, lambd=0.4)
    case("group_norm", "GroupNormalization", X(rn(2, 6, 3, 2)), C(rn(6)), C(rn(6)), opset=21,
         num_groups=3)
    case("group_norm_per_channel", "GroupNormalization", X(rn(2, 4, 5)), C(rn(4)), C(rn(4)),
         opset=21, num_groups=2)
    case("mean_variance_norm", "MeanVarianceNormalization", X(rn(2, 3, 4, 2)), axes=[0, 2, 3])
    case("mean_variance_norm_axes", "MeanVarianceNormalization", X(rn(2, 3, 4)), axes=[1])
    case("trilu_upper", "Trilu", X(rn(2, 4, 5)), C(np.array(1, np.int64)))
    case("trilu_lower", "Trilu", X(rn(4, 3)), C(np.array(-1, np.int64)), upper=0)
    case("trilu_default", "Trilu", X(rn(3, 3)))
    case("cum_sum", "CumSum", X(rn(2, 5)), C(np.array(1, np.int64)))
    case("cum_sum_exclusive_reverse", "CumSum", X(rn(3, 4)), C(np.array(0, np.int32)),
         exclusive=1, reverse=1)
    case("one_hot", "OneHot", X(ints([1, 0], [-1, 2])), C(np.array(3, np.int64)),
         C(np.array([0.5, 2.0], F32)))
    case("one_hot_axis0", "OneHot", X(ints(0, 3, 1)), C(np.array(4, np.int64)),
         C(ints(-1, 1)), axis=0)
    case("gather_elements", "GatherElements", X(rn(3, 4)), X(ints([0, 2], [1, -1], [3, 0])),
         axis=1)
    case("gather_elements_axis0", "GatherElements", X(rn(3, 4)), C(ints([2, 0, 1, 1])))
    math_cases()


def math_cases():
    # Its own generator, so that these cases leave the others' inputs as they were.
    rng = np.random.default_rng(7)
    u = rng.uniform(-0.95, 0.95, (2, 5)).astype(F32)
    wide = (rng.standard_normal((2, 5)) * 3).astype(F32)
    for op, x in {"Tan": u, "Sinh": wide, "Cosh": wide, "Asinh": wide, "Atan": wide * 10,
                  "Asin": u, "Acos": u, "Atanh": u,
                  "Acosh": rng.uniform(1.0, 9.0, (2, 5)).astype(F32)}.items():
        case(f"math_{op.lower()}", op, X(x), opset=18)
    a = rng.integers(0, 255, (2, 4), dtype=np.uint8)
    b = rng.integers(0, 255, (4,), dtype=np.uint8)
    for op in ["BitwiseAnd", "BitwiseOr", "BitwiseXor"]:
        case(f"math_{op.lower()}", op, X(a), X(b), opset=18)
    case("math_bitwisenot", "BitwiseNot", X(ints(0, 5, -7, dtype=np.int32)), opset=18)
    case("math_cum_prod", "CumProd", X(rng.uniform(0.5, 1.5, (3, 4)).astype(F32)),
         C(np.array(1, np.int64)), opset=26, exclusive=1, reverse=1)
    case("math_rms_norm", "RMSNormalization", X(rng.standard_normal((2, 3, 4)).astype(F32)),
         C(rng.standard_normal((3, 4)).astype(F32)), opset=23, axis=1)
    case("math_lp_norm", "LpNormalization", X(wide), axis=0, p=1)
    case("math_nll_loss", "NegativeLogLikelihoodLoss",
         X(rng.standard_normal((3, 5, 2)).astype(F32)), X(ints([0, 4], [2, 1], [4, 4])),
         C(rng.uniform(0.5, 1.5, 5).astype(F32)), opset=13, ignore_index=1)
    case("math_bitshift", "BitShift", X(a), C(np.array([1, 2, 3, 0], np.uint8)), opset=18,
         direction="LEFT")


def quant_cases():
    q8 = RNG.integers(-128, 128, (2, 3, 4), dtype=np.int8)
    case("dequantize_linear", "DequantizeLinear", X(q8), C(np.array(0.05, F32)),
         C(np.array(-3, np.int8)))
    case("dequantize_linear_per_axis", "DequantizeLinear", X(q8), C(pos(3) / 10),
         C(ints(1, -2, 0, dtype=np.int8)), axis=1)
    case("dequantize_linear_int32", "DequantizeLinear", X(ints(-1000, 5, 70000, dtype=np.int32)),
         C(np.array(0.001, F32)))
    ties = np.arange(-40, 40, dtype=F32) * 0.25
    case("quantize_linear", "QuantizeLinear", X(ties), C(np.array(0.5, F32)),
         C(np.array(100, np.uint8)))
    case("quantize_linear_saturate", "QuantizeLinear", X(rn(2, 3, 4) * 8),
         C(np.array(0.05, F32)), C(np.array(-10, np.int8)))
    case("quantize_linear_per_axis", "QuantizeLinear", X(rn(2, 3, 4)), C(pos(2) / 50),
         C(ints(3, -4, dtype=np.int8)), axis=0)
    case("quantize_linear_default_type", "QuantizeLinear", X(rn(5) * 3), C(np.array(0.1, F32)))


def newer_op_cases():
    # Its own generator, so that these cases leave the others' inputs as they were.
    rng = np.random.default_rng(11)

    def r(*shape):
        return rng.standard_normal(shape).astype(F32)

    def u8(*shape):
        return rng.integers(0, 255, shape, dtype=np.uint8)

    case("swish", "Swish", X(r(2, 5) * 3), opset=24, alpha=0.7)
    case("bit_cast", "BitCast", X(r(2, 3)), opset=26, to=TensorProto.INT32)
    case("eye_like", "EyeLike", X(r(3, 5)), opset=22, k=1)
    case("center_crop_pad", "CenterCropPad", X(r(4, 3, 2)), C(ints(3, 5)), opset=18, axes=[0, 1])
    case("top_k", "TopK", X(r(3, 6)), C(ints(3)), opset=11, outputs=2, axis=1)
    case("top_k_smallest", "TopK", X(r(4, 3)), C(ints(2)), opset=11, outputs=2, axis=0,
         largest=0)
    case("scatter_elements_add", "ScatterElements", X(r(3, 4)),
         X(ints([0, 2], [3, 3], [1, 0])), X(r(3, 2)), opset=18, axis=1, reduction="add")
    case("scatter_legacy", "Scatter", X(r(3, 3)), C(ints([1, 0, 2], [0, 2, 1])), X(r(2, 3)),
         opset=9)
    case("scatter_nd_mul", "ScatterND", X(r(4, 3)), X(ints([1], [3], [1])), X(r(3, 3)),
         opset=18, reduction="mul")
    case("gather_nd_batch", "GatherND", X(r(2, 3, 4)), X(ints([[1], [2]], [[0], [0]])),
         opset=13, batch_dims=1)
    case("softmax_cross_entropy", "SoftmaxCrossEntropyLoss", X(r(3, 5, 2)),
         X(ints([0, 4], [2, 1], [4, 3])), C(rng.uniform(0.5, 1.5, 5).astype(F32)), opset=13,
         outputs=2, reduction="sum")
    case("attention_causal", "Attention", X(r(1, 2, 3, 4)), X(r(1, 2, 5, 4)), X(r(1, 2, 5, 4)),
         opset=24, is_causal=1)
    case("attention_gqa_mask", "Attention", X(r(2, 3, 8)), X(r(2, 4, 4)), X(r(2, 4, 4)),
         X(r(3, 4)), opset=24, q_num_heads=2, kv_num_heads=1)
    case("rotary_embedding", "RotaryEmbedding", X(r(1, 2, 3, 4)), X(r(1, 3, 2)), X(r(1, 3, 2)),
         opset=23, interleaved=1)
    case("dft_onesided", "DFT", X(r(2, 6, 1)), None, C(np.array(1, np.int64)), opset=20,
         onesided=1)
    case("dft_inverse_axis2", "DFT", X(r(1, 3, 4, 2)), None, C(np.array(2, np.int64)), opset=20,
         inverse=1)
    case("hann_window", "HannWindow", C(np.array(7, np.int64)), opset=17)
    case("hamming_window", "HammingWindow", C(np.array(6, np.int64)), opset=17, periodic=0)
    case("blackman_window", "BlackmanWindow", C(np.array(5, np.int64)), opset=17)
    case("einsum_batch_matmul", "Einsum", X(r(2, 3, 4)), X(r(2, 4, 5)), opset=12,
         equation="bij,bjk->bik")
    case("einsum_trace_sum", "Einsum", X(r(3, 3)), X(r(3)), opset=12, equation="ii,j")
    case("grid_sample_reflection", "GridSample", X(r(1, 2, 4, 5)), X(r(1, 3, 2, 2) * 1.2),
         opset=22, mode="linear", padding_mode="reflection")
    case("grid_sample_nearest_border", "GridSample", X(r(1, 1, 3, 4)), X(r(1, 2, 3, 2) * 1.2),
         opset=22, mode="nearest", padding_mode="border", align_corners=1)
    case("affine_grid", "AffineGrid", X(r(2, 2, 3)), C(ints(2, 1, 3, 4)), opset=20)
    case("col2im", "Col2Im", X(r(1, 8, 9)), C(ints(4, 4)), C(ints(2, 2)), opset=18)
    case("compress", "Compress", X(r(3, 4)), C(np.array([True, False, True, True])), opset=11,
         axis=1)
    case("reverse_sequence", "ReverseSequence", X(r(4, 3, 2)), X(ints(4, 1, 2)), opset=10)
    case("matmul_integer", "MatMulInteger", X(u8(2, 3)), X(u8(3, 4)), C(np.array(12, np.uint8)),
         C(np.array(130, np.uint8)), opset=10)
    case("conv_integer", "ConvInteger", X(u8(1, 1, 4, 4)), X(u8(2, 1, 2, 2)),
         C(np.array(100, np.uint8)), opset=10, pads=[1, 0, 0, 1])
    case("qlinear_matmul", "QLinearMatMul", X(u8(2, 3)), C(np.array(0.05, F32)),
         C(np.array(120, np.uint8)), X(u8(3, 4)), C(np.array(0.02, F32)),
         C(np.array(130, np.uint8)), C(np.array(0.1, F32)), C(np.array(128, np.uint8)),
         opset=21)
    case("qlinear_conv", "QLinearConv", X(u8(1, 1, 4, 4)), C(np.array(0.05, F32)),
         C(np.array(120, np.uint8)), X(u8(2, 1, 2, 2)), C(np.array([0.02, 0.03], F32)),
         C(np.array([130, 125], np.uint8)), C(np.array(0.5, F32)), C(np.array(128, np.uint8)),
         opset=10)
    case("dynamic_quantize_linear", "DynamicQuantizeLinear", X(r(2, 5) * 3), opset=11,
         outputs=3)
    case("max_pool_indices", "MaxPool", X(r(1, 2, 5, 5)), opset=12, outputs=2,
         kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 0, 0])
    case("tensor_scatter_circular", "TensorScatter", X(r(2, 5, 3)), X(r(2, 2, 3)),
         X(ints(1, 4)), opset=24, axis=1, mode="circular")
    case("max_unpool", "MaxUnpool", X(r(1, 2, 2, 2)),
         C(ints([[[1, 7], [8, 14]], [[16, 19], [29, 31]]])), opset=11, kernel_shape=[2, 2],
         strides=[2, 2])
    case("det", "Det", X(r(2, 3, 3)), opset=11)
    case("batch_norm_training", "BatchNormalization", X(r(2, 3, 4)), C(r(3)), C(r(3)), C(r(3)),
         C(rng.uniform(0.5, 1.5, 3).astype(F32)), opset=15, outputs=3, training_mode=1,
         momentum=0.8)


def recurrent_cases():
    # A generator of its own: the cases above keep their data whatever is added here.
    rng = np.random.default_rng(20261202)

    def r(*shape):
        return rng.standard_normal(shape).astype(F32)

    case("lstm_bidirectional_peephole", "LSTM", X(r(5, 2, 3)), C(r(2, 16, 3)), C(r(2, 16, 4)),
         C(r(2, 32)), X(np.array([5, 3], np.int32)), X(r(2, 2, 4)), X(r(2, 2, 4)), C(r(2, 12)),
         opset=14, outputs=3, hidden_size=4, direction="bidirectional")
    case("gru_reverse_linear_before_reset", "GRU", X(r(4, 3, 2)), C(r(1, 9, 2)), C(r(1, 9, 3)),
         C(r(1, 18)), opset=14, outputs=2, hidden_size=3, direction="reverse",
         linear_before_reset=1)
    case("causal_conv_with_state_silu", "CausalConvWithState", X(r(2, 3, 5)), C(r(3, 1, 4)),
         C(r(3)), X(r(2, 3, 3)), opset=27, outputs=2, reference="onnx", activation="silu")
    case("linear_attention_gated_delta_gqa", "LinearAttention", X(r(1, 3, 16)), X(r(1, 3, 8)),
         X(r(1, 3, 8)), X(r(1, 2, 4, 4)), X(-np.abs(r(1, 3, 8))), X(rng.uniform(0, 1, (1, 3, 2))
                                                                     .astype(F32)),
         opset=27, outputs=2, reference="onnx", q_num_heads=4, kv_num_heads=2)
    case("non_zero", "NonZero", X(np.where(r(3, 4) > 0.3, r(3, 4), 0).astype(F32)), opset=13)
    case("compress_at_run_time", "Compress", X(r(3, 4)), X(np.array([True, False, True])),
         opset=11, axis=0)
    case("rnn_relu", "RNN", X(r(6, 2, 3)), C(r(1, 4, 3)), C(r(1, 4, 4)), opset=14, outputs=2,
         hidden_size=4, activations=["Relu"])


for make in [elementwise_cases, logic_cases, shape_cases, index_cases, reduce_cases, nn_cases,
             conv_cases, pool_cases, quant_cases, resize_cases, more_cases,
             newer_op_cases, recurrent_cases]:
    make()
