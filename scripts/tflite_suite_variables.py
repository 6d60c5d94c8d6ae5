"""The TFLite suite's eighth batch: resource variables (VAR_HANDLE, READ_VARIABLE,
ASSIGN_VARIABLE, and CALL_ONCE running an initialization subgraph), as streaming models keep
their state. Each model reads an accumulator, adds its input and assigns the sum back; TFLM runs
it several times on one input (g.invocations), and its last outputs are the reference.

Imported by scripts/make_tflite_suite.py, in batch order; see tflite_suite_cases.py.
"""

from tflite_suite_cases import *  # noqa: F401,F403

batch(8)


def _accumulator(t, shape, start, invocations):
    """`y = acc + x; acc = y`, the variable `acc` of type `t` starting from `start` (assigned
    by CALL_ONCE's subgraph) or, when None, from zeros."""
    def build(g):
        q = default_q(t, -8.0, 8.0) if t != "float32" else None
        x = g.input("x", t, data_for(g.rng, t, shape, -1.0, 1.0), q)
        resource = S.TensorType.RESOURCE
        if start is not None:
            init = g.subgraph("init")
            h = init.tensor("init_handle", resource, ())
            init.op("VAR_HANDLE", [], [h], opts=options("VarHandle", sharedName="acc"))
            c = init.const("start", t, data_for(g.rng, t, shape, -start, start), q)
            init.op("ASSIGN_VARIABLE", [h, c], [])
            g.op("CALL_ONCE", [], [], opts=options("CallOnce", initSubgraphIndex=1))
        h = g.tensor("handle", resource, ())
        g.op("VAR_HANDLE", [], [h], opts=options("VarHandle", sharedName="acc"))
        old = g.tensor("acc", t, shape, q)
        g.op("READ_VARIABLE", [h], [old])
        y = g.output("y", t, shape, q)
        g.op("ADD", [old, x], [y], opts=options("Add"))
        g.op("ASSIGN_VARIABLE", [h, y], [])
        g.invocations = invocations
    return build


add("var_handle_float32", "VAR_HANDLE", "float32",
    "an accumulator variable from zeros: y = acc + x, acc = y; the third invocation",
    _accumulator("float32", (2, 5), None, 3))
add("read_variable_int8", "READ_VARIABLE", "int8",
    "an int8 accumulator variable from zeros, read before its assignment; the third "
    "invocation", _accumulator("int8", (8,), None, 3))
add("assign_variable_int8", "ASSIGN_VARIABLE", "int8",
    "an int8 accumulator assigned after each read, from CALL_ONCE's initial value; the fourth "
    "invocation", _accumulator("int8", (3, 4), 2.0, 4))
add("call_once_float32", "CALL_ONCE", "float32",
    "CALL_ONCE's subgraph assigns the accumulator's initial value once; the third invocation",
    _accumulator("float32", (6,), 3.0, 3))
