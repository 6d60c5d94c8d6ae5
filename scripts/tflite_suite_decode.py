"""The TFLite suite's seventh batch: TFLM's DECODE (custom code TFLM_DECODE), constant tensors
stored compressed by TFLM's own compression tool (`tflite_micro`'s
`tensorflow/lite/micro/compression`, look-up tables: each value an index of a few bits into a
table per channel or per tensor) and decoded by TFLM as the model runs.

Each case builds a layer of the layers batch, keeps at most 2^bits distinct values per channel
(or per tensor) of one constant, each value replaced by the nearest of values drawn from it,
and compresses that constant with the tool; TFLM runs the compressed model. The index widths
cover TFLM's own decoders: 4 bits (its 16-at-a-time int8 path), 3 bits (32 at a time), 2 bits
(16 at a time) and the general one; the channels on the first axis or, for a depthwise
convolution's weights, on the last (TFLM's alternate axis).

Imported by scripts/make_tflite_suite.py, in batch order; see tflite_suite_cases.py.
"""

import importlib

from tflite_suite_cases import *  # noqa: F401,F403
from tflite_suite_layers import _conv, _dw, _fc

batch(7)


def _palette(rng, values, bits, axis):
    """`values` with at most 2^bits distinct values along each slice of `axis` (None: over the
    whole tensor): each replaced by the nearest of 2^bits values drawn from its slice."""
    out = values.copy()
    slices = [()] if axis is None else [
        tuple(slice(None) if d != axis else c for d in range(values.ndim))
        for c in range(values.shape[axis])]
    for s in slices:
        part = values[s].reshape(-1)
        table = rng.choice(np.unique(part), min(2 ** bits, len(np.unique(part))), replace=False)
        nearest = np.abs(part[:, None].astype(np.float64) - table[None, :]).argmin(axis=1)
        out[s] = table[nearest].reshape(values[s].shape)
    return out


def _compressed(base, tensor, bits, axis):
    """The layer `base` builds, its constant `tensor` made to fit `bits`-bit indices and stored
    compressed (per channel on `axis`, or per tensor when None)."""
    def build(g):
        base(g)
        index = next(i for i, t in enumerate(g.main.tensors) if t.name == tensor)
        t = g.main.tensors[index]
        dtype = next(np_t for code, np_t in DTYPES.values() if code == t.type)
        buf = g.buffers[t.buffer]
        values = np.frombuffer(bytes(buf.data), dtype).reshape(t.shape)
        buf.data = _palette(g.rng, values, bits, axis).astype(dtype).tobytes()
        spec = importlib.import_module("tflite_micro.tensorflow.lite.micro.compression.spec")
        compress = importlib.import_module(
            "tflite_micro.tensorflow.lite.micro.compression.compress")
        how = "per_tensor:" if axis is None else f"per_channel:\n            axis: {axis}"
        specs = spec.parse_yaml(f"""
tensors:
  - subgraph: 0
    tensor: {index}
    compression:
      - lut:
          index_bitwidth: {bits}
          {how}
""")
        g.raw = bytes(compress.compress(g.serialize(), specs))
    return build


add("decode_conv_2d_int8_lut3", "TFLM_DECODE", "int8",
    "CONV_2D [1,6,6,3] -> 8, 3x3, its int8 weights as 3-bit indices per output channel",
    _compressed(_conv("int8", (1, 6, 6, 3), 8, (3, 3)), "weights", 3, 0))
add("decode_fully_connected_int8_lut4", "TFLM_DECODE", "int8",
    "FULLY_CONNECTED [2,40] -> 6, per-channel int8 weights as 4-bit indices per channel",
    _compressed(_fc("int8", (2, 40), 6, per_channel=True), "weights", 4, 0))
add("decode_depthwise_conv_2d_int8_lut2", "TFLM_DECODE", "int8",
    "DEPTHWISE_CONV_2D [1,5,5,4] x2, 3x3, its int8 weights as 2-bit indices per channel of "
    "the last axis (TFLM's alternate axis)",
    _compressed(_dw("int8", (1, 5, 5, 4), 2, (3, 3)), "weights", 2, 3))
add("decode_fully_connected_float32_lut5", "TFLM_DECODE", "float32",
    "FULLY_CONNECTED [2,24] -> 5, float32 weights as 5-bit indices into one table",
    _compressed(_fc("float32", (2, 24), 5), "weights", 5, None))
add("decode_conv_2d_int8_bias_lut1", "TFLM_DECODE", "int32",
    "CONV_2D [1,4,4,2] -> 4, 1x1, its int32 bias as 1-bit indices per channel",
    _compressed(_conv("int8", (1, 4, 4, 2), 4, (1, 1)), "bias", 1, 0))
add("decode_conv_2d_int16_lut7", "TFLM_DECODE", "int16",
    "CONV_2D 16x8 [1,5,5,3] -> 6, 3x3, its int8 weights as 7-bit indices per channel",
    _compressed(_conv("int16", (1, 5, 5, 3), 6, (3, 3)), "weights", 7, 0))
