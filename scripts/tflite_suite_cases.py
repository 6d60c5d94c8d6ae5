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
        self.meta = {}

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
        return [i for i in self.main.outputs if self.main.tensors[i].shape is None]


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


CASES = []
BATCH = [1]


def add(name, op, type_, about, build, probe=None):
    assert name == name.lower() and "\t" not in about, name
    CASES.append(Case(name, op, type_, about, build, BATCH[0], probe or type_))


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


def _cmp(op, t, sa, sb, rescale=False):
    def build(g):
        a, b = _cmp_data(g, t, sa), _cmp_data(g, t, sb)
        qa = qb = default_q(t, -3.0, 5.0)
        if rescale:
            # b on a grid twice as coarse as a: half of a's values equal b's exactly
            qa, qb = Q(0.05, -3), Q(0.1, 5)
            a = g.rng.integers(-128, 128, sa)
            b = g.rng.integers(-128, 128, sb)
            real_b = 0.1 * (np.broadcast_to(b, bcast(sa, sb)) - 5)
            eq = np.round(real_b / 0.05) - 3
            if np.shape(a) == np.shape(eq):
                pick = g.rng.random(sa) < 0.5
                a = np.where(pick & (eq >= -128) & (eq <= 127), eq, a)
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
    add(f"{_p}_int32_broadcast", _op, "int32", "[3,4] vs scalar [] ",
        _cmp(_op, "int32", (3, 4), ()))

# ---- BATCH_MATMUL


def _bmm(t, sa, sb, adj_x=False, adj_y=False, const_b=False):
    def build(g):
        qa = default_q(t, -3.0, 4.0)
        qb = Q(0.03, 0) if t in QUANT else None
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
        g.op("BROADCAST_TO", [xi, si], [y])
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
add("l2_normalization_int8_4d", "L2_NORMALIZATION", "int8", "[1,2,3,8]", _l2norm("int8", (1, 2, 3, 8)))


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
