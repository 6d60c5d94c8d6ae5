"""The TFLite suite's sixth batch: more of TFLM's signal library (its FFTs at the lengths that
take each of KISS FFT's butterflies, and full-range frames).

Imported by scripts/make_tflite_suite.py, in batch order; see tflite_suite_cases.py.
"""

from tflite_suite_cases import *  # noqa: F401,F403
from tflite_suite_more import _flex

batch(6)

# KISS FFT factors an n-point complex transform into fours, then twos, then odd primes; a real
# transform of fft_length L takes n = L / 2. These lengths cover every butterfly:
# 512 → 4·4·4·4, 64 → 4·4·2, 48 → 4·2·3, 40 → 4·5. (A prime factor above 5 takes the
# generic butterfly, which crashes TFLM: Kiln's is checked against a DFT in its unit tests.)
_LENGTHS = (512, 64, 48, 40)


def _frames(g, t, shape, full):
    """Frames of type t: full-range int16 (a sweep), or values that leave headroom."""
    if t == "float32":
        return uniform(g.rng, shape, -1.0, 1.0)
    if t == "int16":
        return sweep_int16(g.rng, shape) if full else ints(g.rng, shape, -4000, 4000, "int16")
    return ints(g.rng, shape, -(1 << 30), 1 << 30, "int32") if full else \
        ints(g.rng, shape, -(1 << 20), 1 << 20, "int32")


def _rfft(t, fft_length, frame, frames=2, full=False):
    def build(g):
        x = g.input("x", t, _frames(g, t, (frames, frame), full))
        y = g.output("y", t, (frames, fft_length + 2))
        g.op("SignalRfft", [x], [y], custom="SignalRfft",
             custom_options=_flex({"T": int(DTYPES[t][0]), "fft_length": fft_length}))
    return build


def _irfft(t, fft_length, frames=2, full=False):
    def build(g):
        x = g.input("spectrum", t, _frames(g, t, (frames, fft_length + 2), full))
        y = g.output("y", t, (frames, fft_length))
        g.op("SignalIrfft", [x], [y], custom="SignalIrfft",
             custom_options=_flex({"T": int(DTYPES[t][0]), "fft_length": fft_length}))
    return build


for _t in ("int16", "int32", "float32"):
    for _n in _LENGTHS:
        _frame = _n - _n // 8
        add(f"signal_rfft_{_t}_{_n}", "SignalRfft", _t,
            f"TFLM signal custom op: real FFT of length {_n} of two {_frame}-sample frames "
            "(zero-padded)", _rfft(_t, _n, _frame))
        add(f"signal_irfft_{_t}_{_n}", "SignalIrfft", _t,
            f"TFLM signal custom op: inverse real FFT of length {_n} of two spectra",
            _irfft(_t, _n))
for _t in ("int16", "int32"):
    add(f"signal_rfft_{_t}_full_range", "SignalRfft", _t,
        "TFLM signal custom op: real FFT of length 512 of full-range frames (the fixed-point "
        "stages' scaling and rounding at the type's limits)", _rfft(_t, 512, 512, 3, True))
    add(f"signal_irfft_{_t}_full_range", "SignalIrfft", _t,
        "TFLM signal custom op: inverse real FFT of length 64 of full-range spectra",
        _irfft(_t, 64, 3, True))
add("signal_rfft_int16_batched", "SignalRfft", "int16",
    "TFLM signal custom op: real FFT of length 32 over frames with two leading axes",
    lambda g: _rfft3(g))


def _rfft3(g):
    x = g.input("x", "int16", ints(g.rng, (2, 3, 20), -3000, 3000, "int16"))
    y = g.output("y", "int16", (2, 3, 34))
    g.op("SignalRfft", [x], [y], custom="SignalRfft",
         custom_options=_flex({"T": int(DTYPES["int16"][0]), "fft_length": 32}))
