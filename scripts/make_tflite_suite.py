#!/usr/bin/env python3
"""Builds the TFLite conformance suite in tests/tflite-suite/: single-op .tflite models with
reference outputs from TensorFlow Lite Micro.

Each case is one builtin op (a few are small multi-subgraph or converter-made models) built
directly with the flatbuffer object API, with seeded random inputs (one sample). The cases are
defined in scripts/tflite_suite_cases.py. For every case the script writes

    tests/tflite-suite/<case>/model.tflite
    tests/tflite-suite/<case>/input_<i>.npy    model input i (subgraph input order, exact dtype)
    tests/tflite-suite/<case>/output_<i>.npy   reference output i (subgraph output order)

and, for the whole folder, cases.tsv (case, op, type, reference, about), tflm-types.tsv (which
types TFLM's kernel of each op accepts, with its error message when it refuses one),
README.md and SHA256SUMS. The reference is TFLM's Python interpreter (the `tflite-micro`
wheel, TFLM's portable reference kernels) wherever it runs the case; only where TFLM lacks the
op does it fall back to the full TFLite interpreter with its reference kernels
(`BUILTIN_REF`), and cases.tsv says so. Types TFLM refuses for an op it has are not written.
Every case written is read back and rerun through its reference, which must give the same
bytes. For information, README.md lists how far the full TFLite interpreter (default
kernels) is from the reference on each case.

Pinned versions (Python 3.11, x86_64 Linux), installed in a scratch venv outside the
repository: pip install tensorflow-cpu==2.21.0 tflite-micro==0.dev20261023182759 numpy==2.4.6
Then, from the repository root: python scripts/make_tflite_suite.py

Options: --out DIR (default tests/tflite-suite); --only REGEX (build only the cases whose name
matches; the other cases already in the folder stay, and cases.tsv, tflm-types.tsv, README.md
and SHA256SUMS are rewritten for the whole folder); --max-batch N (only the cases of batches
1..N, also keeping the rest of the folder). Without --only or --max-batch the folder is rebuilt
from scratch. Everything is seeded from the case names, so a rerun reproduces the same bytes.

TFLM runs in a forked child per case, its printed output captured: that is where its error
messages go, and a model can crash it (a few do; they are reported, not written).
"""

import argparse
import hashlib
import os
import pathlib
import pickle
import re
import shutil
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import warnings  # noqa: E402

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import tflite_suite_cases as sc  # noqa: E402
import tflite_suite_batch1  # noqa: E402,F401
import tflite_suite_batch2  # noqa: E402,F401
import tflite_suite_layers  # noqa: E402,F401
import tflite_suite_tensors  # noqa: E402,F401
import tflite_suite_more  # noqa: E402,F401
import tflite_suite_hybrid  # noqa: E402,F401
import tflite_suite_sequence  # noqa: E402,F401
import tflite_suite_signal  # noqa: E402,F401
import tflite_suite_decode  # noqa: E402,F401
import tflite_suite_variables  # noqa: E402,F401
import tensorflow as tf  # noqa: E402
import tflite_micro  # noqa: E402
from tflite_micro.python.tflite_micro import runtime as tflm  # noqa: E402

S = sc.S
OP_NAMES = {v: k for k, v in sc.BUILTIN.items()}
PINNED = {"tensorflow": "2.21.0", "tflite-micro": "0.dev20261023182759-g8f6596d", "numpy": "2.4.6"}
REQUIREMENTS = "tensorflow-cpu==2.21.0 tflite-micro==0.dev20261023182759 numpy==2.4.6"
TFLM_ARENA = 1 << 20
MISSING_OP = "Didn't find op for builtin opcode"


# ---------------------------------------------------------------- running the references


def _in_child(fn, *args):
    """Runs fn(*args) in a forked child with stdout/stderr captured (TFLM prints its errors
    there, and a bad model may abort it). Returns (ok, result or error line, log text)."""
    sys.stdout.flush()
    sys.stderr.flush()
    rfd, wfd = os.pipe()
    log = tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(rfd)
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            try:
                res = (True, fn(*args))
            except Exception as e:  # noqa: BLE001
                res = (False, f"{type(e).__name__}: {e}")
            sys.stdout.flush()
            sys.stderr.flush()
            with os.fdopen(wfd, "wb") as w:
                w.write(pickle.dumps(res))
        finally:
            os._exit(0)
    os.close(wfd)
    with os.fdopen(rfd, "rb") as r:
        raw = r.read()
    _, status = os.waitpid(pid, 0)
    log.seek(0)
    text = log.read().decode(errors="replace")
    log.close()
    if not raw:
        how = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
               else f"exit {os.WEXITSTATUS(status)}")
        return False, f"crashed ({how})", text
    ok, res = pickle.loads(raw)
    return ok, res, text


def _tflm(data, inputs, n_out, invocations=1):
    interp = tflm.Interpreter.from_bytes(bytes(data), arena_size=TFLM_ARENA)
    for _ in range(invocations):
        for i, a in enumerate(inputs):
            interp.set_input(a, i)
        interp.invoke()
    return [np.array(interp.get_output(i), copy=True) for i in range(n_out)]


def _tflm_once(data, inputs, n_out, invocations):
    ok, res, log = _in_child(_tflm, data, inputs, n_out, invocations)
    if ok:
        return res, None
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    if res.startswith("crashed"):
        return None, res + (f": {lines[0]}" if lines else "")
    return None, (lines[0] if lines else res.splitlines()[0])


def run_tflm(data, inputs, n_out, invocations=1):
    """(outputs, None) or (None, TFLM's error message, first line). A few of TFLM's messages
    print garbage (a pointer or a double through %d, different on every run): numbers of seven
    digits or more are written '<?>' so that the tables are reproducible."""
    outs, err = _tflm_once(data, inputs, n_out, invocations)
    return outs, None if err is None else re.sub(r"-?\d{7,}", "<?>", err)


def run_tflite(data, inputs, ref=False):
    kw = {}
    if ref:
        kw["experimental_op_resolver_type"] = tf.lite.experimental.OpResolverType.BUILTIN_REF
    interp = tf.lite.Interpreter(model_content=bytes(data), **kw)
    interp.allocate_tensors()
    for d, a in zip(interp.get_input_details(), inputs):
        if tuple(d["shape"]) != a.shape:
            interp.resize_tensor_input(d["index"], a.shape)
            interp.allocate_tensors()
    for d, a in zip(interp.get_input_details(), inputs):
        interp.set_tensor(d["index"], a)
    interp.invoke()
    return [np.array(interp.get_tensor(d["index"]), copy=True)
            for d in interp.get_output_details()]


def run_litert_ref(data, inputs):
    ok, res, log = _in_child(run_tflite, data, inputs, True)
    if ok:
        return res, None
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    return None, (lines[0] if lines else res.splitlines()[0])


def infer_shapes(g):
    """Output shapes left open by a case, from the full TFLite interpreter's shape inference.
    Where TFLite does not take the case's types, the inference runs on a float32 copy of the
    model inputs and outputs (shapes do not depend on the element type)."""
    open_ = g.unknown_shapes()
    for t in open_:
        g.main.tensors[t].shape = [1]
    io = set(g.main.inputs) | set(g.main.outputs)
    saved = {t: (g.main.tensors[t].type, g.main.tensors[t].quantization) for t in io}
    for attempt in range(2):
        try:
            interp = tf.lite.Interpreter(model_content=g.serialize())
            interp.allocate_tensors()
            break
        except Exception:  # noqa: BLE001
            if attempt:
                raise
            for t in io:
                g.main.tensors[t].type = S.TensorType.FLOAT32
                g.main.tensors[t].quantization = None
    shapes = {d["index"]: d["shape"] for d in interp.get_tensor_details()}
    for t, (typ, q) in saved.items():
        g.main.tensors[t].type, g.main.tensors[t].quantization = typ, q
    for t in open_:
        g.main.tensors[t].shape = [int(d) for d in shapes[t]]


def build(case):
    g = sc.Graph(np.random.default_rng(sc.seed_of(case.name)))
    case.build(g)
    if g.unknown_shapes():
        infer_shapes(g)
    return g


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


# ---------------------------------------------------------------- describing models


def tensor_info(mdl, sg, t):
    ten = sg.tensors[t]
    q = ten.quantization
    scales = [] if q is None or q.scale is None else [float(s) for s in q.scale]
    zps = [] if q is None or q.zeroPoint is None else [int(z) for z in q.zeroPoint]
    const = ten.buffer > 0 and mdl.buffers[ten.buffer].data is not None
    s = f"{sc.TYPE_NAME.get(ten.type, ten.type)}[{'x'.join(str(int(d)) for d in ten.shape)}]"
    if len(scales) == 1:
        s += f" s={scales[0]:.6g} zp={zps[0]}"
    elif scales:
        s += f" per-axis({len(scales)}, axis {q.quantizedDimension})"
    if const:
        s += " const"
    if ten.sparsity is not None:
        s += " sparse"
    return s


def options_text(op):
    o = op.builtinOptions
    if o is None:
        return ""
    parts = []
    for k, v in vars(o).items():
        if v is None:
            continue
        if isinstance(v, (bool, np.bool_)):
            v = bool(v)
        elif isinstance(v, np.ndarray):
            v = v.tolist()
        elif isinstance(v, float):
            v = f"{v:.6g}"
        elif isinstance(v, bytes):
            v = v.decode()
        parts.append(f"{k}={v}")
    return ", ".join(parts)


def describe(data):
    """One line per operator of the main subgraph: op(inputs) -> outputs {options}."""
    mdl = tflm.convert_bytearray_to_object(bytearray(data))
    sg = mdl.subgraphs[0]
    lines = []
    for op in sg.operators:
        code = mdl.operatorCodes[op.opcodeIndex]
        bc = tflm.get_builtin_code_from_operator_code(code)
        name = code.customCode.decode() if bc == S.BuiltinOperator.CUSTOM else OP_NAMES[bc]
        ins = ", ".join("-" if t < 0 else tensor_info(mdl, sg, t) for t in op.inputs)
        outs = ", ".join(tensor_info(mdl, sg, t) for t in op.outputs)
        opts = options_text(op)
        lines.append(f"{name}({ins}) -> {outs}" + (f" {{{opts}}}" if opts else ""))
    if len(mdl.subgraphs) > 1:
        lines.append(f"+ {len(mdl.subgraphs) - 1} more subgraph(s)")
    return lines


# ---------------------------------------------------------------- writing


def read_tsv(path):
    if not path.exists():
        return []
    rows = [ln.split("\t") for ln in path.read_text().splitlines()]
    return rows[1:]


def write_tsv(path, header, rows):
    path.write_text("\n".join("\t".join(r) for r in [header] + rows) + "\n")


def write_case(out, case, data, inputs, outputs, invocations=1):
    """The case's files; a case whose reference ran the model more than once on the inputs (a
    stateful op) says how many times in `invocations`."""
    d = out / case.name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    (d / "model.tflite").write_bytes(data)
    for i, a in enumerate(inputs):
        np.save(d / f"input_{i}.npy", a)
    for i, a in enumerate(outputs):
        np.save(d / f"output_{i}.npy", a)
    if invocations > 1:
        (d / "invocations").write_text(f"{invocations}\n")


def load_case(out, name):
    d = out / name
    data = (d / "model.tflite").read_bytes()
    ins = [np.load(d / f"input_{i}.npy") for i in range(len(list(d.glob("input_*.npy"))))]
    outs = [np.load(d / f"output_{i}.npy") for i in range(len(list(d.glob("output_*.npy"))))]
    return data, ins, outs


def reference(ref, data, inputs, n_out, invocations=1):
    if ref == "tflm":
        return run_tflm(data, inputs, n_out, invocations)
    return run_litert_ref(data, inputs)


def tflite_diff(data, inputs, outputs):
    """Max abs difference of the default full TFLite interpreter from the reference."""
    ok, zs, _ = _in_child(run_tflite, data, inputs)
    if not ok:
        return "fails: " + re.sub(r"^\w+: ", "", zs.splitlines()[0])[:80]
    if len(zs) != len(outputs):
        return "output count differs"
    worst = 0.0
    for y, z in zip(outputs, zs):
        if y.shape != z.shape:
            return f"shape {list(z.shape)} vs {list(y.shape)}"
        if y.size:
            worst = max(worst, float(np.max(np.abs(y.astype(np.float64) - z.astype(np.float64)))))
    return "0" if worst == 0 else f"{worst:.3g}"


README_HEAD = """\
# TFLite conformance suite

Single-op `.tflite` models with one set of seeded random inputs and the reference outputs of
**TensorFlow Lite Micro** (TFLM), one folder per case. Kiln must match the reference bit for
bit. Generated by `scripts/make_tflite_suite.py` (cases in `scripts/tflite_suite_cases.py`);
do not edit by hand: rerun the script and commit the whole folder.

* `<case>/model.tflite`: the model, built directly with the flatbuffer object API of the
  schema shipped in the tflite-micro wheel (a few cases noted in `cases.tsv` come from the
  TensorFlow converter). Constant operands (weights, axes, shapes, paddings, ...) are constant
  buffers, as converters write them.
* `<case>/input_<i>.npy`: model input `i`, in the subgraph's input order and exact dtype.
  int8 inputs of unary ops hold every value -128..127; int16 inputs of unary ops sweep the
  whole int16 range plus random values; ops with a restricted domain get inputs inside it.
* `<case>/output_<i>.npy`: the reference's output `i`, in the subgraph's output order.
* `cases.tsv`: case, op (the schema's `BuiltinOperator` name, or the custom code), the type
  that decides the arithmetic, the reference (`tflm`, or `litert-ref` where TFLM cannot run
  the case: then the full TFLite interpreter with its reference kernels, `BUILTIN_REF`), and
  what the case holds.
* `tflm-types.tsv`: for every op and candidate type, whether TFLM's interpreter runs it, and
  the first line of TFLM's error message when it does not. Types TFLM refuses for an op it
  has get no case; the message documents the reason TFLM shares.
* `SHA256SUMS`: `sha256sum -c SHA256SUMS` from this folder checks every file.

The reference is the `tflite-micro` Python interpreter (`tflite_micro.runtime.Interpreter`,
arena 1 MiB, a fresh interpreter per case), built with TFLM's portable reference kernels.
Every written case was read back from disk and rerun through its reference with the same
bytes out. For information only, the table below gives the largest absolute difference of
the full TFLite interpreter (`tf.lite.Interpreter`, default kernels) from the reference, in
output units; it is not a correctness criterion.

Versions used: {versions}. To rebuild, in a scratch venv outside the repository:
`pip install {requirements}`, then from the repository root
`python scripts/make_tflite_suite.py` (`--only REGEX` rebuilds matching cases only).

Notes on TFLM found while making the suite (the tables hold the details):

* TFLM refuses many types its kernels' messages do not mention, and takes a few they say it
  does not (LEAKY_RELU takes int16, ZEROS_LIKE int8). `tflm-types.tsv` is the record.
* GREATER accepts int16 but its output does not depend on the inputs (all false here): the
  case is left out and `tflm-types.tsv` says so. The other comparisons refuse int16.
* DEPTHWISE_CONV_2D crashes on a bias input of -1 (the no-bias cases have two inputs), and
  SVDF crashes on a bias of -1 (no case). TFLM reads int64 paddings (PAD), int64 strided-slice
  indices and int64 axes as int32, and refuses them; it refuses STRIDED_SLICE's
  ellipsis/new-axis masks and `offset`, and more than 4 dimensions.
* UNIDIRECTIONAL_SEQUENCE_LSTM int8 gives different outputs with and without the five
  intermediate tensors (both are cases); TFLM wants intermediates of shape [0].
* Batches: 1 the ops real models hit first, 2 more builtins, 3 the builtins Kiln had, 4 SVDF,
  LSTM, IF/WHILE, CIRCULAR_BUFFER, detection post-processing and TFLM's signal library ops
  (custom ops; their flexbuffer options are read by position, alphabetical by name), 5 the
  converter's float16 and dynamic-range (hybrid) forms and a sparse weight with DENSIFY,
  which TFLM does not run (`litert-ref`).
* Operator codes are version 1 (TFLM does not read versions), except BROADCAST_TO, version 2
  (the lowest the full TFLite interpreter registers). The custom ops' reference is TFLM only
  (the full TFLite interpreter does not have them).

Licence: these files were generated for this project by its own script from random data and
hold no third-party content; they are under the project's licence, MIT OR Apache-2.0.

## Cases

{count} cases. Tensors are `dtype[shape]`, with `s`/`zp` for per-tensor quantization and
`per-axis(n, axis a)` for per-channel; `const` marks constant tensors; `-` an omitted
optional input.

| case | ref | model | full TFLite vs ref |
| --- | --- | --- | --- |
"""


def write_readme(out, rows, versions):
    lines = []
    for name, op, typ, ref, about in rows:
        data, ins, outs = load_case(out, name)
        model = "<br>".join(f"`{ln}`".replace("|", "\\|") for ln in describe(data))
        lines.append(f"| `{name}` | {ref} | {about}<br>{model} | {tflite_diff(data, ins, outs)} |")
    text = README_HEAD.format(versions=versions, requirements=REQUIREMENTS, count=len(rows))
    (out / "README.md").write_text(text + "\n".join(lines) + "\n")


def write_sums(out):
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.name != "SHA256SUMS")
    text = "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  "
                   f"{p.relative_to(out).as_posix()}\n" for p in files)
    (out / "SHA256SUMS").write_text(text)


# ---------------------------------------------------------------- main


def process(case, out):
    """Builds, runs, writes and verifies one case. Returns (row or None, probe result)."""
    g = build(case)
    data = g.raw if g.raw is not None else g.serialize()
    n_out = g.output_count()
    outs, err = run_tflm(data, g.feeds, n_out, g.invocations)
    probe = ("yes", "") if err is None else ("no", err)
    ref, about = "tflm", case.about
    if err is None and g.litert_because is not None:
        outs, err2 = run_litert_ref(data, g.feeds)
        assert err2 is None, f"{case.name}: LiteRT ref refuses: {err2}"
        ref, about = "litert-ref", f"{about} ({g.litert_because})"
    if err is not None:
        if MISSING_OP not in err and not case.fallback:
            print(f"  skip {case.name}: TFLM refuses: {err}")
            return None, probe
        outs, err2 = run_litert_ref(data, g.feeds)
        if err2 is not None:
            print(f"  skip {case.name}: TFLM refuses ({err}); LiteRT ref refuses: {err2}")
            return None, probe
        missing = re.search(r"Didn't find op for builtin opcode '(\w+)'", err)
        why = f"TFLM lacks {missing.group(1)}" if missing else f"TFLM refuses: {err}"
        ref, about = "litert-ref", f"{about} ({why})"
    if g.check is not None:
        bad = g.check(g.feeds, outs)
        if bad:
            print(f"  skip {case.name}: {bad}")
            return None, ("yes", f"runs, but no case: {bad}")
    for y in outs:
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
            print(f"  note {case.name}: output has non-finite values")
    write_case(out, case, data, g.feeds, outs, g.invocations)
    data2, ins2, outs2 = load_case(out, case.name)
    again, err = reference(ref, data2, ins2, len(outs2), g.invocations)
    assert err is None and len(again) == len(outs2) and all(map(same, again, outs2)), \
        f"{case.name}: rerun from disk differs ({err})"
    return [case.name, case.op, case.type, ref, about], probe


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=pathlib.Path, default=root / "tests" / "tflite-suite")
    ap.add_argument("--only", default="")
    ap.add_argument("--max-batch", type=int, default=99, help="build batches up to this one")
    args = ap.parse_args()

    names = [c.name for c in sc.CASES]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, f"duplicate case names: {sorted(dup)}"
    todo = [c for c in sc.CASES if c.batch <= args.max_batch]
    if args.only:
        todo = [c for c in todo if re.search(args.only, c.name)]

    versions = (f"tensorflow-cpu {tf.__version__}, tflite-micro {tflite_micro.__version__}, "
                f"numpy {np.__version__}, Python {sys.version.split()[0]}")
    print(versions)
    have = {"tensorflow": tf.__version__, "tflite-micro": tflite_micro.__version__,
            "numpy": np.__version__}
    for pkg, want in PINNED.items():
        if have[pkg] != want:
            print(f"WARNING: {pkg} {have[pkg]} is not the pinned {want}; outputs may differ")

    out = args.out
    partial = bool(args.only) or args.max_batch < 99
    if out.exists() and not partial:
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)

    old_rows = {r[0]: r for r in read_tsv(out / "cases.tsv")} if partial else {}
    old_types = {(r[0], r[1]): r for r in read_tsv(out / "tflm-types.tsv")} if partial else {}
    rows, types = {}, {}
    for case in todo:
        old_rows.pop(case.name, None)
        if (out / case.name).exists():
            shutil.rmtree(out / case.name)
        key = (case.op, case.probe)
        if (key in types and types[key][2] == "no" and MISSING_OP not in types[key][3]
                and not case.fallback):
            print(f"  skip {case.name}: TFLM refuses {case.op} {case.probe} (above)")
            continue
        row, probe = process(case, out)
        if key not in types:
            types[key] = [case.op, case.probe, *probe]
            print(f"{case.op:24s} {case.probe:16s} tflm: {probe[0]} {probe[1]}")
        elif probe[0] == "no" and MISSING_OP not in probe[1] and not case.fallback:
            # a variant of a type TFLM takes, refused for its form: recorded under its name
            types[(case.op, case.name)] = [case.op, f"{case.probe} ({case.name})", *probe]
        if row:
            rows[case.name] = row
            print(f"  {case.name}: {row[3]}")

    # the whole folder, in registry order (cases no longer defined are dropped)
    order = {n: i for i, n in enumerate(names)}
    rows.update({n: r for n, r in old_rows.items() if n in order and (out / n).exists()})
    for d in out.iterdir():
        if d.is_dir() and d.name not in rows:
            shutil.rmtree(d)
    all_rows = sorted(rows.values(), key=lambda r: order[r[0]])
    write_tsv(out / "cases.tsv", ["case", "op", "type", "reference", "about"], all_rows)
    probe_order = {}
    for c in sc.CASES:
        probe_order.setdefault((c.op, c.probe), len(probe_order))
        probe_order.setdefault((c.op, f"{c.probe} ({c.name})"), len(probe_order))
    old_types.update({(r[0], r[1]): r for r in types.values()})
    type_rows = sorted((r for k, r in old_types.items() if k in probe_order),
                       key=lambda r: probe_order[(r[0], r[1])])
    write_tsv(out / "tflm-types.tsv", ["op", "type", "tflm", "tflm error"], type_rows)
    write_readme(out, all_rows, versions)
    write_sums(out)

    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"\n{len(all_rows)} cases in {out}, {total} bytes in all")
    summary = {}
    for _, op, typ, ref, _ in all_rows:
        summary.setdefault(op, {}).setdefault(typ, 0)
        summary[op][typ] += 1
    for op, ts in summary.items():
        print(f"  {op:28s} " + ", ".join(f"{t} {n}" for t, n in ts.items()))


if __name__ == "__main__":
    main()
