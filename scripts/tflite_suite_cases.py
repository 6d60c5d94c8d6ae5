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
        # TFLM runs the model this many times on the inputs and the last outputs are the
        # reference (a stateful op whose first outputs read memory it has not written yet).
        self.invocations = 1
        # Why LiteRT's reference kernels are this case's reference although TFLM runs it (TFLM
        # computes something other than the model's meaning), or None.
        self.litert_because = None

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
