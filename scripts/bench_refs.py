"""The reference side of `kiln bench`: latency of onnxruntime (one thread) and of tinygrad 0.9.1
with its CLANG backend on the same float ONNX models; latency of TensorFlow Lite Micro's reference
kernels and of LiteRT (one thread) on the same int8 .tflite models; and the smallest arena that
TFLM runs each .tflite in.

    python scripts/bench_refs.py SPEC.tsv OUT.tsv VECTORS
    python scripts/bench_refs.py serve

SPEC.tsv has one line per model: name, kind (`float` or `int8`), model path (ONNX for float,
.tflite for int8), the .tflite whose TFLM arena is measured (or `-`), timed runs, tab-separated.
OUT.tsv has lines `model<TAB>key<TAB>value`: for int8 models the best and median of the timed
inferences (seconds) of TFLM (`tflm_best_s`, `tflm_median_s`) and LiteRT (`litert_best_s`,
`litert_median_s`) and LiteRT's largest difference from TFLM's output in steps
(`litert_max_lsb_diff`); the TFLM arena in bytes (`tflm_arena`), and `<runtime>_error` where a
runtime failed on the model; model `-` carries the versions. For an int8 model, `VECTORS/<name>/`
gets the input (`input_N.npy`) and TFLM's outputs on it (`output_N.npy`), which Kiln's outputs are
checked against.

The float models' references are timed in rounds between Kiln's own, so that both sides see the
machine in the same state: `serve` answers requests on stdin (see `serve`), with the same rows:
onnxruntime's and tinygrad's best and median (`ort_best_s`, `ort_median_s`, `tinygrad_best_s`,
`tinygrad_median_s`) of one round, and tinygrad's largest difference from onnxruntime's output
(`tinygrad_max_abs_diff`). Every float model gets the same seeded random input.

tinygrad's ONNX runner is not in its wheel: `TinygradModel` walks the ONNX graph and builds the
network from tinygrad Tensor calls with the model's own weights, then JITs it.
"""

import contextlib
import os
import sys
import time

os.environ.setdefault("CLANG", "1")

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402


def input_specs(model):
    inits = {i.name for i in model.graph.initializer}
    out = []
    for i in model.graph.input:
        if i.name in inits:
            continue
        dims = [d.dim_value if d.dim_value > 0 else 1 for d in i.type.tensor_type.shape.dim]
        out.append((i.name, dims))
    return out


def make_inputs(model, seed=0):
    rng = np.random.default_rng(seed)
    return {n: rng.standard_normal(d).astype(np.float32) for n, d in input_specs(model)}


def timed(fn, runs, warmup=3, before=lambda: None):
    """Best and median of `runs` calls of `fn`, each after an untimed `before()`."""
    for _ in range(warmup):
        before()
        fn()
    times = []
    for _ in range(runs):
        before()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return {"best_s": min(times), "median_s": float(np.median(times)), "runs": runs}


# onnxruntime ------------------------------------------------------------------------------

def ort_session(path):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


# tinygrad ---------------------------------------------------------------------------------

def attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


class TinygradModel:
    """An ONNX graph as tinygrad Tensor calls (the ops of the MLPerf Tiny float models)."""

    def __init__(self, model):
        from tinygrad import Tensor

        self.model = model
        self.opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
                         default=13)
        self.consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        for n in model.graph.node:
            if n.op_type == "Constant":
                self.consts[n.output[0]] = numpy_helper.to_array(attrs(n)["value"])
        self.weights = {k: Tensor(v.astype(np.float32)).realize()
                        for k, v in self.consts.items() if v.dtype == np.float32}
        self.inputs = [n for n, _ in input_specs(model)]
        self.outputs = [o.name for o in model.graph.output]

    def __call__(self, *xs):
        env = dict(self.weights)
        env.update(zip(self.inputs, xs))
        for n in self.model.graph.node:
            if n.op_type == "Constant":
                continue
            ins = [env[i] if i in env else None for i in n.input]
            out = getattr(self, "op_" + n.op_type)(n, ins, attrs(n))
            env[n.output[0]] = out
        return [env[o] for o in self.outputs]

    def op_Relu(self, n, ins, a):
        return ins[0].relu()

    def op_Add(self, n, ins, a):
        return ins[0] + ins[1]

    def op_MatMul(self, n, ins, a):
        return ins[0].matmul(ins[1])

    def op_Gemm(self, n, ins, a):
        x, w = ins[0], ins[1]
        if a.get("transA", 0):
            x = x.T
        if a.get("transB", 0):
            w = w.T
        y = x.matmul(w) * a.get("alpha", 1.0)
        if len(ins) > 2 and ins[2] is not None:
            y = y + ins[2] * a.get("beta", 1.0)
        return y

    def op_Softmax(self, n, ins, a):
        x = ins[0]
        axis = a.get("axis", -1 if self.opset >= 13 else 1)
        if self.opset < 13 and axis % x.ndim != x.ndim - 1:
            raise NotImplementedError("Softmax before opset 13 over more than the last axis")
        return x.softmax(axis)

    def op_Transpose(self, n, ins, a):
        return ins[0].permute(a["perm"])

    def op_Reshape(self, n, ins, a):
        x = ins[0]
        shape = [int(d) for d in self.consts[n.input[1]]]
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
        return x.reshape(shape)

    def op_BatchNormalization(self, n, ins, a):
        x, scale, bias, mean, var = ins
        eps = a.get("epsilon", 1e-5)
        shape = (1, -1) + (1,) * (x.ndim - 2)
        inv = (var + eps).rsqrt() * scale
        return (x - mean.reshape(shape)) * inv.reshape(shape) + bias.reshape(shape)

    def _pads(self, x, a, kernel):
        pads = list(a.get("pads", [0] * (2 * len(kernel))))
        auto = a.get("auto_pad", b"NOTSET")
        auto = auto.decode() if isinstance(auto, bytes) else auto
        if auto not in ("NOTSET", "VALID"):
            raise NotImplementedError(f"auto_pad {auto}")
        if auto == "VALID":
            pads = [0] * (2 * len(kernel))
        k = len(kernel)
        if any(pads):
            spatial = tuple((pads[i], pads[i + k]) for i in range(k))
            x = x.pad(((0, 0), (0, 0)) + spatial)
        return x

    def op_Conv(self, n, ins, a):
        x, w = ins[0], ins[1]
        b = ins[2] if len(ins) > 2 else None
        kernel = a.get("kernel_shape", list(w.shape[2:]))
        x = self._pads(x, a, kernel)
        return x.conv2d(w, b, groups=a.get("group", 1), stride=tuple(a.get("strides", [1] * len(kernel))),
                        dilation=tuple(a.get("dilations", [1] * len(kernel))), padding=0)

    def op_AveragePool(self, n, ins, a):
        kernel = a["kernel_shape"]
        stride = tuple(a.get("strides", kernel))
        x = self._pads(ins[0], a, kernel)
        if not any(a.get("pads", [0])) or a.get("count_include_pad", 0):
            return x.avg_pool2d(tuple(kernel), stride=stride)
        # Padding excluded from the count: divide by the number of real elements in each window.
        from tinygrad import Tensor

        ones = self._pads(Tensor.ones(*ins[0].shape), a, kernel)
        return x.avg_pool2d(tuple(kernel), stride=stride) / ones.avg_pool2d(tuple(kernel), stride=stride)

    def op_MaxPool(self, n, ins, a):
        kernel = a["kernel_shape"]
        x = ins[0]
        if any(a.get("pads", [0])):
            k = len(kernel)
            p = a["pads"]
            x = x.pad(((0, 0), (0, 0)) + tuple((p[i], p[i + k]) for i in range(k)), value=-float("inf"))
        return x.max_pool2d(tuple(kernel), stride=tuple(a.get("strides", kernel)))


def tinygrad_runner(model, feeds):
    """The model JIT-compiled by tinygrad on `feeds`: a call that runs it once, its outputs
    after the JIT's first captured run, and the device."""
    from tinygrad import Tensor, TinyJit, Device

    m = TinygradModel(model)

    @TinyJit
    def step(*xs):
        return [o.realize() for o in m(*xs)]

    xs = [Tensor(feeds[n]).realize() for n in m.inputs]

    def once():
        outs = step(*xs)
        Device[Device.DEFAULT].synchronize()
        return outs

    for _ in range(3):  # the JIT captures on its second call and replays from the third
        once()
    outs = [o.numpy() for o in once()]
    return once, outs, Device.DEFAULT


# TensorFlow Lite Micro and LiteRT ----------------------------------------------------------

@contextlib.contextmanager
def quiet_stderr():
    """TFLM prints every failed allocation and out-of-range index on stderr: silence it."""
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(null)
        os.close(saved)


def tflm_arena(path, hi=1 << 21, step=16):
    """The smallest arena (a multiple of `step` bytes) that TFLM allocates and invokes in."""
    from tflite_micro.python.tflite_micro import runtime

    def fits(n):
        try:
            it = runtime.Interpreter.from_file(path, arena_size=n)
            d = it.get_input_details(0)
            it.set_input(np.zeros(d["shape"], d["dtype"]), 0)
            it.invoke()
            return True
        except Exception:
            return False

    with quiet_stderr():
        return search(fits, hi, step)


def search(fits, hi, step):
    if not fits(hi):
        return None
    lo, hi = 1, hi // step
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid * step):
            hi = mid
        else:
            lo = mid + 1
    return lo * step


def tflm_count(details):
    """How many tensors TFLM's `details(i)` describes (its interpreter has no count)."""
    n = 0
    with quiet_stderr():
        while True:
            try:
                details(n)
            except IndexError:
                return n
            n += 1


def random_ints(details, seed=0):
    """A seeded random integer tensor for each of `details` (shape, dtype), over its whole range."""
    rng = np.random.default_rng(seed)
    out = []
    for d in details:
        info = np.iinfo(d["dtype"])
        out.append(rng.integers(info.min, info.max, d["shape"], dtype=d["dtype"], endpoint=True))
    return out


def tflm_run(path, runs):
    """TFLM's reference kernels on a seeded random input: timings, the inputs, the outputs."""
    from tflite_micro.python.tflite_micro import runtime

    it = runtime.Interpreter.from_file(path)
    xs = random_ints([it.get_input_details(i) for i in range(tflm_count(it.get_input_details))])

    # TFLM's arena may reuse an input's bytes once it is read: set the inputs before each run.
    def feed():
        for i, x in enumerate(xs):
            it.set_input(x, i)

    feed()
    it.invoke()
    ys = [it.get_output(i) for i in range(tflm_count(it.get_output_details))]
    return timed(it.invoke, runs, before=feed), xs, ys


def litert_run(path, xs, runs):
    """LiteRT's interpreter (one thread) on the inputs `xs`: timings and outputs."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=path, num_threads=1)
    it.allocate_tensors()

    def feed():
        for d, x in zip(it.get_input_details(), xs):
            it.set_tensor(d["index"], x)

    feed()
    it.invoke()
    ys = [it.get_tensor(d["index"]) for d in it.get_output_details()]
    return timed(it.invoke, runs, before=feed), ys


def max_step_diff(got, want):
    return max(int(np.max(np.abs(g.astype(np.int64) - w.astype(np.int64)))) for g, w in zip(got, want))


def save_vectors(folder, xs, ys):
    os.makedirs(folder, exist_ok=True)
    for prefix, ts in (("input", xs), ("output", ys)):
        for i, t in enumerate(ts):
            np.save(os.path.join(folder, f"{prefix}_{i}.npy"), t)


def timing_rows(name, runtime, t):
    return [(name, f"{runtime}_best_s", t["best_s"]), (name, f"{runtime}_median_s", t["median_s"])]


def int8_refs(name, path, runs, vectors):
    """TFLM and LiteRT on one int8 .tflite; the input and TFLM's outputs go to `vectors/name`."""
    rows = []
    try:
        t, xs, want = tflm_run(path, runs)
        rows += timing_rows(name, "tflm", t)
        save_vectors(os.path.join(vectors, name), xs, want)
    except Exception as e:
        return [(name, "tflm_error", f"{type(e).__name__}: {e}")]
    try:
        t, got = litert_run(path, xs, runs)
        rows += timing_rows(name, "litert", t)
        rows.append((name, "litert_max_lsb_diff", max_step_diff(got, want)))
    except Exception as e:
        rows.append((name, "litert_error", f"{type(e).__name__}: {e}"))
    return rows


def float_runners(name, onnx_path):
    """onnxruntime and tinygrad made ready on one float ONNX model and its seeded input: each
    runtime's call that runs it once (those that failed are left out), and the rows of
    tinygrad's device, its largest difference from onnxruntime's outputs and each failure."""
    rows, calls = [], {}
    model = onnx.load(onnx_path)
    feeds = make_inputs(model)
    want = None
    try:
        sess = ort_session(onnx_path)
        want = sess.run(None, feeds)
        calls["ort"] = lambda: sess.run(None, feeds)
    except Exception as e:  # a failing reference is reported, not fatal
        rows.append((name, "ort_error", f"{type(e).__name__}: {e}"))
    try:
        calls["tinygrad"], got, device = tinygrad_runner(model, feeds)
        rows.append((name, "tinygrad_device", device))
        if want is not None:
            diff = max(float(np.max(np.abs(g - w))) for g, w in zip(got, want))
            rows.append((name, "tinygrad_max_abs_diff", diff))
    except Exception as e:
        rows.append((name, "tinygrad_error", f"{type(e).__name__}: {e}"))
    return calls, rows


def arena_rows(name, tflite):
    try:
        arena = tflm_arena(tflite)
        return [(name, "tflm_arena", arena if arena is not None else "none")]
    except Exception as e:
        return [(name, "tflm_arena_error", f"{type(e).__name__}: {e}")]


def write_rows(f, rows):
    for m, k, v in rows:
        v = str(v).replace("\t", " ").replace("\n", " ")
        f.write(f"{m}\t{k}\t{v}\n")


def serve():
    """Float references on request, so that the caller can time them between its own runs.
    Each request is one tab-separated line on stdin; each answer is rows as in OUT.tsv, then a
    line `.`:

        prepare NAME MODEL   make onnxruntime and tinygrad ready on MODEL (untimed): the rows
                             of tinygrad's device and difference, and each failure
        time NAME RUNTIME N  N timed inferences (`ort` or `tinygrad`, after one untimed):
                             `RUNTIME_best_s`, `RUNTIME_median_s`; nothing for a runtime that
                             failed to prepare
    """
    ready = {}
    for line in sys.stdin:
        words = line.rstrip("\n").split("\t")
        rows = []
        if words[0] == "prepare" and len(words) == 3:
            ready[words[1]], rows = float_runners(words[1], words[2])
        elif words[0] == "time" and len(words) == 4:
            name, runtime, runs = words[1], words[2], int(words[3])
            call = ready.get(name, {}).get(runtime)
            if call is not None:
                rows = timing_rows(name, runtime, timed(call, runs, warmup=1))
        else:
            rows = [("-", "request_error", f"unknown request {line.strip()!r}")]
        write_rows(sys.stdout, rows)
        sys.stdout.write(".\n")
        sys.stdout.flush()


def main():
    if sys.argv[1:] == ["serve"]:
        return serve()
    spec_path, out_path, vectors = sys.argv[1], sys.argv[2], sys.argv[3]
    import importlib.metadata as md

    names = ("onnxruntime", "tinygrad", "tflite-micro", "ai-edge-litert")
    rows = [("-", f"{n}_version", md.version(n)) for n in names]
    for line in open(spec_path):
        if not line.strip():
            continue
        name, kind, path, tflite, runs = line.rstrip("\n").split("\t")
        runs = int(runs)
        print(f"references: {name}", file=sys.stderr, flush=True)
        if kind == "int8":
            rows += int8_refs(name, path, runs, vectors)
        if tflite != "-":
            rows += arena_rows(name, tflite)
    with open(out_path, "w") as f:
        write_rows(f, rows)


if __name__ == "__main__":
    main()
