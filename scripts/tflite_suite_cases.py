"""The cases of the TFLite conformance suite, and the small model builder they use.

Imported by scripts/make_tflite_suite.py, which runs the references and writes the files (see
its docstring). Every case builds a one-op model (a few build two or three subgraphs) with the
flatbuffer object API of the schema that ships in the tflite-micro wheel, so that types,
quantization parameters and options are exactly the ones written here.

A case is registered with `add(name, op, type, about, build)`; `build(g)` gets a fresh `Graph`
whose `g.rng` is seeded from the case name, declares the model inputs (with their data),
constants, the operator and the outputs. Cases of one op are registered type by type; the first
case of each (op, type) is the one whose TFLM result goes into tflm-types.tsv, so it is always
the plainest form of the op.
"""

import dataclasses
import zlib

import numpy as np
import flatbuffers
from tflite_micro.python.tflite_micro import runtime as tflm

S = tflm.schema_fb
BUILTIN = {k: v for k, v in vars(S.BuiltinOperator).items() if not k.startswith("_")}

# dtype name -> (schema TensorType, numpy dtype)
DTYPES = {
    "float32": (S.TensorType.FLOAT32, np.float32),
    "float16": (S.TensorType.FLOAT16, np.float16),
    "int8": (S.TensorType.INT8, np.int8),
    "int16": (S.TensorType.INT16, np.int16),
    "uint8": (S.TensorType.UINT8, np.uint8),
    "int32": (S.TensorType.INT32, np.int32),
    "int64": (S.TensorType.INT64, np.int64),
    "bool": (S.TensorType.BOOL, np.bool_),
    "uint32": (S.TensorType.UINT32, np.uint32),
    "uint64": (S.TensorType.UINT64, np.uint64),
}
TYPE_NAME = {tt: name for name, (tt, _) in DTYPES.items()}
ALL_TYPES = ("float32", "int8", "int16", "uint8", "int32", "int64", "bool")
NUM_TYPES = ("float32", "int8", "int16", "uint8", "int32", "int64")
QUANT = ("int8", "int16", "uint8")

ACT = {"NONE": S.ActivationFunctionType.NONE, "RELU": S.ActivationFunctionType.RELU,
       "RELU6": S.ActivationFunctionType.RELU6,
       "RELU_N1_TO_1": S.ActivationFunctionType.RELU_N1_TO_1}
PAD = {"SAME": S.Padding.SAME, "VALID": S.Padding.VALID}


def seed_of(name):
    return zlib.crc32(name.encode())


# ---------------------------------------------------------------- model builder


@dataclasses.dataclass
class Q:
    """Quantization parameters: one scale/zero point, or per-channel along `axis`."""
    scale: object
    zero_point: object = 0
    axis: int = 0

    def t(self):
        p = S.QuantizationParametersT()
        sc = np.atleast_1d(np.asarray(self.scale, np.float32))
        zp = np.broadcast_to(np.atleast_1d(np.asarray(self.zero_point, np.int64)), sc.shape)
        p.scale = [float(s) for s in sc]
        p.zeroPoint = [int(z) for z in zp]
        p.quantizedDimension = self.axis
        return p


class AlignedBuffer(S.BufferT):
    """A buffer whose data starts on a 16-byte boundary, as the converter writes them."""

    def Pack(self, builder):
        data = None
        if self.data is not None:
            raw = bytes(self.data)
            builder.StartVector(1, len(raw), 16)
            builder.head = builder.head - len(raw)
            builder.Bytes[builder.head:builder.head + len(raw)] = raw
            data = builder.EndVector()
        S.BufferStart(builder)
        if data is not None:
            S.BufferAddData(builder, data)
        return S.BufferEnd(builder)


def to_bytes(array, dtype):
    a = np.asarray(array, DTYPES[dtype][1]) if dtype in DTYPES else np.asarray(array)
    return np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes()


def options(kind, **fields):
    """`options("LeakyRelu", alpha=0.2)` -> (BuiltinOptions enum, LeakyReluOptionsT)."""
    obj = getattr(S, kind + "OptionsT")()
    for k, v in fields.items():
        if not hasattr(obj, k):
            raise AttributeError(f"{kind}Options has no field {k}")
        setattr(obj, k, v)
    return getattr(S.BuiltinOptions, kind + "Options"), obj


class Subgraph:
    def __init__(self, graph, name):
        self.graph = graph
        self.name = name
        self.tensors, self.inputs, self.outputs, self.ops = [], [], [], []

    def tensor(self, name, dtype, shape, q=None, data=None, variable=False):
        t = S.TensorT()
        t.name = name
        t.type = DTYPES[dtype][0] if isinstance(dtype, str) else dtype
        t.shape = None if shape is None else [int(d) for d in shape]
        t.quantization = q.t() if q is not None else None
        t.buffer = 0
        t.isVariable = variable
        if data is not None:
            t.buffer = self.graph.buffer(data)
        self.tensors.append(t)
        return len(self.tensors) - 1

    def input(self, name, dtype, shape, q=None):
        t = self.tensor(name, dtype, shape, q)
        self.inputs.append(t)
        return t

    def output(self, name, dtype, shape, q=None):
        t = self.tensor(name, dtype, shape, q)
        self.outputs.append(t)
        return t

    def const(self, name, dtype, data, q=None):
        a = np.asarray(data).astype(DTYPES[dtype][1])
        return self.tensor(name, dtype, a.shape, q, data=to_bytes(a, dtype))

    def op(self, name, inputs, outputs, opts=None, custom=None, custom_options=None,
           version=1):
        o = S.OperatorT()
        o.opcodeIndex = self.graph.opcode(name, custom, version)
        o.inputs = list(inputs)
        o.outputs = list(outputs)
        if opts is not None:
            o.builtinOptionsType, o.builtinOptions = opts
        if custom_options is not None:
            o.customOptions = list(custom_options)
        self.ops.append(o)

    def t(self):
        sg = S.SubGraphT()
        sg.tensors, sg.inputs, sg.outputs, sg.operators = (self.tensors, self.inputs,
                                                           self.outputs, self.ops)
        sg.name = self.name
        return sg


class Graph:
    """One model. The methods without a subgraph argument work on the first (main) subgraph."""

    def __init__(self, rng):
        self.rng = rng
        self.buffers = [AlignedBuffer()]
        self.codes = []
        self.subgraphs = [Subgraph(self, "main")]
        self.feeds = []  # input arrays, in the order of the main subgraph's inputs
        self.raw = None  # a finished flatbuffer (converter-made cases) instead of the graph
        self.check = None  # optional check(inputs, outputs) -> None, or why the outputs are wrong

    @property
    def main(self):
        return self.subgraphs[0]

    def subgraph(self, name):
        self.subgraphs.append(Subgraph(self, name))
        return self.subgraphs[-1]

    def buffer(self, raw):
        b = AlignedBuffer()
        b.data = bytes(raw)
        self.buffers.append(b)
        return len(self.buffers) - 1

    def opcode(self, name, custom=None, version=1):
        oc = S.OperatorCodeT()
        if custom is not None:
            oc.builtinCode = oc.deprecatedBuiltinCode = S.BuiltinOperator.CUSTOM
            oc.customCode = custom
        else:
            oc.builtinCode = BUILTIN[name]
            oc.deprecatedBuiltinCode = min(BUILTIN[name], 127)
        oc.version = version
        key = (oc.builtinCode, custom, version)
        for i, c in enumerate(self.codes):
            if (c.builtinCode, c.customCode, c.version) == key:
                return i
        self.codes.append(oc)
        return len(self.codes) - 1

    # main-subgraph shorthands
    def input(self, name, dtype, data, q=None):
        """A model input fed with `data` (converted to the dtype); returns the tensor index."""
        a = np.asarray(data).astype(DTYPES[dtype][1])
        t = self.main.tensor(name, dtype, a.shape, q)
        self.main.inputs.append(t)
        self.feeds.append(a)
        return t

    def const(self, name, dtype, data, q=None, shape=None):
        a = np.asarray(data).astype(DTYPES[dtype][1]) if dtype in DTYPES else np.asarray(data)
        return self.main.tensor(name, dtype, a.shape if shape is None else shape, q,
                                data=to_bytes(a, dtype))

    def output(self, name, dtype, shape, q=None):
        t = self.main.tensor(name, dtype, shape, q)
        self.main.outputs.append(t)
        return t

    def tensor(self, name, dtype, shape, q=None):
        return self.main.tensor(name, dtype, shape, q)

    def op(self, *a, **k):
        self.main.op(*a, **k)

    def shape(self, t):
        return tuple(self.main.tensors[t].shape)

    def model(self):
        m = S.ModelT()
        m.version = 3
        m.description = "kiln tflite conformance suite"
        m.operatorCodes = self.codes
        m.subgraphs = [sg.t() for sg in self.subgraphs]
        m.buffers = self.buffers
        return m

    def serialize(self):
        b = flatbuffers.Builder(4096)
        b.Finish(self.model().Pack(b), file_identifier=b"TFL3")
        return bytes(b.Output())

    def unknown_shapes(self):
        if self.raw is not None:
            return []
        return [i for i in self.main.outputs if self.main.tensors[i].shape is None]

    def output_count(self):
        if self.raw is None:
            return len(self.main.outputs)
        return len(tflm.convert_bytearray_to_object(bytearray(self.raw)).subgraphs[0].outputs)


# ---------------------------------------------------------------- registry


@dataclasses.dataclass
class Case:
    name: str
    op: str
    type: str  # the type that decides the arithmetic
    about: str
    build: object  # build(graph)
    batch: int
    probe: str = ""  # key under which the first case is recorded in tflm-types.tsv
    fallback: bool = False


CASES = []
BATCH = [1]


def add(name, op, type_, about, build, probe=None, fallback=False):
    """fallback: the full TFLite reference kernels are the reference whenever TFLM refuses the
    case (not only when TFLM lacks the op)."""
    assert name == name.lower() and "\t" not in about, name
    CASES.append(Case(name, op, type_, about, build, BATCH[0], probe or type_, fallback))


def batch(n):
    BATCH[0] = n


# ---------------------------------------------------------------- data helpers


def sweep_int8(rng, shape=(256,)):
    """Every int8 value, permuted (tiled if the shape holds more than 256)."""
    n = int(np.prod(shape))
    reps = -(-n // 256)
    v = np.concatenate([rng.permutation(np.arange(-128, 128)) for _ in range(reps)])[:n]
    return v.reshape(shape).astype(np.int8)


def sweep_uint8(rng, shape=(256,)):
    return (sweep_int8(rng, shape).astype(np.int16) + 128).astype(np.uint8)


def sweep_int16(rng, shape=(256,)):
    """Half a sweep across the whole int16 range (ends included), half random; shuffled."""
    n = int(np.prod(shape))
    k = n // 2
    sw = np.round(np.linspace(-32768, 32767, k)).astype(np.int64)
    r = rng.integers(-32768, 32768, n - k)
    v = rng.permutation(np.concatenate([sw, r]))
    return v.reshape(shape).astype(np.int16)


def uniform(rng, shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def ints(rng, shape, lo, hi, dtype="int32"):
    return rng.integers(lo, hi, shape, endpoint=True).astype(DTYPES[dtype][1])


def bools(rng, shape):
    return rng.integers(0, 2, shape).astype(np.bool_)


def qrange(lo, hi, dtype):
    """Quantization covering [lo, hi]: asymmetric for int8/uint8, symmetric (zp 0) for int16."""
    if dtype == "int16":
        return Q(max(abs(lo), abs(hi)) / 32767.0, 0)
    qmin, qmax = (-128, 127) if dtype == "int8" else (0, 255)
    scale = (hi - lo) / (qmax - qmin)
    zp = int(np.clip(round(qmin - lo / scale), qmin, qmax))
    return Q(scale, zp)


def quantize(x, q, dtype):
    lo, hi = {"int8": (-128, 127), "int16": (-32768, 32767), "uint8": (0, 255),
              "int32": (-2**31, 2**31 - 1)}[dtype]
    sc = np.asarray(q.scale, np.float64)
    zp = np.asarray(q.zero_point, np.float64)
    if sc.ndim == 1 and sc.size > 1:
        shape = [1] * np.ndim(x)
        shape[q.axis] = -1
        sc, zp = sc.reshape(shape), zp.reshape(shape)
    return np.clip(np.round(np.asarray(x, np.float64) / sc) + zp, lo, hi).astype(DTYPES[dtype][1])


def data_for(rng, dtype, shape, lo=-4.0, hi=4.0, sweep=False):
    """Random data of a dtype: float uniform on [lo, hi]; quantized types the whole range (a
    sweep with every value when `sweep`); int32/int64 on [lo*25, hi*25]; bool random."""
    if dtype == "float32":
        return uniform(rng, shape, lo, hi)
    if dtype == "int8":
        return sweep_int8(rng, shape) if sweep else ints(rng, shape, -128, 127, "int8")
    if dtype == "uint8":
        return sweep_uint8(rng, shape) if sweep else ints(rng, shape, 0, 255, "uint8")
    if dtype == "int16":
        return sweep_int16(rng, shape) if sweep else ints(rng, shape, -32768, 32767, "int16")
    if dtype in ("int32", "int64"):
        return ints(rng, shape, int(lo * 25), int(hi * 25), dtype)
    if dtype == "bool":
        return bools(rng, shape)
    raise ValueError(dtype)


def default_q(dtype, lo=-4.0, hi=4.0):
    """Input quantization of a type over [lo, hi] (None for unquantized types)."""
    return qrange(lo, hi, dtype) if dtype in QUANT else None


def bcast(*shapes):
    return tuple(np.broadcast_shapes(*shapes))


# ---------------------------------------------------------------- generic op shapes


def unary(g, op, t, x, in_q=None, out_q=None, opts=None, out_t=None, out_shape=None):
    xi = g.input("x", t, x, in_q)
    y = g.output("y", out_t or t, np.shape(x) if out_shape is None else out_shape, out_q)
    g.op(op, [xi], [y], opts)
    return y


def binary(g, op, t, a, b, qa=None, qb=None, qo=None, opts=None, out_t=None):
    ai = g.input("a", t, a, qa)
    bi = g.input("b", t, b, qb)
    y = g.output("y", out_t or t, bcast(np.shape(a), np.shape(b)), qo)
    g.op(op, [ai, bi], [y], opts)
    return y


def unary_input(g, t, lo, hi, float_shape=(2, 64)):
    """(data, quantization) for an elementwise unary op over the real domain [lo, hi]: every
    value of int8/uint8, a sweep of int16, uniform floats, moderate integers."""
    if t in QUANT:
        x = data_for(g.rng, t, (256,), sweep=True)
        if t == "int16" and lo >= 0:  # symmetric int16 cannot skip negatives: fold them
            x = np.abs(x.astype(np.int32)).clip(0, 32767).astype(np.int16)
        return x, qrange(lo, hi, t)
    if t == "float32":
        return uniform(g.rng, float_shape, lo, hi), None
    if t in ("int32", "int64"):
        return ints(g.rng, (4, 32), -1000, 1000, t), None
    return bools(g.rng, (4, 32)), None


def unary_family(op, about, lo, hi, out_range, types=ALL_TYPES, opts=None, float_lo=None,
                 prefix=None):
    """One case per type of an elementwise unary op over the domain [lo, hi]; quantized outputs
    cover out_range (a pair, or a dict per type of Q)."""
    prefix = prefix or op.lower()

    def make(t):
        def build(g):
            x, qi = unary_input(g, t, lo if float_lo is None or t != "float32" else float_lo, hi)
            qo = None
            if t in QUANT:
                qo = out_range[t] if isinstance(out_range, dict) else qrange(*out_range, t)
            unary(g, op, t, x, qi, qo, opts() if callable(opts) else opts)
        return build

    for t in types:
        add(f"{prefix}_{t}", op, t, about, make(t))


# ================================================================ batch 1
batch(1)

# ---- LEAKY_RELU


def _leaky(t, alpha, qo=None):
    def build(g):
        x, qi = unary_input(g, t, -6.0, 4.0)
        q = None
        if t in QUANT:
            q = qo or qrange(min(-6.0 * alpha, 0.0), 4.0, t)
        unary(g, "LEAKY_RELU", t, x, qi, q, options("LeakyRelu", alpha=alpha))
    return build


for _t in ALL_TYPES:
    add(f"leaky_relu_{_t}", "LEAKY_RELU", _t, "alpha 0.2", _leaky(_t, 0.2))
add("leaky_relu_int8_alpha_small", "LEAKY_RELU", "int8", "alpha 0.01, output scale differs",
    _leaky("int8", 0.01, qrange(-0.5, 5.0, "int8")))
add("leaky_relu_int8_alpha_big", "LEAKY_RELU", "int8", "alpha 1.7 (> 1)",
    _leaky("int8", 1.7, qrange(-10.5, 4.5, "int8")))
add("leaky_relu_int16_alpha_small", "LEAKY_RELU", "int16", "alpha 0.01, output scale differs",
    _leaky("int16", 0.01, Q(4.0 / 32767 * 1.3, 0)))

# ---- PRELU


def _prelu(t, alpha_shape):
    def build(g):
        shape = (1, 8, 8, 4)
        if t in QUANT:
            x, qi = data_for(g.rng, t, shape, sweep=True), qrange(-5.0, 3.0, t)
        else:
            x, qi = data_for(g.rng, t, shape, -5.0, 3.0), None
        alpha = g.rng.uniform(-0.3, 0.6, alpha_shape)
        xi = g.input("x", t, x, qi)
        if t in QUANT:
            qa = qrange(-0.3, 0.6, t)
            ai = g.const("alpha", t, quantize(alpha, qa, t), qa)
            qo = qrange(-1.6, 3.0, t)
        else:
            ai = g.const("alpha", t, alpha.astype(np.float32) if t == "float32"
                         else np.round(alpha * 4))
            qo = None
        y = g.output("y", t, shape, qo)
        g.op("PRELU", [xi, ai], [y])
    return build


for _t in NUM_TYPES:
    add(f"prelu_{_t}", "PRELU", _t, "x [1,8,8,4], constant alpha [1,1,4] (shared over H, W)",
        _prelu(_t, (1, 1, 4)))
for _t in ("float32", "int8", "int16"):
    add(f"prelu_{_t}_alpha_hwc", "PRELU", _t, "constant alpha [8,8,4] (one per element)",
        _prelu(_t, (8, 8, 4)))
    add(f"prelu_{_t}_alpha_c", "PRELU", _t, "constant alpha [4] (rank 1, per channel)",
        _prelu(_t, (4,)))

# ---- RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR


def _resize(op, t, in_hw, out_hw, align=False, half=False, channels=3):
    def build(g):
        shape = (1, *in_hw, channels)
        q = default_q(t, -3.0, 5.0)
        x = data_for(g.rng, t, shape, -3.0, 5.0)
        xi = g.input("x", t, x, q)
        size = g.const("size", "int32", list(out_hw))
        y = g.output("y", t, (1, *out_hw, channels), q)
        kind = "ResizeBilinear" if op == "RESIZE_BILINEAR" else "ResizeNearestNeighbor"
        g.op(op, [xi, size], [y], options(kind, alignCorners=align, halfPixelCenters=half))
    return build


for _op in ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"):
    _p = _op.lower()
    for _t in NUM_TYPES:
        add(f"{_p}_{_t}", _op, _t, "[1,5,4,3] -> [1,8,7,3], constant size",
            _resize(_op, _t, (5, 4), (8, 7)))
    for _t in ("float32", "int8", "int16"):
        add(f"{_p}_{_t}_align_corners", _op, _t, "[1,5,4,3] -> [1,8,7,3], align_corners",
            _resize(_op, _t, (5, 4), (8, 7), align=True))
        add(f"{_p}_{_t}_half_pixel", _op, _t, "[1,5,4,3] -> [1,8,7,3], half_pixel_centers",
            _resize(_op, _t, (5, 4), (8, 7), half=True))
    add(f"{_p}_float32_down", _op, "float32", "[1,9,7,2] -> [1,4,3,2] (downscale)",
        _resize(_op, "float32", (9, 7), (4, 3), channels=2))
    add(f"{_p}_int8_down_half_pixel", _op, "int8",
        "[1,9,7,2] -> [1,4,3,2] (downscale), half_pixel_centers",
        _resize(_op, "int8", (9, 7), (4, 3), half=True, channels=2))
    add(f"{_p}_int8_up2x_align_corners", _op, "int8",
        "[1,3,4,2] -> [1,6,8,2] (exact 2x), align_corners",
        _resize(_op, "int8", (3, 4), (6, 8), align=True, channels=2))

# ---- elementwise math

unary_family("RSQRT", "1/sqrt(x), x in (0, 8]", 0.0, 8.0, (0.3, 4.0), float_lo=0.02)
unary_family("SQRT", "sqrt(x), x in [0, 8]", 0.0, 8.0, (0.0, 2.9))
unary_family("LOG", "log(x), x in (0, 8]", 0.0, 8.0, (-4.0, 2.1), float_lo=0.01)
unary_family("EXP", "exp(x), x in [-5, 3]", -5.0, 3.0, (0.0, 20.1))
unary_family("ABS", "|x|", -5.0, 3.0, (0.0, 5.0))
unary_family("NEG", "-x", -5.0, 3.0, (-3.0, 5.0))
unary_family("SQUARE", "x*x", -3.0, 2.0, (0.0, 9.0))
unary_family("HARD_SWISH", "x*relu6(x+3)/6", -5.0, 5.0, (-0.375, 5.0))
unary_family("ELU", "x>0 ? x : exp(x)-1", -5.0, 3.0, (-1.0, 3.0))
unary_family("LOGICAL_NOT", "!x", 0, 1, None, types=("bool",))
add("abs_int8_same_q", "ABS", "int8", "|x| with output quantization equal to the input's",
    lambda g: unary(g, "ABS", "int8", sweep_int8(g.rng), qrange(-4.0, 6.0, "int8"),
                    qrange(-4.0, 6.0, "int8")))
add("hard_swish_int8_narrow", "HARD_SWISH", "int8", "input [-2, 1.5], output scale finer",
    lambda g: unary(g, "HARD_SWISH", "int8", sweep_int8(g.rng), qrange(-2.0, 1.5, "int8"),
                    qrange(-0.4, 1.2, "int8")))

# ---- comparisons


def _cmp_data(g, t, shape):
    """Small values with many ties."""
    if t == "float32":
        return (g.rng.integers(-6, 7, shape) / 2.0).astype(np.float32)
    if t == "bool":
        return bools(g.rng, shape)
    if t == "uint8":
        return g.rng.integers(120, 136, shape)
    return g.rng.integers(-8, 8, shape)


_CMP_FN = {"GREATER_EQUAL": np.greater_equal, "GREATER": np.greater, "LESS": np.less,
           "LESS_EQUAL": np.less_equal, "EQUAL": np.equal, "NOT_EQUAL": np.not_equal}


def _cmp(op, t, sa, sb, rescale=False):
    def build(g):
        a, b = _cmp_data(g, t, sa), _cmp_data(g, t, sb)
        if sb == ():
            b = np.array(1)  # mid-range: both answers occur
        qa = qb = default_q(t, -3.0, 5.0)
        if rescale:
            # b on a grid twice as coarse as a: many of a's values equal one of b's exactly
            qa, qb = Q(0.05, -3), Q(0.1, 5)
            a = g.rng.integers(-128, 128, sa)
            b = g.rng.integers(-20, 20, sb)
            real_b = 0.1 * (np.broadcast_to(b, bcast(sa, sb)) - 5)
            eq = np.round(real_b / 0.05) - 3
            # an element of a, wherever it meets b's first element under broadcasting
            eq = eq.reshape(-1)[0] if np.shape(a) != np.shape(eq) else eq
            a = np.where(g.rng.random(sa) < 0.5, eq, a)
        else:
            # same quantization (or none): the raw comparison is the answer
            g.check = lambda ins, outs: (None if np.array_equal(
                _CMP_FN[op](ins[0], ins[1]), outs[0]) else
                "TFLM's output is not the comparison of its inputs")
        binary(g, op, t, a, b, qa, qb, None, out_t="bool")
    return build


for _op in ("GREATER_EQUAL", "GREATER", "LESS", "LESS_EQUAL", "EQUAL", "NOT_EQUAL"):
    _p = _op.lower()
    for _t in ALL_TYPES:
        add(f"{_p}_{_t}", _op, _t, "[4,16] vs [4,16], many ties", _cmp(_op, _t, (4, 16), (4, 16)))
    add(f"{_p}_int8_rescale", _op, "int8",
        "inputs quantized differently (s 0.05 zp -3 vs s 0.1 zp 5), half equal",
        _cmp(_op, "int8", (4, 16), (4, 16), rescale=True))
    add(f"{_p}_float32_broadcast", _op, "float32", "[2,3,1,4] vs [3,5,1]",
        _cmp(_op, "float32", (2, 3, 1, 4), (3, 5, 1)))
    add(f"{_p}_int8_broadcast", _op, "int8", "[2,1,5] vs [4,1], differently quantized",
        _cmp(_op, "int8", (2, 1, 5), (4, 1), rescale=True))
    add(f"{_p}_int32_broadcast", _op, "int32", "[3,4] vs scalar []",
        _cmp(_op, "int32", (3, 4), ()))
    add(f"{_p}_float32_broadcast_rank5", _op, "float32", "[2,1,3,1,2] vs [1,2,1,3,1]",
        _cmp(_op, "float32", (2, 1, 3, 1, 2), (1, 2, 1, 3, 1)))

# ---- BATCH_MATMUL


def _bmm(t, sa, sb, adj_x=False, adj_y=False, const_b=False):
    def build(g):
        qa = default_q(t, -3.0, 4.0)
        qb = {"int8": Q(0.03, 0), "int16": Q(4.0 / 32767, 0)}.get(t)
        if t == "uint8":
            qb = Q(0.03, 128)
        a = data_for(g.rng, t, sa, -3.0, 4.0) if t != "int32" else ints(g.rng, sa, -20, 20)
        b = data_for(g.rng, t, sb, -3.0, 4.0) if t != "int32" else ints(g.rng, sb, -20, 20)
        ai = g.input("a", t, a, qa)
        bi = g.const("b", t, b, qb) if const_b else g.input("b", t, b, qb)
        m = sa[-1] if adj_x else sa[-2]
        n = sb[-2] if adj_y else sb[-1]
        shape = (*bcast(sa[:-2], sb[:-2]), m, n)
        qo = default_q(t, -20.0, 24.0)
        y = g.output("y", t, shape, qo)
        g.op("BATCH_MATMUL", [ai, bi], [y], options("BatchMatMul", adjX=adj_x, adjY=adj_y))
    return build


for _t in NUM_TYPES:
    add(f"batch_matmul_{_t}", "BATCH_MATMUL", _t, "[2,3,4] x [2,4,5], both runtime inputs",
        _bmm(_t, (2, 3, 4), (2, 4, 5)))
for _t in ("float32", "int8", "int16"):
    add(f"batch_matmul_{_t}_adj_x", "BATCH_MATMUL", _t, "adj_x: [2,4,3]^T x [2,4,5]",
        _bmm(_t, (2, 4, 3), (2, 4, 5), adj_x=True))
    add(f"batch_matmul_{_t}_adj_y", "BATCH_MATMUL", _t, "adj_y: [2,3,4] x [2,5,4]^T",
        _bmm(_t, (2, 3, 4), (2, 5, 4), adj_y=True))
    add(f"batch_matmul_{_t}_broadcast", "BATCH_MATMUL", _t,
        "batch broadcast [2,1,3,4] x [1,3,4,5]", _bmm(_t, (2, 1, 3, 4), (1, 3, 4, 5)))
    add(f"batch_matmul_{_t}_const_rhs", "BATCH_MATMUL", _t, "[1,3,6] x constant [6,4] (rank 2)",
        _bmm(_t, (1, 3, 6), (6, 4), const_b=True))
add("batch_matmul_float32_adj_xy", "BATCH_MATMUL", "float32", "adj_x and adj_y",
    _bmm("float32", (2, 4, 3), (2, 5, 4), adj_x=True, adj_y=True))
add("batch_matmul_float32_rank2", "BATCH_MATMUL", "float32", "[3,4] x [4,5]",
    _bmm("float32", (3, 4), (4, 5)))
add("batch_matmul_float32_rank5", "BATCH_MATMUL", "float32", "[2,1,2,3,4] x [1,2,1,4,3]",
    _bmm("float32", (2, 1, 2, 3, 4), (1, 2, 1, 4, 3)))
add("batch_matmul_int8_const_rhs_adj_y", "BATCH_MATMUL", "int8", "constant rhs [4,6]^T, adj_y",
    _bmm("int8", (1, 3, 6), (4, 6), adj_y=True, const_b=True))

# ---- SQUARED_DIFFERENCE, DIV


def _binary_arith(op, t, sa, sb, act=None, kind=None, nonzero_b=False, out=(-8.0, 8.0)):
    def build(g):
        qa, qb = default_q(t, -4.0, 4.0), default_q(t, -2.0, 3.0)
        a = data_for(g.rng, t, sa, -4.0, 4.0)
        b = data_for(g.rng, t, sb, -2.0, 3.0)
        if t in ("int32", "int64"):
            a, b = ints(g.rng, sa, -100, 100, t), ints(g.rng, sb, -100, 100, t)
        if nonzero_b:
            if t == "float32":
                b = (g.rng.uniform(0.25, 3.0, sb) * g.rng.choice([-1, 1], sb)).astype(np.float32)
            elif t in QUANT:
                zp = qb.zero_point  # neither a real 0 nor a raw 0
                b = np.where((b.astype(np.int64) == zp) | (b == 0), zp + 1 if zp else 1, b)
            else:
                b = np.where(b == 0, 7, b)
        qo = default_q(t, *out)
        opts = None
        if kind:
            opts = options(kind, fusedActivationFunction=ACT[act or "NONE"])
        binary(g, op, t, a, b, qa, qb, qo, opts)
    return build


for _t in NUM_TYPES:
    add(f"squared_difference_{_t}", "SQUARED_DIFFERENCE", _t, "[4,16] and [4,16]",
        _binary_arith("SQUARED_DIFFERENCE", _t, (4, 16), (4, 16), out=(0.0, 40.0)))
for _t in ("float32", "int8", "int16"):
    add(f"squared_difference_{_t}_broadcast", "SQUARED_DIFFERENCE", _t, "[2,3,4] and [3,1]",
        _binary_arith("SQUARED_DIFFERENCE", _t, (2, 3, 4), (3, 1), out=(0.0, 40.0)))
add("squared_difference_float32_broadcast_rank5", "SQUARED_DIFFERENCE", "float32",
    "[2,1,3,1,2] and [1,2,1,3,1]", _binary_arith("SQUARED_DIFFERENCE", "float32",
                                                  (2, 1, 3, 1, 2), (1, 2, 1, 3, 1)))
add("div_float32_broadcast_rank5", "DIV", "float32", "[2,1,3,1,2] / [1,2,1,3,1]",
    _binary_arith("DIV", "float32", (2, 1, 3, 1, 2), (1, 2, 1, 3, 1), kind="Div",
                  nonzero_b=True, out=(-10.0, 10.0)))

for _t in NUM_TYPES:
    add(f"div_{_t}", "DIV", _t, "[4,16] / [4,16], nonzero divisors",
        _binary_arith("DIV", _t, (4, 16), (4, 16), kind="Div", nonzero_b=True,
                      out=(-10.0, 10.0)))
for _t in ("float32", "int8"):
    add(f"div_{_t}_broadcast", "DIV", _t, "[2,3,4] / [4], nonzero divisors",
        _binary_arith("DIV", _t, (2, 3, 4), (4,), kind="Div", nonzero_b=True, out=(-10.0, 10.0)))
    add(f"div_{_t}_relu", "DIV", _t, "fused RELU",
        _binary_arith("DIV", _t, (4, 16), (4, 16), act="RELU", kind="Div", nonzero_b=True,
                      out=(0.0, 10.0)))
    add(f"div_{_t}_relu6", "DIV", _t, "fused RELU6",
        _binary_arith("DIV", _t, (4, 16), (4, 16), act="RELU6", kind="Div", nonzero_b=True,
                      out=(0.0, 6.0)))

# ---- LOGICAL_AND / LOGICAL_OR


def _logical(op, sa, sb):
    return lambda g: binary(g, op, "bool", bools(g.rng, sa), bools(g.rng, sb))


for _op in ("LOGICAL_AND", "LOGICAL_OR"):
    add(f"{_op.lower()}_bool", _op, "bool", "[4,16] and [4,16]", _logical(_op, (4, 16), (4, 16)))
    add(f"{_op.lower()}_bool_broadcast", _op, "bool", "[2,3,4] and [3,1]",
        _logical(_op, (2, 3, 4), (3, 1)))

# ---- SELECT_V2 / SELECT


def _select(op, t, sc_, sx, sy):
    def build(g):
        q = default_q(t)
        c = g.input("cond", "bool", bools(g.rng, sc_))
        x = g.input("x", t, data_for(g.rng, t, sx), q)
        y = g.input("y", t, data_for(g.rng, t, sy), q)
        o = g.output("out", t, bcast(sc_, sx, sy) if op == "SELECT_V2" else sx, q)
        g.op(op, [c, x, y], [o])
    return build


for _t in ALL_TYPES:
    add(f"select_v2_{_t}", "SELECT_V2", _t, "cond, x, y all [4,16]",
        _select("SELECT_V2", _t, (4, 16), (4, 16), (4, 16)))
for _t in ("float32", "int8", "int16", "int32"):
    add(f"select_v2_{_t}_broadcast", "SELECT_V2", _t, "cond [3,1], x [2,1,4], y [4]",
        _select("SELECT_V2", _t, (3, 1), (2, 1, 4), (4,)))
add("select_v2_float32_broadcast_rank5", "SELECT_V2", "float32",
    "cond [2,1,3,1,1], x [1,2,1,2,1], y [2]",
    _select("SELECT_V2", "float32", (2, 1, 3, 1, 1), (1, 2, 1, 2, 1), (2,)))
for _t in ALL_TYPES:
    add(f"select_{_t}", "SELECT", _t, "cond, x, y all [4,16]",
        _select("SELECT", _t, (4, 16), (4, 16), (4, 16)))
add("select_float32_rank1_cond", "SELECT", "float32", "cond [4] picks rows of x, y [4,5]",
    _select("SELECT", "float32", (4,), (4, 5), (4, 5)))

# ---- CAST

_CAST_RANGE = {"float32": (-100.0, 100.0), "int8": (-128, 127), "int16": (-32768, 32767),
               "uint8": (0, 255), "int32": (-70000, 70000), "int64": (-5 * 10**9, 5 * 10**9)}
_CAST_FLOAT_TO = {"int8": (-128.0, 127.0), "int16": (-3000.0, 3000.0), "uint8": (0.0, 255.0),
                  "int32": (-1e6, 1e6), "int64": (-1e6, 1e6), "bool": (-2.0, 2.0),
                  "float32": (-100.0, 100.0)}


def _cast(src, dst):
    def build(g):
        shape = (4, 16)
        if src == "bool":
            x = bools(g.rng, shape)
        elif src == "float32":
            x = uniform(g.rng, shape, *_CAST_FLOAT_TO[dst])
            x.flat[:4] = [0.0, -0.0, 0.5, -0.5] if dst not in ("uint8",) else [0, 0.5, 1.5, 2.5]
        else:
            lo, hi = _CAST_RANGE[src]
            x = ints(g.rng, shape, lo, hi, src)
            x.flat[:3] = [0, lo, hi]
        unary(g, "CAST", src, x, out_t=dst,
              opts=options("Cast", inDataType=DTYPES[src][0], outDataType=DTYPES[dst][0]))
    return build


for _s in ALL_TYPES:
    for _d in ALL_TYPES:
        if _s != _d:
            add(f"cast_{_s}_to_{_d}", "CAST", _s, f"{_s} -> {_d}", _cast(_s, _d),
                probe=f"{_s}->{_d}")

# ---- GATHER


def _gather(t, params_shape, idx, axis=0, batch_dims=0, idx_t="int32"):
    def build(g):
        q = default_q(t)
        p = data_for(g.rng, t, params_shape)
        pi = g.input("params", t, p, q)
        ii = g.input("indices", idx_t, idx(g.rng))
        ax = axis % len(params_shape)
        ishape = np.shape(idx(np.random.default_rng(0)))
        shape = (*params_shape[:ax], *ishape[batch_dims:], *params_shape[ax + 1:])
        y = g.output("y", t, shape, q)
        g.op("GATHER", [pi, ii], [y], options("Gather", axis=axis, batchDims=batch_dims))
    return build


for _t in ALL_TYPES:
    add(f"gather_{_t}", "GATHER", _t, "params [5,6], indices [4] (int32), axis 0",
        _gather(_t, (5, 6), lambda r: r.integers(0, 5, (4,))))
for _t in ("float32", "int8", "int16"):
    add(f"gather_{_t}_axis1", "GATHER", _t, "params [3,7,2], indices [2,3], axis 1",
        _gather(_t, (3, 7, 2), lambda r: r.integers(0, 7, (2, 3)), axis=1))
add("gather_float32_axis_neg", "GATHER", "float32", "params [3,4,6], indices [5], axis -1",
    _gather("float32", (3, 4, 6), lambda r: r.integers(0, 6, (5,)), axis=-1))
add("gather_int8_indices_int64", "GATHER", "int8", "params [6,4], indices [3,2] int64, axis 0",
    _gather("int8", (6, 4), lambda r: r.integers(0, 6, (3, 2)), idx_t="int64"))
add("gather_float32_batch_dims", "GATHER", "float32",
    "params [2,5,3], indices [2,4], axis 1, batch_dims 1",
    _gather("float32", (2, 5, 3), lambda r: r.integers(0, 5, (2, 4)), axis=1, batch_dims=1))
add("gather_int8_batch_dims_axis2", "GATHER", "int8",
    "params [2,3,5,2], indices [2,3,4], axis 2, batch_dims 2",
    _gather("int8", (2, 3, 5, 2), lambda r: r.integers(0, 5, (2, 3, 4)), axis=2, batch_dims=2))

# ---- ARG_MAX / ARG_MIN


def _arg(op, t, shape, axis, out_t="int32", axis_t="int32"):
    def build(g):
        q = default_q(t)
        x = _cmp_data(g, t, shape)  # small values: many ties
        if t == "int8":
            x = g.rng.integers(-128, -120, shape)
        xi = g.input("x", t, x, q)
        ai = g.const("axis", axis_t, [axis])
        ax = axis % len(shape)
        y = g.output("y", out_t, shape[:ax] + shape[ax + 1:])
        kind = "ArgMax" if op == "ARG_MAX" else "ArgMin"
        g.op(op, [xi, ai], [y], options(kind, outputType=DTYPES[out_t][0]))
    return build


for _op in ("ARG_MAX", "ARG_MIN"):
    _p = _op.lower()
    for _t in ALL_TYPES:
        add(f"{_p}_{_t}", _op, _t, "[3,4,5] along axis 2 (last), int32 output, ties",
            _arg(_op, _t, (3, 4, 5), 2))
    add(f"{_p}_float32_axis1", _op, "float32", "[3,4,5] along axis 1",
        _arg(_op, "float32", (3, 4, 5), 1))
    add(f"{_p}_int8_axis0", _op, "int8", "[3,4,5] along axis 0", _arg(_op, "int8", (3, 4, 5), 0))
    add(f"{_p}_float32_axis_neg", _op, "float32", "[3,4,5] along axis -2",
        _arg(_op, "float32", (3, 4, 5), -2))
    add(f"{_p}_int8_int64_out", _op, "int8", "int64 output, int64 axis tensor",
        _arg(_op, "int8", (4, 6), 1, out_t="int64", axis_t="int64"))
    add(f"{_p}_int16_axis0", _op, "int16", "[6,5] along axis 0", _arg(_op, "int16", (6, 5), 0))


# ================================================================ batch 2
batch(2)

# ---- ADD_N


def _add_n(t, n=3, same_q=False):
    def build(g):
        ins = []
        for k in range(n):
            q = default_q(t, -3.0, 3.0)  # TFLM wants the inputs quantized alike
            x = data_for(g.rng, t, (4, 16), -2.0 - k, 2.0 + k)
            ins.append(g.input(f"x{k}", t, x, q))
        qo = default_q(t, -8.0, 8.0) if not same_q else default_q(t, -3.0, 3.0)
        y = g.output("y", t, (4, 16), qo)
        g.op("ADD_N", ins, [y])
    return build


for _t in NUM_TYPES:
    add(f"add_n_{_t}", "ADD_N", _t, "three [4,16] inputs, output quantized differently",
        _add_n(_t))
add("add_n_int8_same_q", "ADD_N", "int8", "three inputs and the output quantized alike",
    _add_n("int8", same_q=True))
add("add_n_float32_rank4", "ADD_N", "float32", "four [1,2,3,4] inputs",
    lambda g: _add_n_shape(g, 4, (1, 2, 3, 4)))


def _add_n_shape(g, n, shape):
    ins = [g.input(f"x{k}", "float32", uniform(g.rng, shape, -2.0, 2.0)) for k in range(n)]
    g.op("ADD_N", ins, [g.output("y", "float32", shape)])
add("add_n_float32_two", "ADD_N", "float32", "two inputs", _add_n("float32", n=2))

# ---- BATCH_TO_SPACE_ND / SPACE_TO_BATCH_ND


def _b2s(t, in_shape, block, crops):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        bi = g.const("block_shape", "int32", block)
        ci = g.const("crops", "int32", np.array(crops).reshape(-1, 2))
        nb = int(np.prod(block))
        sp = [in_shape[1 + i] * b - sum(crops[i]) for i, b in enumerate(block)]
        y = g.output("y", t, (in_shape[0] // nb, *sp, *in_shape[1 + len(block):]), q)
        g.op("BATCH_TO_SPACE_ND", [xi, bi, ci], [y])
    return build


def _s2b(t, in_shape, block, pads):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        bi = g.const("block_shape", "int32", block)
        pi = g.const("paddings", "int32", np.array(pads).reshape(-1, 2))
        nb = int(np.prod(block))
        sp = [(in_shape[1 + i] + sum(pads[i])) // b for i, b in enumerate(block)]
        y = g.output("y", t, (in_shape[0] * nb, *sp, *in_shape[1 + len(block):]), q)
        g.op("SPACE_TO_BATCH_ND", [xi, bi, pi], [y])
    return build


for _t in ALL_TYPES:
    add(f"batch_to_space_nd_{_t}", "BATCH_TO_SPACE_ND", _t,
        "[4,2,3,2], block [2,2], crops [[1,0],[0,1]] -> [1,3,5,2]",
        _b2s(_t, (4, 2, 3, 2), [2, 2], [[1, 0], [0, 1]]))
for _t in ("float32", "int8"):
    add(f"batch_to_space_nd_{_t}_3d", "BATCH_TO_SPACE_ND", _t,
        "rank 3: [6,3,2], block [3], crops [[1,2]] -> [2,6,2]",
        _b2s(_t, (6, 3, 2), [3], [[1, 2]]))
    add(f"batch_to_space_nd_{_t}_no_crop", "BATCH_TO_SPACE_ND", _t,
        "[8,2,2,1], block [2,2], no crops -> [2,4,4,1]",
        _b2s(_t, (8, 2, 2, 1), [2, 2], [[0, 0], [0, 0]]))
for _t in ALL_TYPES:
    add(f"space_to_batch_nd_{_t}", "SPACE_TO_BATCH_ND", _t,
        "[1,5,4,2], block [2,2], paddings [[1,0],[1,1]] -> [4,3,3,2] (pads with zero point)",
        _s2b(_t, (1, 5, 4, 2), [2, 2], [[1, 0], [1, 1]]))
for _t in ("float32", "int8"):
    add(f"space_to_batch_nd_{_t}_3d", "SPACE_TO_BATCH_ND", _t,
        "rank 3: [2,4,3], block [3], paddings [[2,0]] -> [6,2,3]",
        _s2b(_t, (2, 4, 3), [3], [[2, 0]]))
    add(f"space_to_batch_nd_{_t}_no_pad", "SPACE_TO_BATCH_ND", _t,
        "[2,4,4,1], block [2,2], no padding -> [8,2,2,1]",
        _s2b(_t, (2, 4, 4, 1), [2, 2], [[0, 0], [0, 0]]))

# ---- BROADCAST_ARGS / BROADCAST_TO


def _bargs(t):
    def build(g):
        a = g.input("s0", t, [2, 1, 3])
        b = g.input("s1", t, [4, 1])
        y = g.output("y", t, (3,))
        g.op("BROADCAST_ARGS", [a, b], [y])
    return build


for _t in ("int32", "int64"):
    add(f"broadcast_args_{_t}", "BROADCAST_ARGS", _t, "shapes [2,1,3] and [4,1] -> [2,4,3]",
        _bargs(_t))


def _bto(t, in_shape, shape, shape_t="int32"):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        si = g.const("shape", shape_t, shape)
        y = g.output("y", t, tuple(shape), q)
        g.op("BROADCAST_TO", [xi, si], [y], version=2)  # TFLite registers versions 2 and up
    return build


for _t in ALL_TYPES:
    add(f"broadcast_to_{_t}", "BROADCAST_TO", _t, "[3,1] -> [2,3,4], constant int32 shape",
        _bto(_t, (3, 1), [2, 3, 4]))
add("broadcast_to_float32_rank5", "BROADCAST_TO", "float32", "[2,1,3,1] -> [2,2,2,3,2]",
    _bto("float32", (2, 1, 3, 1), [2, 2, 2, 3, 2]))
add("broadcast_to_int8_shape_int64", "BROADCAST_TO", "int8", "[4] -> [3,4], int64 shape",
    _bto("int8", (4,), [3, 4], "int64"))

# ---- CEIL / FLOOR / ROUND / COS / SIN


def _rounding(op):
    def build(g):
        x = uniform(g.rng, (2, 64), -6.0, 6.0)
        x[0, :32] = np.round(x[0, :32] * 2) / 2  # exact halves: ties
        x[0, :4] = [0.0, -0.0, 0.5, -0.5]
        unary(g, op, "float32", x)
    return build


for _op in ("CEIL", "FLOOR", "ROUND"):
    for _t in NUM_TYPES:
        add(f"{_op.lower()}_{_t}", _op, _t, "x in [-6, 6], a quarter exact halves",
            _rounding(_op) if _t == "float32" else
            (lambda op, t: lambda g: unary(g, op, t, *unary_input(g, t, -6.0, 6.0),
                                           default_q(t, -6.0, 6.0)))(_op, _t))
unary_family("COS", "cos(x), x in [-7, 7]", -7.0, 7.0, (-1.0, 1.0), types=NUM_TYPES)
unary_family("SIN", "sin(x), x in [-7, 7]", -7.0, 7.0, (-1.0, 1.0), types=NUM_TYPES)

# ---- CUMSUM


def _cumsum(t, shape, axis, exclusive=False, reverse=False):
    def build(g):
        qi = default_q(t, -2.0, 2.0)
        xi = g.input("x", t, data_for(g.rng, t, shape, -2.0, 2.0), qi)
        ai = g.const("axis", "int32", axis)
        qo = default_q(t, -8.0, 8.0)
        y = g.output("y", t, shape, qo)
        g.op("CUMSUM", [xi, ai], [y], options("Cumsum", exclusive=exclusive, reverse=reverse))
    return build


for _t in NUM_TYPES:
    add(f"cumsum_{_t}", "CUMSUM", _t, "[3,8] along axis 1", _cumsum(_t, (3, 8), 1))
for _t in ("float32", "int8", "int32"):
    add(f"cumsum_{_t}_exclusive", "CUMSUM", _t, "exclusive", _cumsum(_t, (3, 8), 1, True))
    add(f"cumsum_{_t}_reverse", "CUMSUM", _t, "reverse", _cumsum(_t, (3, 8), 1, False, True))
    add(f"cumsum_{_t}_exclusive_reverse", "CUMSUM", _t, "exclusive and reverse",
        _cumsum(_t, (3, 8), 1, True, True))
add("cumsum_float32_axis0", "CUMSUM", "float32", "[4,3,2] along axis 0",
    _cumsum("float32", (4, 3, 2), 0))
add("cumsum_int8_axis_neg", "CUMSUM", "int8", "[4,3,5] along axis -2",
    _cumsum("int8", (4, 3, 5), -2))

# ---- DYNAMIC_UPDATE_SLICE


def _dus(t, start, idx_t="int32"):
    def build(g):
        q = default_q(t)
        oi = g.input("operand", t, data_for(g.rng, t, (4, 5)), q)
        ui = g.input("update", t, data_for(g.rng, t, (2, 3)), q)
        si = g.input("start", idx_t, start)
        y = g.output("y", t, (4, 5), q)
        g.op("DYNAMIC_UPDATE_SLICE", [oi, ui, si], [y])
    return build


for _t in ALL_TYPES:
    add(f"dynamic_update_slice_{_t}", "DYNAMIC_UPDATE_SLICE", _t,
        "operand [4,5], update [2,3] at runtime start [1,2]", _dus(_t, [1, 2]))
add("dynamic_update_slice_float32_clamped", "DYNAMIC_UPDATE_SLICE", "float32",
    "start [3,-1] out of range: clamped to [2,0]", _dus("float32", [3, -1]))
add("dynamic_update_slice_int8_start_int64", "DYNAMIC_UPDATE_SLICE", "int8",
    "int64 start indices [2,1]", _dus("int8", [2, 1], "int64"))

# ---- EMBEDDING_LOOKUP


def _embedding(t, out_t=None):
    def build(g):
        q = default_q(t, -1.0, 1.5)
        if t == "int8" and out_t == "float32":
            q = Q(0.01, 0)  # hybrid: symmetric per-tensor weights
        ids = g.input("ids", "int32", g.rng.integers(0, 6, (4,)))
        vi = g.const("table", t, data_for(g.rng, t, (6, 5), -1.0, 1.5), q)
        y = g.output("y", out_t or t, (4, 5), None if out_t == "float32" else q)
        g.op("EMBEDDING_LOOKUP", [ids, vi], [y])
    return build


for _t in ALL_TYPES:
    add(f"embedding_lookup_{_t}", "EMBEDDING_LOOKUP", _t, "ids [4] into constant table [6,5]",
        _embedding(_t))
add("embedding_lookup_int8_hybrid", "EMBEDDING_LOOKUP", "int8",
    "int8 table (scale 0.01) looked up into float32 output", _embedding("int8", "float32"))

# ---- FILL


def _fill(t, dims_t="int32"):
    def build(g):
        q = default_q(t)
        di = g.const("dims", dims_t, [2, 3, 4])
        v = data_for(g.rng, t, ())
        vi = g.input("value", t, v, q)
        y = g.output("y", t, (2, 3, 4), q)
        g.op("FILL", [di, vi], [y])
    return build


for _t in ALL_TYPES:
    add(f"fill_{_t}", "FILL", _t, "constant dims [2,3,4], runtime scalar value", _fill(_t))
add("fill_float32_dims_int64", "FILL", "float32", "int64 dims", _fill("float32", "int64"))

# ---- FLOOR_DIV / FLOOR_MOD


def _floor(op, t, sa, sb):
    def build(g):
        if t == "float32":
            a = uniform(g.rng, sa, -9.0, 9.0)
            b = (g.rng.uniform(0.5, 4.0, sb) * g.rng.choice([-1, 1], sb)).astype(np.float32)
        else:
            a = data_for(g.rng, t, sa) if t in QUANT else ints(g.rng, sa, -50, 50, t)
            lo = 1
            b = g.rng.integers(lo, 9, sb) * g.rng.choice([-1, 1], sb)
            if t == "uint8":
                b = np.abs(b)
        q = default_q(t, -9.0, 9.0)
        binary(g, op, t, a, b, q, q, q)
    return build


for _op in ("FLOOR_DIV", "FLOOR_MOD"):
    for _t in NUM_TYPES:
        add(f"{_op.lower()}_{_t}", _op, _t, "[4,16] by [4,16], nonzero divisors of both signs",
            _floor(_op, _t, (4, 16), (4, 16)))
    for _t in ("float32", "int32"):
        add(f"{_op.lower()}_{_t}_broadcast", _op, _t, "[3,8] by [8]",
            _floor(_op, _t, (3, 8), (8,)))
    add(f"{_op.lower()}_float32_broadcast_rank5", _op, "float32", "[2,1,3,1,2] by [1,2,1,3,1]",
        _floor(_op, "float32", (2, 1, 3, 1, 2), (1, 2, 1, 3, 1)))

# ---- GATHER_ND


def _gather_nd(t, params_shape, idx_fn, idx_t="int32"):
    def build(g):
        q = default_q(t)
        pi = g.input("params", t, data_for(g.rng, t, params_shape), q)
        idx = idx_fn(g.rng)
        ii = g.input("indices", idx_t, idx)
        shape = (*idx.shape[:-1], *params_shape[idx.shape[-1]:])
        y = g.output("y", t, shape, q)
        g.op("GATHER_ND", [pi, ii], [y])
    return build


def _nd_idx(shape, n, depth):
    return lambda r: np.stack([r.integers(0, shape[d], n) for d in range(depth)], -1)


for _t in ALL_TYPES:
    add(f"gather_nd_{_t}", "GATHER_ND", _t, "params [3,4,2], indices [5,2] -> [5,2]",
        _gather_nd(_t, (3, 4, 2), _nd_idx((3, 4, 2), 5, 2)))
add("gather_nd_float32_full_depth", "GATHER_ND", "float32",
    "params [3,4,2], indices [6,3] (scalars) -> [6]",
    _gather_nd("float32", (3, 4, 2), _nd_idx((3, 4, 2), 6, 3)))
add("gather_nd_int8_slices", "GATHER_ND", "int8", "params [4,3,2], indices [2,2,1] -> [2,2,3,2]",
    _gather_nd("int8", (4, 3, 2), lambda r: r.integers(0, 4, (2, 2, 1))))
add("gather_nd_float32_indices_int64", "GATHER_ND", "float32", "int64 indices [4,2]",
    _gather_nd("float32", (3, 4, 2), _nd_idx((3, 4, 2), 4, 2), "int64"))

# ---- L2_NORMALIZATION / L2_POOL_2D / LOG_SOFTMAX


def _l2norm(t, shape, act="NONE"):
    def build(g):
        if t in QUANT:
            x, qi = data_for(g.rng, t, shape), qrange(-3.0, 2.0, t)
        else:
            x, qi = data_for(g.rng, t, shape, -3.0, 2.0), None
        qo = {"int8": Q(1 / 128, 0), "int16": Q(1 / 32768, 0), "uint8": Q(1 / 128, 128)}.get(t)
        unary(g, "L2_NORMALIZATION", t, x, qi, qo,
              options("L2Norm", fusedActivationFunction=ACT[act]))
    return build


for _t in NUM_TYPES:
    add(f"l2_normalization_{_t}", "L2_NORMALIZATION", _t, "[4,16], along the last axis",
        _l2norm(_t, (4, 16)))
add("l2_normalization_int8_4d", "L2_NORMALIZATION", "int8", "[1,2,3,8]",
    _l2norm("int8", (1, 2, 3, 8)))


def conv_out(size, k, stride, pad, dilation=1):
    eff = (k - 1) * dilation + 1
    return -(-size // stride) if pad == "SAME" else (size - eff) // stride + 1


def _pool(op, t, in_shape, k, stride, pad, act="NONE", q_out=None):
    def build(g):
        qi = default_q(t, -3.0, 5.0)
        xi = g.input("x", t, data_for(g.rng, t, in_shape, -3.0, 5.0), qi)
        oshape = (in_shape[0], conv_out(in_shape[1], k[0], stride[0], pad),
                  conv_out(in_shape[2], k[1], stride[1], pad), in_shape[3])
        y = g.output("y", t, oshape, q_out or qi)
        g.op(op, [xi], [y], options("Pool2D", padding=PAD[pad], strideW=stride[1],
                                    strideH=stride[0], filterWidth=k[1], filterHeight=k[0],
                                    fusedActivationFunction=ACT[act]))
    return build


for _t in NUM_TYPES:
    add(f"l2_pool_2d_{_t}", "L2_POOL_2D", _t, "[1,6,6,2], 2x2, stride 2, VALID",
        _pool("L2_POOL_2D", _t, (1, 6, 6, 2), (2, 2), (2, 2), "VALID"))
add("l2_pool_2d_float32_same", "L2_POOL_2D", "float32", "[1,5,7,3], 3x2, stride 1, SAME",
    _pool("L2_POOL_2D", "float32", (1, 5, 7, 3), (3, 2), (1, 1), "SAME"))
add("l2_pool_2d_float32_relu6", "L2_POOL_2D", "float32", "[1,6,6,2], 2x2, stride 2, SAME, RELU6",
    _pool("L2_POOL_2D", "float32", (1, 6, 6, 2), (2, 2), (2, 2), "SAME", "RELU6"))


def _log_softmax(t, shape, lo=-4.0, hi=4.0):
    def build(g):
        qi = default_q(t, lo, hi)
        x = data_for(g.rng, t, shape, lo, hi)
        qo = {"int8": Q(16 / 256, 127), "uint8": Q(16 / 256, 255), "int16": Q(16 / 32768, 32767)
              }.get(t)
        unary(g, "LOG_SOFTMAX", t, x, qi, qo, options("LogSoftmax"))
    return build


for _t in NUM_TYPES:
    add(f"log_softmax_{_t}", "LOG_SOFTMAX", _t, "[4,16], along the last axis",
        _log_softmax(_t, (4, 16)))
add("log_softmax_int8_wide", "LOG_SOFTMAX", "int8", "[2,3,10], inputs over [-10, 6]",
    _log_softmax("int8", (2, 3, 10), -10.0, 6.0))
add("log_softmax_float32_wide", "LOG_SOFTMAX", "float32", "[2,3,10], inputs over [-30, 30]",
    _log_softmax("float32", (2, 3, 10), -30.0, 30.0))

# ---- MIRROR_PAD


def _mirror(t, shape, pads, mode, pad_t="int32"):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, shape), q)
        pi = g.const("paddings", pad_t, np.array(pads).reshape(-1, 2))
        y = g.output("y", t, tuple(s + sum(p) for s, p in zip(shape, pads)), q)
        g.op("MIRROR_PAD", [xi, pi], [y],
             options("MirrorPad", mode=getattr(S.MirrorPadMode, mode)))
    return build


for _mode in ("REFLECT", "SYMMETRIC"):
    _m = _mode.lower()
    for _t in ALL_TYPES:
        add(f"mirror_pad_{_t}_{_m}", "MIRROR_PAD", _t, f"{_mode}, [3,4] pads [[1,2],[2,1]]",
            _mirror(_t, (3, 4), [[1, 2], [2, 1]], _mode), probe=_t)
    add(f"mirror_pad_int8_{_m}_4d", "MIRROR_PAD", "int8",
        f"{_mode}, [1,3,4,2] pads [[0,0],[2,1],[1,3],[0,0]]",
        _mirror("int8", (1, 3, 4, 2), [[0, 0], [2, 1], [1, 3], [0, 0]], _mode))
    add(f"mirror_pad_float32_{_m}_paddings_int64", "MIRROR_PAD", "float32",
        f"{_mode}, int64 paddings", _mirror("float32", (4, 3), [[0, 3], [1, 0]], _mode, "int64"))

# ---- REDUCE_ALL / REDUCE_ANY


def _reduce(op, t, shape, axes, keep=False, q_out=None, lo=-4.0, hi=4.0, axes_t="int32"):
    def build(g):
        qi = default_q(t, lo, hi)
        xi = g.input("x", t, data_for(g.rng, t, shape, lo, hi), qi)
        ai = g.const("axes", axes_t, axes)
        ax = sorted({a % len(shape) for a in np.atleast_1d(axes)})
        oshape = tuple(1 if i in ax else s for i, s in enumerate(shape)) if keep else \
            tuple(s for i, s in enumerate(shape) if i not in ax)
        y = g.output("y", t, oshape, q_out if q_out is not None else qi)
        g.op(op, [xi, ai], [y], options("Reducer", keepDims=keep))
    return build


for _op in ("REDUCE_ALL", "REDUCE_ANY"):
    _p = _op.lower()
    add(f"{_p}_bool", _op, "bool", "[3,4,5] over axis 1", _reduce(_op, "bool", (3, 4, 5), [1]))
    add(f"{_p}_bool_keep_dims", _op, "bool", "[3,4,5] over axes [0,2], keep_dims",
        _reduce(_op, "bool", (3, 4, 5), [0, 2], keep=True))
    add(f"{_p}_bool_axis_neg", _op, "bool", "[3,4,2] over axis -1",
        _reduce(_op, "bool", (3, 4, 2), [-1]))

# ---- REVERSE_V2


def _reverse(t, shape, axes):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, shape), q)
        ai = g.const("axis", "int32", axes)
        y = g.output("y", t, shape, q)
        g.op("REVERSE_V2", [xi, ai], [y])
    return build


for _t in ALL_TYPES:
    add(f"reverse_v2_{_t}", "REVERSE_V2", _t, "[3,4,5] along axis 1", _reverse(_t, (3, 4, 5), [1]))
add("reverse_v2_float32_axes_0_1", "REVERSE_V2", "float32", "[3,4,5] along axes [0,1]",
    _reverse("float32", (3, 4, 5), [0, 1]))
add("reverse_v2_int16_axes_1_2", "REVERSE_V2", "int16", "[3,4,5] along axes [1,2]",
    _reverse("int16", (3, 4, 5), [1, 2]))
add("reverse_v2_int8_axis_neg", "REVERSE_V2", "int8", "[2,3,4] along axis -1",
    _reverse("int8", (2, 3, 4), [-1]))

# ---- SHAPE


def _shape(out_t, in_t="float32"):
    def build(g):
        xi = g.input("x", in_t, data_for(g.rng, in_t, (2, 3, 4)), default_q(in_t))
        y = g.output("y", out_t, (3,))
        g.op("SHAPE", [xi], [y], options("Shape", outType=DTYPES[out_t][0]))
    return build


for _t in ("int32", "int64"):
    add(f"shape_{_t}", "SHAPE", _t, f"shape of a float32 [2,3,4] as {_t}", _shape(_t))
add("shape_int32_of_int8", "SHAPE", "int32", "shape of an int8 [2,3,4]", _shape("int32", "int8"))

# ---- TRANSPOSE_CONV


def _conv_weights(g, t, shape, axis, per_channel=True):
    """Float weights and (data, quantization) for a conv weight tensor of type t."""
    w = g.rng.standard_normal(shape) / np.sqrt(np.prod(shape) / shape[axis])
    if t == "float32":
        return w.astype(np.float32), None
    if t in ("int32", "int64"):
        return np.round(w * 4), None
    if t == "uint8":  # the old uint8 scheme: per-tensor, zero point 128
        q = Q(float(np.abs(w).max() / 127.0), 128)
        return quantize(w, q, "uint8"), q
    wt = "int8"
    n = shape[axis]
    if per_channel:
        red = tuple(i for i in range(len(shape)) if i != axis)
        scales = np.maximum(np.abs(w).max(axis=red), 1e-3) / 127.0
        q = Q(scales, np.zeros(n, np.int64), axis)
    else:
        q = Q(float(np.abs(w).max() / 127.0), 0)
    return quantize(w, q, wt), q


def weight_type(t):
    return {"int16": "int8"}.get(t, t)


def _bias(g, t, n, in_q, w_q):
    """Constant bias: float32, int32 (int8 activations) or int64 (int16 activations)."""
    b = g.rng.uniform(-0.5, 0.5, n)
    if t == "float32":
        return g.const("bias", "float32", b.astype(np.float32))
    if t in ("int32", "int64"):
        return g.const("bias", t, np.round(b * 8))
    scales = np.asarray(in_q.scale, np.float64) * np.atleast_1d(np.asarray(w_q.scale))
    scales = np.broadcast_to(scales, (n,))
    bt = "int64" if t == "int16" else "int32"
    data = np.round(b / scales)
    q = Q(scales if len(np.atleast_1d(w_q.scale)) > 1 else float(scales[0]),
          np.zeros(n, np.int64) if len(np.atleast_1d(w_q.scale)) > 1 else 0, 0)
    return g.const("bias", bt, data, q)


def _tconv(t, in_shape, cout, k, stride, pad, bias=True, act="NONE", per_channel=True):
    def build(g):
        qi = default_q(t, -2.0, 3.0)
        xi = g.input("x", t, data_for(g.rng, t, in_shape, -2.0, 3.0), qi)
        cin = in_shape[3]
        w, wq = _conv_weights(g, t, (cout, k[0], k[1], cin), 0, per_channel)
        wi = g.const("weights", weight_type(t), w, wq)
        if pad == "SAME":
            oh, ow = in_shape[1] * stride[0], in_shape[2] * stride[1]
        else:
            oh = (in_shape[1] - 1) * stride[0] + k[0]
            ow = (in_shape[2] - 1) * stride[1] + k[1]
        oshape = (in_shape[0], oh, ow, cout)
        si = g.const("output_shape", "int32", oshape)
        bi = _bias(g, t, cout, qi, wq) if bias else -1
        y = g.output("y", t, oshape, default_q(t, -4.0, 5.0))
        g.op("TRANSPOSE_CONV", [si, wi, xi, bi], [y],
             options("TransposeConv", padding=PAD[pad], strideW=stride[1], strideH=stride[0],
                     fusedActivationFunction=ACT[act]))
    return build


for _t in NUM_TYPES:
    add(f"transpose_conv_{_t}", "TRANSPOSE_CONV", _t,
        "[1,3,4,3] -> [1,6,8,4], 3x3, stride 2, SAME, bias, per-channel weights",
        _tconv(_t, (1, 3, 4, 3), 4, (3, 3), (2, 2), "SAME"))
for _t in ("float32", "int8", "int16"):
    add(f"transpose_conv_{_t}_valid", "TRANSPOSE_CONV", _t,
        "[1,3,3,2] -> [1,7,7,3], 3x3, stride 2, VALID", _tconv(_t, (1, 3, 3, 2), 3, (3, 3), (2, 2),
                                                               "VALID"))
    add(f"transpose_conv_{_t}_no_bias", "TRANSPOSE_CONV", _t, "no bias, 2x3 kernel, stride (1,2)",
        _tconv(_t, (1, 4, 3, 2), 3, (2, 3), (1, 2), "SAME", bias=False))
add("transpose_conv_float32_relu", "TRANSPOSE_CONV", "float32", "fused RELU",
    _tconv("float32", (1, 3, 4, 3), 4, (3, 3), (2, 2), "SAME", act="RELU"))
add("transpose_conv_int8_relu6", "TRANSPOSE_CONV", "int8", "fused RELU6",
    _tconv("int8", (1, 3, 4, 3), 4, (3, 3), (2, 2), "SAME", act="RELU6"))
add("transpose_conv_int8_per_tensor", "TRANSPOSE_CONV", "int8", "per-tensor weight scale",
    _tconv("int8", (1, 3, 4, 3), 4, (3, 3), (2, 2), "SAME", per_channel=False))

# ---- ZEROS_LIKE

for _t in ALL_TYPES:
    add(f"zeros_like_{_t}", "ZEROS_LIKE", _t, "[3,5]",
        (lambda t: lambda g: unary(g, "ZEROS_LIKE", t, data_for(g.rng, t, (3, 5)),
                                   default_q(t), default_q(t)))(_t))


# ================================================================ batch 3: Kiln's builtins
batch(3)


def pack_int4(values):
    """Two int4 values per byte, the first in the low nibble (TFLM's packed int4 layout)."""
    v = (np.asarray(values, np.int64).ravel() & 0xF).astype(np.uint8)
    if v.size % 2:
        v = np.append(v, 0)
    return (v[0::2] | (v[1::2] << 4)).astype(np.uint8).tobytes()


def _weights_const(g, t, w, wq, int4=False):
    if int4:
        assert wq is not None
        return g.main.tensor("weights", S.TensorType.INT4, w.shape, wq, data=pack_int4(w))
    return g.const("weights", weight_type(t), w, wq)


def _int4_weights(g, shape, axis):
    w = g.rng.standard_normal(shape) / np.sqrt(np.prod(shape) / shape[axis])
    red = tuple(i for i in range(len(shape)) if i != axis)
    scales = np.maximum(np.abs(w).max(axis=red), 1e-3) / 7.0
    q = Q(scales, np.zeros(shape[axis], np.int64), axis)
    return np.clip(quantize(w, q, "int8"), -8, 7), q


# ---- CONV_2D


def _conv(t, in_shape, cout, k, stride=(1, 1), pad="SAME", dil=(1, 1), act="NONE", bias=True,
          per_channel=True, groups=1, int4=False, bias_t=None):
    def build(g):
        qi = default_q(t, -2.0, 3.0)
        xi = g.input("x", t, data_for(g.rng, t, in_shape, -2.0, 3.0), qi)
        cin = in_shape[3] // groups
        wshape = (cout, k[0], k[1], cin)
        if int4:
            w, wq = _int4_weights(g, wshape, 0)
        else:
            w, wq = _conv_weights(g, t, wshape, 0, per_channel)
        wi = _weights_const(g, t, w, wq, int4)
        bi = -1
        if bias:
            bi = _bias(g, t, cout, qi, wq)
            if bias_t is not None:  # e.g. int32 bias with int16 activations
                bt = g.main.tensors[bi]
                old = np.frombuffer(bytes(g.buffers[bt.buffer].data), np.int64)
                bt.type = DTYPES[bias_t][0]
                g.buffers[bt.buffer].data = old.astype(DTYPES[bias_t][1]).tobytes()
        oshape = (in_shape[0], conv_out(in_shape[1], k[0], stride[0], pad, dil[0]),
                  conv_out(in_shape[2], k[1], stride[1], pad, dil[1]), cout)
        qo = default_q(t, -4.0, 5.0) if act == "NONE" else default_q(t, 0.0, 6.0)
        y = g.output("y", t, oshape, qo)
        g.op("CONV_2D", [xi, wi, bi], [y],
             options("Conv2D", padding=PAD[pad], strideW=stride[1], strideH=stride[0],
                     dilationWFactor=dil[1], dilationHFactor=dil[0],
                     fusedActivationFunction=ACT[act]))
    return build


for _t in NUM_TYPES:
    add(f"conv_2d_{_t}", "CONV_2D", _t,
        "[1,6,6,3] -> 4 channels, 3x3, stride 1, SAME, bias, per-channel weights",
        _conv(_t, (1, 6, 6, 3), 4, (3, 3)))
for _t in ("float32", "int8", "int16"):
    add(f"conv_2d_{_t}_s2_valid", "CONV_2D", _t, "[1,7,7,4] -> 5, 3x3, stride 2, VALID",
        _conv(_t, (1, 7, 7, 4), 5, (3, 3), (2, 2), "VALID"))
    add(f"conv_2d_{_t}_relu", "CONV_2D", _t, "fused RELU", _conv(_t, (1, 6, 6, 3), 4, (3, 3),
                                                                 act="RELU"))
    add(f"conv_2d_{_t}_relu6_1x1", "CONV_2D", _t, "1x1, fused RELU6, [1,5,7,8] -> 6",
        _conv(_t, (1, 5, 7, 8), 6, (1, 1), act="RELU6"))
    add(f"conv_2d_{_t}_dilation", "CONV_2D", _t, "3x3, dilation (2,1), SAME, [1,8,7,2] -> 3",
        _conv(_t, (1, 8, 7, 2), 3, (3, 3), dil=(2, 1)))
    add(f"conv_2d_{_t}_no_bias", "CONV_2D", _t, "no bias, 2x3 kernel, strides (2,1), SAME",
        _conv(_t, (1, 7, 5, 3), 4, (2, 3), (2, 1), bias=False))
add("conv_2d_float32_relu_n1_to_1", "CONV_2D", "float32", "fused RELU_N1_TO_1",
    _conv("float32", (1, 5, 5, 2), 3, (3, 3), act="RELU_N1_TO_1"))
add("conv_2d_int8_per_tensor", "CONV_2D", "int8", "per-tensor weight scale",
    _conv("int8", (1, 6, 6, 3), 4, (3, 3), per_channel=False))
add("conv_2d_int8_batch2", "CONV_2D", "int8", "batch 2, 3x3, stride 2, SAME",
    _conv("int8", (2, 5, 5, 3), 4, (3, 3), (2, 2)))
add("conv_2d_int8_grouped", "CONV_2D", "int8", "grouped: 6 input channels in 2 groups -> 4",
    _conv("int8", (1, 5, 5, 6), 4, (3, 3), groups=2))
add("conv_2d_float32_grouped", "CONV_2D", "float32", "grouped: 6 input channels in 3 groups -> 6",
    _conv("float32", (1, 5, 5, 6), 6, (3, 3), groups=3))
add("conv_2d_int8_int4_weights", "CONV_2D", "int8", "packed int4 per-channel weights",
    _conv("int8", (1, 6, 6, 3), 4, (3, 3), int4=True))
add("conv_2d_int16_bias_int32", "CONV_2D", "int16", "16x8 with an int32 bias",
    _conv("int16", (1, 6, 6, 3), 4, (3, 3), bias_t="int32"))

# ---- DEPTHWISE_CONV_2D


def _dw(t, in_shape, mult, k, stride=(1, 1), pad="SAME", dil=(1, 1), act="NONE", bias=True,
        per_channel=True, int4=False):
    def build(g):
        qi = default_q(t, -2.0, 3.0)
        xi = g.input("x", t, data_for(g.rng, t, in_shape, -2.0, 3.0), qi)
        cout = in_shape[3] * mult
        wshape = (1, k[0], k[1], cout)
        if int4:
            w, wq = _int4_weights(g, wshape, 3)
        else:
            w, wq = _conv_weights(g, t, wshape, 3, per_channel)
            if wq is not None and per_channel and t != "uint8":
                wq.axis = 3
        wi = _weights_const(g, t, w, wq, int4)
        # without bias the op has two inputs: TFLM's depthwise kernel crashes on a -1 bias
        ins = [xi, wi, _bias(g, t, cout, qi, wq)] if bias else [xi, wi]
        oshape = (in_shape[0], conv_out(in_shape[1], k[0], stride[0], pad, dil[0]),
                  conv_out(in_shape[2], k[1], stride[1], pad, dil[1]), cout)
        qo = default_q(t, -4.0, 5.0) if act == "NONE" else default_q(t, 0.0, 6.0)
        y = g.output("y", t, oshape, qo)
        g.op("DEPTHWISE_CONV_2D", ins, [y],
             options("DepthwiseConv2D", padding=PAD[pad], strideW=stride[1], strideH=stride[0],
                     depthMultiplier=mult, dilationWFactor=dil[1], dilationHFactor=dil[0],
                     fusedActivationFunction=ACT[act]))
    return build


for _t in NUM_TYPES:
    add(f"depthwise_conv_2d_{_t}", "DEPTHWISE_CONV_2D", _t,
        "[1,6,6,4], multiplier 1, 3x3, stride 1, SAME, bias, per-channel weights",
        _dw(_t, (1, 6, 6, 4), 1, (3, 3)))
for _t in ("float32", "int8", "int16"):
    add(f"depthwise_conv_2d_{_t}_m2_s2", "DEPTHWISE_CONV_2D", _t,
        "[1,7,7,3], multiplier 2, 3x3, stride 2, SAME, fused RELU6",
        _dw(_t, (1, 7, 7, 3), 2, (3, 3), (2, 2), act="RELU6"))
    add(f"depthwise_conv_2d_{_t}_valid_dilation", "DEPTHWISE_CONV_2D", _t,
        "[1,9,8,2], 3x3, dilation 2, VALID, fused RELU", _dw(_t, (1, 9, 8, 2), 1, (3, 3),
                                                             pad="VALID", dil=(2, 2), act="RELU"))
    add(f"depthwise_conv_2d_{_t}_no_bias", "DEPTHWISE_CONV_2D", _t,
        "no bias (two inputs), 5x3 kernel, strides (1,2)",
        _dw(_t, (1, 6, 7, 3), 1, (5, 3), (1, 2), bias=False))
add("depthwise_conv_2d_int8_per_tensor", "DEPTHWISE_CONV_2D", "int8", "per-tensor weight scale",
    _dw("int8", (1, 6, 6, 4), 1, (3, 3), per_channel=False))
add("depthwise_conv_2d_int8_int4_weights", "DEPTHWISE_CONV_2D", "int8",
    "packed int4 per-channel weights", _dw("int8", (1, 6, 6, 4), 1, (3, 3), int4=True))
add("depthwise_conv_2d_int8_m3", "DEPTHWISE_CONV_2D", "int8", "1 channel, multiplier 3",
    _dw("int8", (1, 5, 5, 1), 3, (3, 3)))

# ---- FULLY_CONNECTED


def _fc(t, in_shape, units, act="NONE", bias=True, per_channel=False, keep=False, int4=False):
    def build(g):
        qi = default_q(t, -2.0, 3.0)
        xi = g.input("x", t, data_for(g.rng, t, in_shape, -2.0, 3.0), qi)
        wshape = (units, in_shape[-1])
        if int4:
            w, wq = _int4_weights(g, wshape, 0)
            if not per_channel:
                wq = Q(float(np.max(wq.scale)), 0)
        else:
            w, wq = _conv_weights(g, t, wshape, 0, per_channel)
        wi = _weights_const(g, t, w, wq, int4)
        bi = _bias(g, t, units, qi, wq) if bias else -1
        lead = in_shape[:-1] if keep else (int(np.prod(in_shape[:-1])),)
        qo = default_q(t, -4.0, 5.0) if act == "NONE" else default_q(t, 0.0, 6.0)
        y = g.output("y", t, (*lead, units), qo)
        g.op("FULLY_CONNECTED", [xi, wi, bi], [y],
             options("FullyConnected", fusedActivationFunction=ACT[act], keepNumDims=keep))
    return build


for _t in NUM_TYPES:
    add(f"fully_connected_{_t}", "FULLY_CONNECTED", _t,
        "[2,16] -> [2,8], bias, per-tensor weights", _fc(_t, (2, 16), 8))
for _t in ("float32", "int8", "int16"):
    add(f"fully_connected_{_t}_relu", "FULLY_CONNECTED", _t, "fused RELU",
        _fc(_t, (2, 16), 8, act="RELU"))
    add(f"fully_connected_{_t}_no_bias", "FULLY_CONNECTED", _t, "no bias, [3,10] -> [3,5]",
        _fc(_t, (3, 10), 5, bias=False))
    add(f"fully_connected_{_t}_keep_num_dims", "FULLY_CONNECTED", _t,
        "keep_num_dims: [2,3,8] -> [2,3,4]", _fc(_t, (2, 3, 8), 4, keep=True))
    add(f"fully_connected_{_t}_flatten", "FULLY_CONNECTED", _t,
        "[2,3,8] flattened to [6,8] -> [6,4]", _fc(_t, (2, 3, 8), 4))
    add(f"fully_connected_{_t}_per_channel", "FULLY_CONNECTED", _t, "per-channel weights",
        _fc(_t, (2, 16), 8, per_channel=True))
add("fully_connected_float32_relu6", "FULLY_CONNECTED", "float32", "fused RELU6",
    _fc("float32", (2, 16), 8, act="RELU6"))
add("fully_connected_int8_relu6", "FULLY_CONNECTED", "int8", "fused RELU6",
    _fc("int8", (2, 16), 8, act="RELU6"))
add("fully_connected_int8_int4_weights", "FULLY_CONNECTED", "int8", "packed int4 weights",
    _fc("int8", (2, 16), 8, int4=True))

# ---- ADD / SUB / MUL

_ARITH_OUT = {"ADD": (-6.0, 7.0), "SUB": (-7.0, 6.0), "MUL": (-12.0, 12.0)}


def _arith(op, t, sa, sb, act="NONE", pot=False, same_q=False):
    def build(g):
        if t in ("int32", "int64"):
            a, b = ints(g.rng, sa, -100, 100, t), ints(g.rng, sb, -100, 100, t)
            qa = qb = qo = None
        else:
            a = data_for(g.rng, t, sa, -4.0, 4.0)
            b = data_for(g.rng, t, sb, -2.0, 3.0)
            qa, qb = default_q(t, -4.0, 4.0), default_q(t, -2.0, 3.0)
            lo, hi = _ARITH_OUT[op]
            if act == "RELU":
                lo = 0.0
            elif act == "RELU6":
                lo, hi = 0.0, 6.0
            elif act == "RELU_N1_TO_1":
                lo, hi = -1.0, 1.0
            qo = default_q(t, lo, hi)
            if same_q:
                qa = qb = qo = default_q(t, -5.0, 5.0)
            if pot:  # power-of-two int16 scales
                qa, qb, qo = Q(2.0 ** -13, 0), Q(2.0 ** -13, 0), Q(2.0 ** -12, 0)
        kind = {"ADD": "Add", "SUB": "Sub", "MUL": "Mul"}[op]
        fields = {"fusedActivationFunction": ACT[act]}
        if op != "MUL":
            fields["potScaleInt16"] = pot
        binary(g, op, t, a, b, qa, qb, qo, options(kind, **fields))
    return build


for _op in ("ADD", "SUB", "MUL"):
    _p = _op.lower()
    for _t in NUM_TYPES:
        add(f"{_p}_{_t}", _op, _t, "[4,16] and [4,16]", _arith(_op, _t, (4, 16), (4, 16)))
    for _t in ("float32", "int8", "int16"):
        add(f"{_p}_{_t}_relu", _op, _t, "fused RELU", _arith(_op, _t, (4, 16), (4, 16), "RELU"))
        add(f"{_p}_{_t}_relu6", _op, _t, "fused RELU6",
            _arith(_op, _t, (4, 16), (4, 16), "RELU6"))
        add(f"{_p}_{_t}_scalar", _op, _t, "[4,8] and a scalar []",
            _arith(_op, _t, (4, 8), ()))
        add(f"{_p}_{_t}_broadcast_rank1", _op, _t, "[3,8] and [8]", _arith(_op, _t, (3, 8), (8,)))
        add(f"{_p}_{_t}_broadcast_rank4", _op, _t, "[2,1,3,4] and [1,5,1,4]",
            _arith(_op, _t, (2, 1, 3, 4), (1, 5, 1, 4)))
        add(f"{_p}_{_t}_broadcast_rank5", _op, _t, "[2,1,3,1,2] and [1,2,1,4,1]",
            _arith(_op, _t, (2, 1, 3, 1, 2), (1, 2, 1, 4, 1)))
    add(f"{_p}_float32_broadcast_rank6", _op, "float32", "[2,1,2,1,2,1] and [1,2,1,2,1,3]",
        _arith(_op, "float32", (2, 1, 2, 1, 2, 1), (1, 2, 1, 2, 1, 3)))
    add(f"{_p}_int32_broadcast_rank4", _op, "int32", "[2,1,3,4] and [1,5,1,4]",
        _arith(_op, "int32", (2, 1, 3, 4), (1, 5, 1, 4)))
    add(f"{_p}_int8_same_q", _op, "int8", "inputs and output quantized alike",
        _arith(_op, "int8", (4, 16), (4, 16), same_q=True))
    add(f"{_p}_float32_relu_n1_to_1", _op, "float32", "fused RELU_N1_TO_1",
        _arith(_op, "float32", (4, 16), (4, 16), "RELU_N1_TO_1"))
for _op in ("ADD", "SUB"):
    add(f"{_op.lower()}_int16_pot_scale", _op, "int16",
        "pot_scale_int16: power-of-two scales (2^-13, 2^-13 -> 2^-12)",
        _arith(_op, "int16", (4, 16), (4, 16), pot=True))

# ---- RELU / RELU6 / RELU_N1_TO_1 / LOGISTIC / TANH

unary_family("RELU", "max(x, 0)", -4.0, 4.0, (0.0, 4.0))
unary_family("RELU6", "min(max(x, 0), 6)", -3.0, 8.0, (0.0, 6.0))
unary_family("RELU_N1_TO_1", "min(max(x, -1), 1)", -2.0, 2.0, (-1.0, 1.0))
add("relu_int8_same_q", "RELU", "int8", "output quantized like the input",
    lambda g: unary(g, "RELU", "int8", sweep_int8(g.rng), qrange(-3.0, 5.0, "int8"),
                    qrange(-3.0, 5.0, "int8")))
add("relu6_int16_same_q", "RELU6", "int16", "output quantized like the input",
    lambda g: unary(g, "RELU6", "int16", sweep_int16(g.rng), Q(8.0 / 32768, 0),
                    Q(8.0 / 32768, 0)))

_SIGMOID_Q = {"int8": Q(1 / 256, -128), "int16": Q(1 / 32768, 0), "uint8": Q(1 / 256, 0)}
_TANH_Q = {"int8": Q(1 / 128, 0), "int16": Q(1 / 32768, 0), "uint8": Q(1 / 128, 128)}
unary_family("LOGISTIC", "sigmoid, inputs over [-8, 8]", -8.0, 8.0, _SIGMOID_Q)
unary_family("TANH", "tanh, inputs over [-5, 5]", -5.0, 5.0, _TANH_Q)
for _op, _q in (("LOGISTIC", _SIGMOID_Q), ("TANH", _TANH_Q)):
    _p = _op.lower()
    add(f"{_p}_int8_narrow", _op, "int8", "inputs over [-2, 3] (asymmetric)",
        (lambda op, q: lambda g: unary(g, op, "int8", sweep_int8(g.rng), qrange(-2.0, 3.0, "int8"),
                                       q["int8"]))(_op, _q))
    add(f"{_p}_int16_pot", _op, "int16", "power-of-two input scale 2^-12 (range [-8, 8))",
        (lambda op, q: lambda g: unary(g, op, "int16", sweep_int16(g.rng), Q(2.0 ** -12, 0),
                                       q["int16"]))(_op, _q))

# ---- DEQUANTIZE / QUANTIZE


def _dequantize(t, per_channel=False):
    def build(g):
        if per_channel:
            x = data_for(g.rng, t, (4, 32))
            q = Q([0.01, 0.02, 0.05, 0.003], [3, -7, 0, 12] if t != "int16" else 0, 0)
        else:
            x, q = unary_input(g, t, -3.0, 5.0)
        unary(g, "DEQUANTIZE", t, x, q, out_t="float32")
    return build


for _t in ("int8", "int16", "uint8", "int32", "float16"):
    add(f"dequantize_{_t}", "DEQUANTIZE", _t, f"{_t} -> float32", _dequantize(_t)
        if _t != "float16" else
        (lambda g: unary(g, "DEQUANTIZE", "float16",
                         uniform(g.rng, (4, 16), -3, 3).astype(np.float16), out_t="float32")))
add("dequantize_int8_per_channel", "DEQUANTIZE", "int8", "per-channel along axis 0",
    _dequantize("int8", True))


def _quantize(src, dst, qi=None, qo=None, ties=False):
    def build(g):
        if src == "float32":
            x = uniform(g.rng, (4, 32), -4.0, 4.0)
            if ties:
                x = (g.rng.integers(-120, 120, (4, 32)) / 32.0).astype(np.float32)
            q_in = None
        else:
            x, q_in = unary_input(g, src, -4.0, 4.0)
            q_in = qi or q_in
        unary(g, "QUANTIZE", src, x, q_in, qo or qrange(-3.0, 5.0, dst), out_t=dst)
    return build


for _d in ("int8", "int16", "uint8", "int32"):
    add(f"quantize_{_d}", "QUANTIZE", _d, f"float32 -> {_d}", _quantize("float32", _d),
        probe=f"float32->{_d}")
add("quantize_int8_ties", "QUANTIZE", "int8", "float32 -> int8, scale 1/16: many exact halves",
    _quantize("float32", "int8", qo=Q(1 / 16, -3), ties=True), probe="float32->int8")
for _s, _d in (("int8", "int8"), ("int16", "int16"), ("int16", "int8"), ("int8", "int16"),
               ("uint8", "int8"), ("int8", "uint8"), ("int8", "int32"), ("int16", "int32")):
    add(f"quantize_{_d}_from_{_s}", "QUANTIZE", _d, f"requantize {_s} -> {_d}",
        _quantize(_s, _d, qo=qrange(-2.5, 3.5, _d) if _d != "int32" else Q(0.001, 0)),
        probe=f"{_s}->{_d}")
add("quantize_int8_from_int8_same_scale", "QUANTIZE", "int8",
    "requantize int8 -> int8, same scale, zero point moved",
    _quantize("int8", "int8", qi=Q(0.03, -5), qo=Q(0.03, 20)), probe="int8->int8")

# ---- MAXIMUM / MINIMUM


def _maxmin(op, t, sa, sb):
    def build(g):
        q = default_q(t)
        binary(g, op, t, data_for(g.rng, t, sa), data_for(g.rng, t, sb), q, q, q)
    return build


for _op in ("MAXIMUM", "MINIMUM"):
    for _t in ALL_TYPES:
        add(f"{_op.lower()}_{_t}", _op, _t, "[4,16] and [4,16], all quantized alike",
            _maxmin(_op, _t, (4, 16), (4, 16)))
    for _t in ("float32", "int8", "int16"):
        add(f"{_op.lower()}_{_t}_broadcast", _op, _t, "[2,1,3,4] and [5,1,4]",
            _maxmin(_op, _t, (2, 1, 3, 4), (5, 1, 4)))
    add(f"{_op.lower()}_float32_scalar", _op, "float32", "[3,8] and a scalar []",
        _maxmin(_op, "float32", (3, 8), ()))
    add(f"{_op.lower()}_float32_broadcast_rank5", _op, "float32", "[2,1,3,1,2] and [1,2,1,3,1]",
        _maxmin(_op, "float32", (2, 1, 3, 1, 2), (1, 2, 1, 3, 1)))

# ---- AVERAGE_POOL_2D / MAX_POOL_2D

for _op in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
    _p = _op.lower()
    for _t in NUM_TYPES:
        add(f"{_p}_{_t}", _op, _t, "[1,6,6,3], 2x2, stride 2, VALID",
            _pool(_op, _t, (1, 6, 6, 3), (2, 2), (2, 2), "VALID"))
    for _t in ("float32", "int8", "int16"):
        add(f"{_p}_{_t}_same", _op, _t, "[1,7,5,2], 3x3, stride 2, SAME (partial windows)",
            _pool(_op, _t, (1, 7, 5, 2), (3, 3), (2, 2), "SAME"))
        add(f"{_p}_{_t}_relu6", _op, _t, "[1,5,6,2], 3x2, strides (1,2), SAME, fused RELU6",
            _pool(_op, _t, (1, 5, 6, 2), (3, 2), (1, 2), "SAME", "RELU6"))
        add(f"{_p}_{_t}_global", _op, _t, "[2,4,5,3], 4x5 window (global), VALID",
            _pool(_op, _t, (2, 4, 5, 3), (4, 5), (1, 1), "VALID"))
    add(f"{_p}_float32_relu", _op, "float32", "fused RELU",
        _pool(_op, "float32", (1, 6, 6, 3), (2, 2), (2, 2), "VALID", "RELU"))
    add(f"{_p}_int8_relu", _op, "int8", "fused RELU",
        _pool(_op, "int8", (1, 6, 6, 3), (2, 2), (2, 2), "VALID", "RELU"))

# ---- MEAN / SUM / REDUCE_MAX / REDUCE_MIN / REDUCE_PROD

_RED_OUT = {"MEAN": (-3.0, 4.0), "SUM": (-40.0, 40.0), "REDUCE_MAX": None, "REDUCE_MIN": None,
            "REDUCE_PROD": (-30.0, 30.0)}
for _op in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD"):
    _p = _op.lower()
    _lo, _hi = (-1.5, 2.0) if _op == "REDUCE_PROD" else (-4.0, 4.0)

    def _qo(t, op=_op):
        r = _RED_OUT[op]
        return default_q(t, *r) if r and t in QUANT else None

    for _t in NUM_TYPES:
        add(f"{_p}_{_t}", _op, _t, "[2,4,4,3] over axes [1,2], keep_dims (global pooling)",
            _reduce(_op, _t, (2, 4, 4, 3), [1, 2], True, _qo(_t), _lo, _hi))
    for _t in ("float32", "int8", "int16"):
        add(f"{_p}_{_t}_last_axis", _op, _t, "[3,4,5] over axis -1, no keep_dims",
            _reduce(_op, _t, (3, 4, 5), [-1], False, _qo(_t), _lo, _hi))
        add(f"{_p}_{_t}_axis0", _op, _t, "[4,3,2] over axis 0, keep_dims",
            _reduce(_op, _t, (4, 3, 2), [0], True, _qo(_t), _lo, _hi))
        add(f"{_p}_{_t}_all_axes", _op, _t, "[3,4,2] over axes [0,1,2]",
            _reduce(_op, _t, (3, 4, 2), [0, 1, 2], False, _qo(_t), _lo, _hi))
    add(f"{_p}_int8_same_q", _op, "int8", "[2,4,4,3] over [1,2], output quantized like input",
        _reduce(_op, "int8", (2, 4, 4, 3), [1, 2], True, None, _lo, _hi))
    add(f"{_p}_float32_axes_int64", _op, "float32", "int64 axes tensor [1]",
        _reduce(_op, "float32", (3, 4, 5), [1], False, None, _lo, _hi, axes_t="int64"))

# ---- RESHAPE / SQUEEZE / EXPAND_DIMS


def _reshape(t, in_shape, new, mode="tensor"):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        size = int(np.prod(in_shape))
        oshape = [d if d != -1 else size // -int(np.prod(new)) for d in new]
        ins = [xi]
        if mode == "tensor":
            ins.append(g.const("shape", "int32", new))
        opts = options("Reshape", newShape=list(new)) if mode == "options" else None
        y = g.output("y", t, oshape, q)
        g.op("RESHAPE", ins, [y], opts)
    return build


for _t in ALL_TYPES:
    add(f"reshape_{_t}", "RESHAPE", _t, "[2,3,4] -> [4,6], constant shape tensor",
        _reshape(_t, (2, 3, 4), [4, 6]))
add("reshape_float32_minus_one", "RESHAPE", "float32", "[2,3,4] -> [-1,2] = [12,2]",
    _reshape("float32", (2, 3, 4), [-1, 2]))
add("reshape_int8_new_shape_option", "RESHAPE", "int8",
    "[1,2,6] -> [3,4] from the new_shape option, no shape tensor",
    _reshape("int8", (1, 2, 6), [3, 4], mode="options"))


def _squeeze(t, in_shape, dims):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        nd = len(in_shape)
        drop = {d % nd for d in dims} if dims else {i for i, s in enumerate(in_shape) if s == 1}
        y = g.output("y", t, [s for i, s in enumerate(in_shape) if i not in drop], q)
        g.op("SQUEEZE", [xi], [y], options("Squeeze", squeezeDims=list(dims)))
    return build


for _t in ALL_TYPES:
    add(f"squeeze_{_t}", "SQUEEZE", _t, "[1,3,1,4] squeeze_dims [0,2]",
        _squeeze(_t, (1, 3, 1, 4), [0, 2]))
add("squeeze_float32_all", "SQUEEZE", "float32", "[1,3,1,4,1], no squeeze_dims: all 1s",
    _squeeze("float32", (1, 3, 1, 4, 1), []))
add("squeeze_int8_negative", "SQUEEZE", "int8", "[2,1,3,1] squeeze_dims [-1]",
    _squeeze("int8", (2, 1, 3, 1), [-1]))


def _expand(t, in_shape, axis, axis_t="int32"):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        ai = g.const("axis", axis_t, [axis])
        ax = axis % (len(in_shape) + 1)
        oshape = list(in_shape[:ax]) + [1] + list(in_shape[ax:])
        y = g.output("y", t, oshape, q)
        g.op("EXPAND_DIMS", [xi, ai], [y])
    return build


for _t in ALL_TYPES:
    add(f"expand_dims_{_t}", "EXPAND_DIMS", _t, "[3,4] axis 1 -> [3,1,4]", _expand(_t, (3, 4), 1))
add("expand_dims_float32_negative", "EXPAND_DIMS", "float32", "[3,4] axis -1 -> [3,4,1]",
    _expand("float32", (3, 4), -1))
add("expand_dims_int8_axis_int64", "EXPAND_DIMS", "int8", "[3,4] int64 axis 0 -> [1,3,4]",
    _expand("int8", (3, 4), 0, "int64"))

# ---- TRANSPOSE


def _transpose(t, in_shape, perm):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        pi = g.const("perm", "int32", perm)
        y = g.output("y", t, [in_shape[p] for p in perm], q)
        g.op("TRANSPOSE", [xi, pi], [y])
    return build


for _t in ALL_TYPES:
    add(f"transpose_{_t}", "TRANSPOSE", _t, "[2,3,4] perm [2,0,1]",
        _transpose(_t, (2, 3, 4), [2, 0, 1]))
add("transpose_float32_rank2", "TRANSPOSE", "float32", "[5,7] perm [1,0]",
    _transpose("float32", (5, 7), [1, 0]))
add("transpose_int8_rank4", "TRANSPOSE", "int8", "[1,2,3,4] NHWC->NCHW perm [0,3,1,2]",
    _transpose("int8", (1, 2, 3, 4), [0, 3, 1, 2]))
add("transpose_float32_rank5", "TRANSPOSE", "float32", "[2,1,3,2,2] perm [4,2,0,3,1]",
    _transpose("float32", (2, 1, 3, 2, 2), [4, 2, 0, 3, 1]))
add("transpose_int8_rank6", "TRANSPOSE", "int8", "[2,1,2,3,1,2] perm [5,4,3,2,1,0]",
    _transpose("int8", (2, 1, 2, 3, 1, 2), [5, 4, 3, 2, 1, 0]))

# ---- PAD / PADV2


def _pad(op, t, in_shape, pads, value=None, pad_t="int32"):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        pi = g.const("paddings", pad_t, np.array(pads).reshape(-1, 2))
        ins = [xi, pi]
        if value is not None:
            v = value if t == "float32" else (quantize(value, q, t) if t in QUANT else
                                              np.round(value))
            ins.append(g.const("value", t, np.asarray(v).reshape(()), q))
        y = g.output("y", t, [s + sum(p) for s, p in zip(in_shape, pads)], q)
        g.op(op, ins, [y])
    return build


for _t in ALL_TYPES:
    add(f"pad_{_t}", "PAD", _t, "[1,3,4,2] pads [[0,0],[1,2],[2,0],[0,0]] (zero point)",
        _pad("PAD", _t, (1, 3, 4, 2), [[0, 0], [1, 2], [2, 0], [0, 0]]))
add("pad_float32_rank2", "PAD", "float32", "[3,4] pads [[1,1],[0,3]]",
    _pad("PAD", "float32", (3, 4), [[1, 1], [0, 3]]))
add("pad_int8_paddings_int64", "PAD", "int8", "int64 paddings, [2,3] pads [[2,1],[1,2]]",
    _pad("PAD", "int8", (2, 3), [[2, 1], [1, 2]], pad_t="int64"))
add("pad_float32_rank5", "PAD", "float32", "[1,2,2,2,2] pads [[0,1],[1,0],[0,1],[1,1],[0,0]]",
    _pad("PAD", "float32", (1, 2, 2, 2, 2), [[0, 1], [1, 0], [0, 1], [1, 1], [0, 0]]))
for _t in ALL_TYPES:
    add(f"padv2_{_t}", "PADV2", _t, "[1,3,4,2] pads [[0,0],[1,2],[2,0],[0,0]], value 1.5",
        _pad("PADV2", _t, (1, 3, 4, 2), [[0, 0], [1, 2], [2, 0], [0, 0]], value=1.5))
add("padv2_int8_negative_value", "PADV2", "int8", "[3,4] pads [[1,0],[2,2]], value -3.9",
    _pad("PADV2", "int8", (3, 4), [[1, 0], [2, 2]], value=-3.9))

# ---- CONCATENATION


def _concat(t, shapes, axis, same_q=True, act="NONE"):
    def build(g):
        ins = []
        for k, s in enumerate(shapes):
            q = default_q(t) if same_q else default_q(t, -1.0 - k, 2.0 + 2 * k)
            ins.append(g.input(f"x{k}", t, data_for(g.rng, t, s), q))
        ax = axis % len(shapes[0])
        oshape = list(shapes[0])
        oshape[ax] = sum(s[ax] for s in shapes)
        y = g.output("y", t, oshape, default_q(t) if same_q else default_q(t, -3.0, 6.0))
        g.op("CONCATENATION", ins, [y],
             options("Concatenation", axis=axis, fusedActivationFunction=ACT[act]))
    return build


for _t in ALL_TYPES:
    add(f"concatenation_{_t}", "CONCATENATION", _t, "[2,3,4], [2,2,4], [2,1,4] along axis 1",
        _concat(_t, [(2, 3, 4), (2, 2, 4), (2, 1, 4)], 1))
add("concatenation_float32_axis_neg", "CONCATENATION", "float32", "[2,3], [2,5] along axis -1",
    _concat("float32", [(2, 3), (2, 5)], -1))
add("concatenation_int8_axis0", "CONCATENATION", "int8", "[1,2,3,2], [2,2,3,2] along axis 0",
    _concat("int8", [(1, 2, 3, 2), (2, 2, 3, 2)], 0))
add("concatenation_int8_requantize", "CONCATENATION", "int8",
    "inputs quantized differently from the output", _concat("int8", [(2, 4), (2, 3)], 1, False))
add("concatenation_float32_relu", "CONCATENATION", "float32", "fused RELU",
    _concat("float32", [(2, 4), (2, 3)], 1, act="RELU"))

# ---- STRIDED_SLICE / SLICE


def _strided(t, in_shape, begin, end, strides, idx_t="int32", **masks):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        b = g.const("begin", idx_t, begin)
        e = g.const("end", idx_t, end)
        s = g.const("strides", idx_t, strides)
        shape = None  # left to shape inference when masks are involved
        if not masks:
            shape = np.empty(in_shape)[tuple(map(slice, begin, end, strides))].shape
        y = g.output("y", t, shape, q)
        g.op("STRIDED_SLICE", [xi, b, e, s], [y], options("StridedSlice", **masks))
    return build


for _t in ALL_TYPES:
    add(f"strided_slice_{_t}", "STRIDED_SLICE", _t, "[4,6,3] begin [1,0,0] end [3,6,2] "
        "strides [1,2,1]", _strided(_t, (4, 6, 3), [1, 0, 0], [3, 6, 2], [1, 2, 1]))
add("strided_slice_float32_negative_stride", "STRIDED_SLICE", "float32",
    "[5,6] begin [-1,4] end [0,0] strides [-2,-1] (reversed)",
    _strided("float32", (5, 6), [-1, 4], [0, 0], [-2, -1]))
add("strided_slice_int8_masks", "STRIDED_SLICE", "int8",
    "[4,5,6] begin_mask 1, end_mask 4, shrink_axis_mask 2",
    _strided("int8", (4, 5, 6), [2, 3, 1], [3, 4, 5], [1, 1, 2], beginMask=1, endMask=4,
             shrinkAxisMask=2))
add("strided_slice_float32_ellipsis", "STRIDED_SLICE", "float32",
    "[2,3,4,5] ellipsis_mask 1: [..., 1:4:2]",
    _strided("float32", (2, 3, 4, 5), [0, 1], [0, 4], [1, 2], ellipsisMask=1))
add("strided_slice_int8_new_axis", "STRIDED_SLICE", "int8", "[3,4] new_axis_mask 2: [1:, None, :3]",
    _strided("int8", (3, 4), [1, 0, 0], [3, 0, 3], [1, 1, 1], newAxisMask=2))
add("strided_slice_float32_offset", "STRIDED_SLICE", "float32",
    "offset: end is relative to begin ([4,6] begin [1,2] end [2,3])",
    _strided("float32", (4, 6), [1, 2], [2, 3], [1, 1], offset=True))
add("strided_slice_int16_rank5", "STRIDED_SLICE", "int16", "[2,3,2,4,3] with strides 2 and -1",
    _strided("int16", (2, 3, 2, 4, 3), [0, 0, 0, 3, 0], [2, 3, 2, 0, 3], [1, 2, 1, -1, 2]))
add("strided_slice_float32_indices_int64", "STRIDED_SLICE", "float32", "int64 begin/end/strides",
    _strided("float32", (4, 6), [1, 1], [4, 5], [2, 1], idx_t="int64"))


def _slice(t, in_shape, begin, size, idx_t="int32"):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        b = g.const("begin", idx_t, begin)
        s = g.const("size", idx_t, size)
        oshape = [sz if sz != -1 else d - bg for d, bg, sz in zip(in_shape, begin, size)]
        y = g.output("y", t, oshape, q)
        g.op("SLICE", [xi, b, s], [y])
    return build


for _t in ALL_TYPES:
    add(f"slice_{_t}", "SLICE", _t, "[4,5,3] begin [1,2,0] size [2,3,3]",
        _slice(_t, (4, 5, 3), [1, 2, 0], [2, 3, 3]))
add("slice_float32_size_minus_one", "SLICE", "float32", "[4,5] begin [1,2] size [-1,2]",
    _slice("float32", (4, 5), [1, 2], [-1, 2]))
add("slice_int8_int64_indices", "SLICE", "int8", "int64 begin/size, rank 5",
    _slice("int8", (2, 3, 2, 3, 2), [1, 0, 1, 1, 0], [1, 2, 1, 2, 2], "int64"))

# ---- SPLIT / SPLIT_V


def _split(t, in_shape, axis, n):
    def build(g):
        q = default_q(t)
        ai = g.const("axis", "int32", axis)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        ax = axis % len(in_shape)
        oshape = list(in_shape)
        oshape[ax] //= n
        ys = [g.output(f"y{k}", t, oshape, q) for k in range(n)]
        g.op("SPLIT", [ai, xi], ys, options("Split", numSplits=n))
    return build


for _t in ALL_TYPES:
    add(f"split_{_t}", "SPLIT", _t, "[2,6,3] into 3 along axis 1", _split(_t, (2, 6, 3), 1, 3))
add("split_float32_axis_neg", "SPLIT", "float32", "[4,2] into 2 along axis -2",
    _split("float32", (4, 2), -2, 2))


def _split_v(t, in_shape, sizes, axis):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        si = g.const("size_splits", "int32", sizes)
        ai = g.const("axis", "int32", axis)
        ax = axis % len(in_shape)
        real = [s if s != -1 else in_shape[ax] - sum(x for x in sizes if x != -1) for s in sizes]
        ys = []
        for k, s in enumerate(real):
            oshape = list(in_shape)
            oshape[ax] = s
            ys.append(g.output(f"y{k}", t, oshape, q))
        g.op("SPLIT_V", [xi, si, ai], ys, options("SplitV", numSplits=len(sizes)))
    return build


for _t in ALL_TYPES:
    add(f"split_v_{_t}", "SPLIT_V", _t, "[2,7,2] sizes [1,4,2] along axis 1",
        _split_v(_t, (2, 7, 2), [1, 4, 2], 1))
add("split_v_float32_minus_one", "SPLIT_V", "float32", "[6,3] sizes [2,-1] along axis -2",
    _split_v("float32", (6, 3), [2, -1], -2))

# ---- PACK / UNPACK


def _pack(t, shape, n, axis):
    def build(g):
        q = default_q(t)
        ins = [g.input(f"x{k}", t, data_for(g.rng, t, shape), q) for k in range(n)]
        ax = axis % (len(shape) + 1)
        y = g.output("y", t, list(shape[:ax]) + [n] + list(shape[ax:]), q)
        g.op("PACK", ins, [y], options("Pack", valuesCount=n, axis=axis))
    return build


def _unpack(t, shape, axis):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, shape), q)
        ax = axis % len(shape)
        oshape = [s for i, s in enumerate(shape) if i != ax]
        ys = [g.output(f"y{k}", t, oshape, q) for k in range(shape[ax])]
        g.op("UNPACK", [xi], ys, options("Unpack", num=shape[ax], axis=axis))
    return build


for _t in ALL_TYPES:
    add(f"pack_{_t}", "PACK", _t, "three [2,3] along axis 1 -> [2,3,3]", _pack(_t, (2, 3), 3, 1))
add("pack_float32_axis_neg", "PACK", "float32", "two [2,3] along axis -1 -> [2,3,2]",
    _pack("float32", (2, 3), 2, -1))
add("pack_int8_axis0", "PACK", "int8", "four [3] along axis 0 -> [4,3]", _pack("int8", (3,), 4, 0))
for _t in ALL_TYPES:
    add(f"unpack_{_t}", "UNPACK", _t, "[2,3,4] along axis 1 -> three [2,4]",
        _unpack(_t, (2, 3, 4), 1))
add("unpack_float32_axis_neg", "UNPACK", "float32", "[2,3,2] along axis -1 -> two [2,3]",
    _unpack("float32", (2, 3, 2), -1))

# ---- SPACE_TO_DEPTH / DEPTH_TO_SPACE


def _s2d(op, t, in_shape, block):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        n, h, w, c = in_shape
        if op == "SPACE_TO_DEPTH":
            oshape = (n, h // block, w // block, c * block * block)
            kind = "SpaceToDepth"
        else:
            oshape = (n, h * block, w * block, c // (block * block))
            kind = "DepthToSpace"
        y = g.output("y", t, oshape, q)
        g.op(op, [xi], [y], options(kind, blockSize=block))
    return build


for _t in ALL_TYPES:
    add(f"space_to_depth_{_t}", "SPACE_TO_DEPTH", _t, "[1,4,6,2] block 2 -> [1,2,3,8]",
        _s2d("SPACE_TO_DEPTH", _t, (1, 4, 6, 2), 2))
add("space_to_depth_float32_block3", "SPACE_TO_DEPTH", "float32", "[2,3,6,1] block 3",
    _s2d("SPACE_TO_DEPTH", "float32", (2, 3, 6, 1), 3))
for _t in ALL_TYPES:
    add(f"depth_to_space_{_t}", "DEPTH_TO_SPACE", _t, "[1,2,3,8] block 2 -> [1,4,6,2]",
        _s2d("DEPTH_TO_SPACE", _t, (1, 2, 3, 8), 2))
add("depth_to_space_float32_block3", "DEPTH_TO_SPACE", "float32", "[2,1,2,9] block 3",
    _s2d("DEPTH_TO_SPACE", "float32", (2, 1, 2, 9), 3))

# ---- SOFTMAX


def _softmax(t, shape, beta=1.0, lo=-4.0, hi=4.0, out_t=None, qi=None):
    def build(g):
        q_in = qi or default_q(t, lo, hi)
        ot = out_t or t
        qo = {"int8": Q(1 / 256, -128), "int16": Q(1 / 32768, 0), "uint8": Q(1 / 256, 0)}.get(ot)
        if (t, ot) == ("int8", "int16"):
            qo = Q(1 / 65536, -32768)
        unary(g, "SOFTMAX", t, data_for(g.rng, t, shape, lo, hi), q_in, qo,
              options("Softmax", beta=beta), out_t=ot)
    return build


for _t in NUM_TYPES:
    add(f"softmax_{_t}", "SOFTMAX", _t, "[4,16] along the last axis, beta 1",
        _softmax(_t, (4, 16)), probe=f"{_t}->{_t}")
add("softmax_float32_beta", "SOFTMAX", "float32", "beta 0.5, [2,3,10], inputs over [-20, 20]",
    _softmax("float32", (2, 3, 10), 0.5, -20.0, 20.0), probe="float32->float32")
add("softmax_int8_beta", "SOFTMAX", "int8", "beta 0.7, [1,2,2,12], inputs over [-10, 6]",
    _softmax("int8", (1, 2, 2, 12), 0.7, -10.0, 6.0), probe="int8->int8")
add("softmax_int8_int16_out", "SOFTMAX", "int8", "int8 in, int16 out (1/65536, -32768)",
    _softmax("int8", (4, 16), out_t="int16"), probe="int8->int16")
add("softmax_int16_wide", "SOFTMAX", "int16", "inputs over [-10, 10]",
    _softmax("int16", (3, 20), lo=-10.0, hi=10.0), probe="int16->int16")


# ================================================================ batch 4
batch(4)

# ---- SVDF


def _svdf(t, act="NONE", batch_=2, inp=6, filters=4, memory=5, rank=2, bias=True):
    def build(g):
        units = filters // rank
        if t == "float32":
            xi = g.input("x", t, uniform(g.rng, (batch_, inp), -2.0, 2.0))
            wf = g.const("weights_feature", t, uniform(g.rng, (filters, inp), -0.6, 0.6))
            wt = g.const("weights_time", t, uniform(g.rng, (filters, memory), -0.6, 0.6))
            bi = g.const("bias", t, uniform(g.rng, (units,), -0.3, 0.3)) if bias else -1
            st = g.main.tensor("activation_state", t, (batch_, memory * filters),
                               variable=True)
            qo = None
        else:
            qi = qrange(-2.0, 2.0, "int8")
            xi = g.input("x", "int8", data_for(g.rng, "int8", (batch_, inp)), qi)
            wfq, wtq, sq = Q(0.6 / 127, 0), Q(0.6 / 32767, 0), Q(4.0 / 32767, 0)
            wf = g.const("weights_feature", "int8", ints(g.rng, (filters, inp), -127, 127, "int8"),
                         wfq)
            wt = g.const("weights_time", "int16",
                         ints(g.rng, (filters, memory), -32767, 32767, "int16"), wtq)
            bq = Q(sq.scale * wtq.scale, 0)
            bi = (g.const("bias", "int32", np.round(g.rng.uniform(-0.3, 0.3, units) / bq.scale),
                          bq) if bias else -1)
            st = g.main.tensor("activation_state", "int16", (batch_, memory * filters), sq,
                               variable=True)
            qo = qrange(-3.0, 3.0, "int8")
        y = g.output("y", t, (batch_, units), qo)
        g.op("SVDF", [xi, wf, wt, bi, st], [y],
             options("SVDF", rank=rank, fusedActivationFunction=ACT[act]))
    return build


# The SVDF cases are in tflite_suite_sequence.py; these are the variants it does not have.
for _t in ("float32", "int8"):
    add(f"svdf_{_t}_batch2_rank2", "SVDF", _t, "batch 2, input 6, 4 filters, memory 5, rank 2 "
        "(one step, zero state)", _svdf(_t))
    add(f"svdf_{_t}_no_bias", "SVDF", _t, "no bias (-1)", _svdf(_t, bias=False))

# ---- UNIDIRECTIONAL_SEQUENCE_LSTM


def _lstm(t, steps=4, features=3, units=5, batch_=2, time_major=False, intermediates=False):
    """The 24-input LSTM without peepholes, projection or layer norm, zero initial state."""
    def build(g):
        shape = (steps, batch_, features) if time_major else (batch_, steps, features)
        w_in = [g.rng.uniform(-0.6, 0.6, (units, features)) for _ in range(4)]
        w_rec = [g.rng.uniform(-0.6, 0.6, (units, units)) for _ in range(4)]
        bias = [g.rng.uniform(-0.3, 0.3, units) for _ in range(4)]
        gates = ("input", "forget", "cell", "output")
        oshape = (*shape[:2], units)
        if t == "float32":
            xi = g.input("x", t, uniform(g.rng, shape, -1.0, 1.0))
            wi = [g.const(f"input_to_{n}_w", t, w) for n, w in zip(gates, w_in)]
            wr = [g.const(f"recurrent_to_{n}_w", t, w) for n, w in zip(gates, w_rec)]
            bs = [g.const(f"{n}_gate_bias", t, b) for n, b in zip(gates, bias)]
            hs = g.main.tensor("output_state", t, (batch_, units), variable=True)
            cs = g.main.tensor("cell_state", t, (batch_, units), variable=True)
            y = g.output("y", t, oshape)
        else:
            qi, qo = qrange(-1.0, 1.0, "int8"), qrange(-1.0, 1.0, "int8")
            xi = g.input("x", "int8", data_for(g.rng, "int8", shape), qi)

            def w8(name, w):
                q = Q(float(np.abs(w).max() / 127), 0)
                return g.const(name, "int8", quantize(w, q, "int8"), q), q

            wi, wiq = zip(*[w8(f"input_to_{n}_w", w) for n, w in zip(gates, w_in)])
            wr, _ = zip(*[w8(f"recurrent_to_{n}_w", w) for n, w in zip(gates, w_rec)])
            bs = []
            for n, b, q in zip(gates, bias, wiq):
                bq = Q(float(qi.scale) * q.scale, 0)
                bs.append(g.const(f"{n}_gate_bias", "int32", np.round(b / bq.scale), bq))
            hs = g.main.tensor("output_state", "int8", (batch_, units), qo, variable=True)
            cs = g.main.tensor("cell_state", "int16", (batch_, units), Q(2.0 ** -11, 0),
                               variable=True)
            y = g.output("y", "int8", oshape, qo)
        ins = [xi, *wi, *wr, -1, -1, -1, *bs, -1, -1, hs, cs, -1, -1, -1, -1]
        g.op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [y],
             options("UnidirectionalSequenceLSTM", fusedActivationFunction=ACT_TANH,
                     cellClip=0.0, projClip=0.0, timeMajor=time_major))
        if intermediates:  # gate and hidden quantization, as the converter records them
            names = ("input_gate", "forget_gate", "cell_gate", "output_gate", "hidden")
            inter = [g.main.tensor(f"intermediate_{n}", "int16" if k < 4 else "int8", (0,),
                                   Q(2.0 ** -12, 0) if k < 4 else qo)
                     for k, n in enumerate(names)]
            g.main.ops[-1].intermediates = inter
    return build


ACT_TANH = S.ActivationFunctionType.TANH
# More LSTM cases are in tflite_suite_sequence.py; these are the variants it does not have.
add("unidirectional_sequence_lstm_float32_batch2", "UNIDIRECTIONAL_SEQUENCE_LSTM", "float32",
    "batch 2, 4 steps, 3 features, 5 units, no peephole/projection, zero state", _lstm("float32"))
add("unidirectional_sequence_lstm_int8_no_intermediates", "UNIDIRECTIONAL_SEQUENCE_LSTM", "int8",
    "int8 input/output state, int16 cell state 2^-11, int8 weights, int32 biases, "
    "no intermediates", _lstm("int8"))
add("unidirectional_sequence_lstm_int8_intermediates", "UNIDIRECTIONAL_SEQUENCE_LSTM", "int8",
    "as the converter writes it: five intermediates (gates int16 2^-12, hidden int8; "
    "shape [0])", _lstm("int8", intermediates=True))


# ---- IF / WHILE (several subgraphs)


def _if(t, cond):
    def build(g):
        q = default_q(t, -3.0, 3.0)
        qo = default_q(t, -9.0, 9.0)
        c = g.input("cond", "bool", np.array([cond]))
        a = g.input("a", t, data_for(g.rng, t, (2, 3), -3.0, 3.0), q)
        b = g.input("b", t, data_for(g.rng, t, (2, 3), -3.0, 3.0), q)
        y = g.output("y", t, (2, 3), qo)
        g.op("IF", [c, a, b], [y], options("If", thenSubgraphIndex=1, elseSubgraphIndex=2))
        for name, op, kind in (("then_add", "ADD", "Add"), ("else_mul", "MUL", "Mul")):
            sg = g.subgraph(name)
            sa, sb = sg.input("a", t, (2, 3), q), sg.input("b", t, (2, 3), q)
            so = sg.output("y", t, (2, 3), qo)
            sg.op(op, [sa, sb], [so], options(kind, fusedActivationFunction=ACT["NONE"]))
    return build


for _t in ("float32", "int8"):
    add(f"if_{_t}_then", "IF", _t, "cond true: then-subgraph a+b (else a*b)", _if(_t, True))
    add(f"if_{_t}_else", "IF", _t, "cond false: else-subgraph a*b (then a+b)", _if(_t, False))


def _while(t, limit):
    def build(g):
        q = default_q(t, -3.0, 3.0)
        i0 = g.input("i", "int32", np.array([0]))
        x = uniform(g.rng, (4,), -0.18, 0.18)
        x0 = g.input("x", t, x if t == "float32" else quantize(x, q, t), q)
        i1 = g.output("i_out", "int32", (1,))
        x1 = g.output("x_out", t, (4,), q)
        g.op("WHILE", [i0, x0], [i1, x1], options("While", condSubgraphIndex=1,
                                                   bodySubgraphIndex=2))
        cond = g.subgraph("cond")
        ci, cx = cond.input("i", "int32", (1,)), cond.input("x", t, (4,), q)
        lim = cond.const("limit", "int32", [limit])
        co = cond.output("go", "bool", (1,))
        cond.op("LESS", [ci, lim], [co])
        body = g.subgraph("body")
        bi, bx = body.input("i", "int32", (1,)), body.input("x", t, (4,), q)
        one = body.const("one", "int32", [1])
        bi1 = body.output("i1", "int32", (1,))
        bx1 = body.output("x1", t, (4,), q)
        body.op("ADD", [bi, one], [bi1], options("Add", fusedActivationFunction=ACT["NONE"]))
        body.op("ADD", [bx, bx], [bx1], options("Add", fusedActivationFunction=ACT["NONE"]))
    return build


for _t in ("float32", "int8"):
    add(f"while_{_t}", "WHILE", _t, "i < 4: i += 1, x += x (four iterations)", _while(_t, 4))
add("while_float32_no_iteration", "WHILE", "float32", "condition false at once (limit 0)",
    _while("float32", 0))

# ---- custom ops: CIRCULAR_BUFFER, TFLite_Detection_PostProcess


def _flex(d):
    from flatbuffers import flexbuffers
    return bytes(flexbuffers.Dumps(d))


def _circular(cycles):
    def build(g):
        q = Q(0.05, -4)
        xi = g.input("x", "int8", ints(g.rng, (1, 1, 1, 8), -128, 127, "int8"), q)
        y = g.output("y", "int8", (1, 3, 1, 8), q)
        g.op("CIRCULAR_BUFFER", [xi], [y], custom="CIRCULAR_BUFFER",
             custom_options=_flex({"cycles_max": cycles}))
    return build


add("circular_buffer_int8", "CIRCULAR_BUFFER", "int8",
    "custom op: [1,1,1,8] frame into a 3-slot [1,3,1,8] buffer, cycles_max 1",
    _circular(1))


def _detection(regular, t="float32", max_det=5):
    def build(g):
        n, classes = 16, 3
        gy, gx = np.meshgrid(np.arange(4) / 4 + 0.125, np.arange(4) / 4 + 0.125, indexing="ij")
        anchors = np.stack([gy.ravel(), gx.ravel(), np.full(n, 0.3), np.full(n, 0.3)], -1)
        enc = g.rng.normal(0, 1.0, (1, n, 4))
        scores = g.rng.uniform(0, 1, (1, n, classes + 1)) ** 3
        if t == "float32":
            bi = g.input("box_encodings", t, enc)
            ci = g.input("class_predictions", t, scores)
            ai = g.const("anchors", t, anchors)
        else:
            qb, qc, qa = qrange(-4.0, 4.0, t), qrange(0.0, 1.0, t), qrange(0.0, 1.0, t)
            bi = g.input("box_encodings", t, quantize(enc, qb, t), qb)
            ci = g.input("class_predictions", t, quantize(scores, qc, t), qc)
            ai = g.const("anchors", t, quantize(anchors, qa, t), qa)
        outs = [g.output("boxes", "float32", (1, max_det, 4)),
                g.output("classes", "float32", (1, max_det)),
                g.output("scores", "float32", (1, max_det)),
                g.output("num_detections", "float32", (1,))]
        opts = {"max_detections": max_det, "max_classes_per_detection": 1,
                "detections_per_class": 3, "use_regular_nms": regular,
                "nms_score_threshold": 0.1, "nms_iou_threshold": 0.5, "num_classes": classes,
                "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0}
        g.op("TFLite_Detection_PostProcess", [bi, ci, ai], outs,
             custom="TFLite_Detection_PostProcess", custom_options=_flex(opts))
    return build


add("tflite_detection_postprocess_float32", "TFLite_Detection_PostProcess", "float32",
    "custom op: 16 anchors, 3 classes, fast NMS, 5 detections", _detection(False))
add("tflite_detection_postprocess_float32_regular_nms", "TFLite_Detection_PostProcess",
    "float32", "custom op: regular NMS", _detection(True))
add("tflite_detection_postprocess_int8", "TFLite_Detection_PostProcess", "int8",
    "custom op: int8 box encodings, scores and anchors", _detection(False, "int8"))
add("tflite_detection_postprocess_uint8", "TFLite_Detection_PostProcess", "uint8",
    "custom op: uint8 box encodings, scores and anchors", _detection(False, "uint8"))


# ---- TFLM signal library (custom ops; their flexbuffer options are read by position, in
# alphabetical order of the option names)


def _signal_window(g):
    x = g.input("x", "int16", sweep_int16(g.rng, (2, 32)))
    w = np.round(32767 * np.hanning(32)).astype(np.int16)
    wi = g.const("weights", "int16", w)
    y = g.output("y", "int16", (2, 32))
    g.op("SignalWindow", [x, wi], [y], custom="SignalWindow", custom_options=_flex({"shift": 15}))


def _signal_fft_auto_scale(g):
    x = g.input("x", "int16", ints(g.rng, (64,), -900, 900, "int16"))
    y = g.output("y", "int16", (64,))
    sb = g.output("scale_bits", "int32", ())
    g.op("SignalFftAutoScale", [x], [y, sb], custom="SignalFftAutoScale",
         custom_options=_flex({}))


def _signal_rfft(t, fft_length=32, frame=24):
    def build(g):
        if t == "float32":
            x = uniform(g.rng, (2, frame), -1.0, 1.0)
        elif t == "int16":
            x = ints(g.rng, (2, frame), -2000, 2000, "int16")
        else:
            x = ints(g.rng, (2, frame), -200000, 200000, "int32")
        xi = g.input("x", t, x)
        y = g.output("y", t, (2, fft_length + 2))
        g.op("SignalRfft", [xi], [y], custom="SignalRfft",
             custom_options=_flex({"T": int(DTYPES[t][0]), "fft_length": fft_length}))
    return build


def _signal_energy(g):
    x = g.input("spectrum", "int16", ints(g.rng, (2 * 17,), -3000, 3000, "int16"))
    y = g.output("energy", "uint32", (17,))
    g.op("SignalEnergy", [x], [y], custom="SignalEnergy",
         custom_options=_flex({"end_index": 17, "start_index": 0}))


add("signal_window_int16", "SignalWindow", "int16",
    "TFLM signal custom op: int16 Hann window (Q15) on two 32-sample frames, shift 15",
    _signal_window)
add("signal_fft_auto_scale_int16", "SignalFftAutoScale", "int16",
    "TFLM signal custom op: scale a small int16 frame up to full range, and the shift",
    _signal_fft_auto_scale)
for _t in ("int16", "int32", "float32"):
    add(f"signal_rfft_{_t}", "SignalRfft", _t,
        "TFLM signal custom op: real FFT of two 24-sample frames, zero-padded to 32 "
        "(interleaved complex output)", _signal_rfft(_t))
add("signal_energy_int16", "SignalEnergy", "int16",
    "TFLM signal custom op: |z|^2 of an int16 complex spectrum, all 17 bins (a narrower "
    "[start, end) range would leave output elements unwritten)", _signal_energy)


# ================================================================ converter forms
batch(5)


def _convert(g, fn, shape, float16=False):
    """A tf.function of one float32 input through the TF converter: dynamic range ("hybrid")
    quantization, or float16 weights."""
    import tensorflow as tf

    func = tf.function(fn).get_concrete_function(tf.TensorSpec(shape, tf.float32))
    conv = tf.lite.TFLiteConverter.from_concrete_functions([func])
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    if float16:
        conv.target_spec.supported_types = [tf.float16]
    g.raw = conv.convert()
    g.feeds = [uniform(g.rng, shape, -2.0, 2.0)]


def _fc_conv(units, cin, float16):
    def build(g):
        import tensorflow as tf
        w = tf.constant(g.rng.normal(0, 1 / np.sqrt(cin), (cin, units)).astype(np.float32))
        b = tf.constant(g.rng.uniform(-0.3, 0.3, units).astype(np.float32))
        _convert(g, lambda x: tf.nn.relu(tf.matmul(x, w) + b), (2, cin), float16)
    return build


def _conv_conv(cin, cout, float16):
    def build(g):
        import tensorflow as tf
        w = tf.constant(g.rng.normal(0, 1 / np.sqrt(9 * cin), (3, 3, cin, cout)).astype(np.float32))
        b = tf.constant(g.rng.uniform(-0.3, 0.3, cout).astype(np.float32))
        _convert(g, lambda x: tf.nn.conv2d(x, w, 1, "SAME") + b, (1, 5, 5, cin), float16)
    return build


add("dequantize_float16_fully_connected", "DEQUANTIZE", "float32",
    "TF converter float16 quantization: FULLY_CONNECTED(RELU) whose weights and bias come from "
    "DEQUANTIZE of float16 constants", _fc_conv(24, 32, True), probe="float16 weights",
    fallback=True)
add("dequantize_float16_conv_2d", "DEQUANTIZE", "float32",
    "TF converter float16 quantization: CONV_2D 3x3 with DEQUANTIZE(float16) weights and bias",
    _conv_conv(4, 6, True), probe="float16 weights", fallback=True)
add("fully_connected_float32_hybrid", "FULLY_CONNECTED", "float32",
    "TF converter dynamic range (hybrid) quantization: float32 in/out, int8 weights [64,32]",
    _fc_conv(64, 32, False), probe="hybrid", fallback=True)
add("conv_2d_float32_hybrid", "CONV_2D", "float32",
    "TF converter dynamic range (hybrid) quantization: float32 in/out, int8 per-channel "
    "weights [16,3,3,16]", _conv_conv(16, 16, False), probe="hybrid", fallback=True)


def _sparse_fc(g):
    """DENSIFY of a CSR-sparse constant [6,8] weight feeding FULLY_CONNECTED."""
    w = g.rng.uniform(-1, 1, (6, 8)).astype(np.float32)
    w[g.rng.random((6, 8)) < 0.6] = 0.0
    rows, cols = np.nonzero(w)
    segments = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=6))])
    sp = S.SparsityParametersT()
    sp.traversalOrder = [0, 1]
    d0 = S.DimensionMetadataT()
    d0.format, d0.denseSize = S.DimensionType.DENSE, 6
    d1 = S.DimensionMetadataT()
    d1.format = S.DimensionType.SPARSE_CSR
    d1.arraySegmentsType = d1.arrayIndicesType = S.SparseIndexVector.Int32Vector
    d1.arraySegments = S.Int32VectorT()
    d1.arraySegments.values = [int(v) for v in segments]
    d1.arrayIndices = S.Int32VectorT()
    d1.arrayIndices.values = [int(v) for v in cols]
    sp.dimMetadata = [d0, d1]
    xi = g.input("x", "float32", uniform(g.rng, (2, 8), -2.0, 2.0))
    ws = g.main.tensor("weights_sparse", "float32", (6, 8), data=w[rows, cols].tobytes())
    g.main.tensors[ws].sparsity = sp
    wd = g.tensor("weights", "float32", (6, 8))
    g.op("DENSIFY", [ws], [wd])
    bi = g.const("bias", "float32", uniform(g.rng, (6,), -0.3, 0.3))
    y = g.output("y", "float32", (2, 6))
    g.op("FULLY_CONNECTED", [xi, wd, bi], [y],
         options("FullyConnected", fusedActivationFunction=ACT["NONE"]))


add("densify_float32_fully_connected", "DENSIFY", "float32",
    "sparse constant weight [6,8] (CSR: dim 0 dense, dim 1 sparse, 60% zeros) through DENSIFY "
    "into FULLY_CONNECTED", _sparse_fc, fallback=True)
