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


# ---- the filter bank chain of an audio front end: FilterBank (u32 power spectrum → u64
# channels), its SquareRoot (→ u32), Log (→ int16) and PCAN (per-channel gain control)


def _bands(rng, channels, bins):
    """A mel-like layout: channels + 1 contiguous bands over the bins, Q12 weights rising
    across each band and unweights falling (4096 − weight)."""
    edges = np.sort(rng.choice(np.arange(1, bins - 1), channels, replace=False))
    edges = np.concatenate([[0], edges, [bins]])
    freq = edges[:-1].astype(np.int16)
    width = np.diff(edges).astype(np.int16)
    wstart = np.concatenate([[0], np.cumsum(width)[:-1]]).astype(np.int16)
    w = np.concatenate([np.round(4096 * (np.arange(n) + 1) / (n + 1)) for n in width])
    return freq, wstart, width, w.astype(np.int16), (4096 - w).astype(np.int16)


def _filter_bank(channels=8, bins=33, wild=False):
    def build(g):
        freq, wstart, width, w, u = _bands(g.rng, channels, bins)
        if wild:
            w = ints(g.rng, w.shape, -32768, 32767, "int16")
            u = ints(g.rng, u.shape, -32768, 32767, "int16")
            x = ints(g.rng, (bins,), 0, 2**32 - 1, "uint32")
        else:
            x = ints(g.rng, (bins,), 0, 2**31, "uint32")
        xi = g.input("spectrum", "uint32", x)
        ts = [g.const(n, "int16", v) for n, v in (("weights", w), ("unweights", u),
              ("channel_frequency_starts", freq), ("channel_weight_starts", wstart),
              ("channel_widths", width))]
        y = g.output("channels", "uint64", (channels,))
        g.op("SignalFilterBank", [xi, *ts], [y], custom="SignalFilterBank",
             custom_options=_flex({"num_channels": channels}))
    return build


def _square_root(g):
    # Small values, values just under and over 2^32 (where TFLM changes its routine), and
    # values up to 2^64 − 1.
    parts = [ints(g.rng, (6,), 0, 1000, "uint64"),
             np.array([0, 1, 2**32 - 1, 2**32, 2**32 + 1, (2**16 - 1) ** 2 + 2**16 - 1,
                       2**64 - 1, 2**63], dtype=np.uint64),
             g.rng.integers(0, 2**63, 10, dtype=np.uint64) * np.uint64(2)]
    x = g.input("channels", "uint64", np.concatenate(parts))
    s = g.const("scale_bits", "int32", np.array(3, dtype=np.int32))
    y = g.output("y", "uint32", (24,))
    g.op("SignalFilterBankSquareRoot", [x, s], [y], custom="SignalFilterBankSquareRoot",
         custom_options=_flex({}))


def _log(correction, scale):
    def build(g):
        x = np.concatenate([np.array([0, 1, 2, 3, 2**32 - 1, 2**31, 65535, 65536, 65537],
                                     dtype=np.uint32),
                            ints(g.rng, (15,), 0, 2**24, "uint32"),
                            ints(g.rng, (16,), 0, 2**32 - 1, "uint32")])
        xi = g.input("channels", "uint32", x)
        y = g.output("y", "int16", (40,))
        g.op("SignalFilterBankLog", [xi], [y], custom="SignalFilterBankLog",
             custom_options=_flex({"input_correction_bits": correction, "output_scale": scale}))
    return build


def _pcan_lut(rng):
    """A gain table of TFLM's layout: three entries for inputs 0, 1, 2, then (a0, a1, a2, pad)
    per octave: 4 · 32 − 6 + 3 = 125 entries."""
    return ints(rng, (125,), -2000, 32767, "int16")


def _pcan(snr_shift):
    def build(g):
        n = 24
        x = ints(g.rng, (n,), 0, 2**20, "uint32")
        noise = np.concatenate([np.array([0, 1, 2, 3, 4, 7, 1023, 1024, 2047, 2048, 2**32 - 1],
                                         dtype=np.uint32),
                                ints(g.rng, (n - 11,), 0, 2**32 - 1, "uint32")])
        xi = g.input("channels", "uint32", x)
        ni = g.input("noise_estimate", "uint32", noise)
        lut = g.const("gain_lut", "int16", _pcan_lut(g.rng))
        y = g.output("y", "uint32", (n,))
        g.op("SignalPCAN", [xi, ni, lut], [y], custom="SignalPCAN",
             custom_options=_flex({"snr_shift": snr_shift}))
    return build


add("signal_filter_bank_uint32", "SignalFilterBank", "uint32",
    "TFLM signal custom op: 8 mel-like channels of a 33-bin power spectrum", _filter_bank())
add("signal_filter_bank_uint32_40", "SignalFilterBank", "uint32",
    "TFLM signal custom op: 40 channels of a 257-bin spectrum (a 512-point FFT's)",
    _filter_bank(40, 257))
add("signal_filter_bank_uint32_wrapping", "SignalFilterBank", "uint32",
    "TFLM signal custom op: negative int16 weights and full-range inputs (u64 sums wrap)",
    _filter_bank(wild=True))
add("signal_filter_bank_square_root_uint64", "SignalFilterBankSquareRoot", "uint64",
    "TFLM signal custom op: rounded square roots across the u64 range, shifted by 3",
    _square_root)
for _cb, _scale in ((0, 1600), (3, 65536), (0, -7)):
    add(f"signal_filter_bank_log_uint32_{_cb}_{abs(_scale)}", "SignalFilterBankLog", "uint32",
        f"TFLM signal custom op: log of u32 channels, input_correction_bits {_cb}, "
        f"output_scale {_scale}", _log(_cb, _scale))
for _shift in (6, 14):
    add(f"signal_pcan_uint32_shift{_shift}", "SignalPCAN", "uint32",
        f"TFLM signal custom op: PCAN gain control, snr_shift {_shift}", _pcan(_shift))


# The signal ops that keep state between invocations: TFLM runs each model several times on
# the same inputs (g.invocations), and its last outputs are the reference.
def _stateful(op, x, outputs, options, invocations):
    """One op on input `x` (dtype, data), its outputs (name, dtype, shape), run `invocations`
    times."""
    def build(g):
        dtype, data = x
        xi = g.input("x", dtype, data(g.rng))
        ys = [g.output(name, t, shape) for name, t, shape in outputs]
        g.op(op, [xi], ys, custom=op, custom_options=_flex(options))
        g.invocations = invocations
    return build


def _i16(shape, scale=4000):
    return lambda rng: ints(rng, shape, -scale, scale, "int16")


add("signal_delay_int16", "SignalDelay", "int16",
    "TFLM signal custom op: [2,5] frames delayed by 7 samples, the third invocation",
    _stateful("SignalDelay", ("int16", _i16((2, 5))), [("y", "int16", (2, 5))],
              {"delay_length": 7}, 3))
add("signal_framer_int16_prefill", "SignalFramer", "int16",
    "TFLM signal custom op: frames of 12 every 8 samples of [2,16], prefilled, the third "
    "invocation",
    _stateful("SignalFramer", ("int16", _i16((2, 16))),
              [("y", "int16", (2, 2, 12)), ("valid", "bool", ())],
              {"frame_size": 12, "frame_step": 8, "prefill": True}, 3))
add("signal_framer_int16", "SignalFramer", "int16",
    "TFLM signal custom op: a frame of 20 every 8 samples, not prefilled: valid from the "
    "third invocation, which is the reference",
    _stateful("SignalFramer", ("int16", _i16((8,))),
              [("y", "int16", (1, 20)), ("valid", "bool", ())],
              {"frame_size": 20, "frame_step": 8, "prefill": False}, 3))
add("signal_stacker_int16", "SignalStacker", "int16",
    "TFLM signal custom op: 6 channels stacked with 2 frames of left and 1 of right context, "
    "step 2: the fourth invocation (valid)",
    _stateful("SignalStacker", ("int16", _i16((6,))),
              [("y", "int16", (24,)), ("valid", "bool", ())],
              {"num_channels": 6, "stacker_left_context": 2, "stacker_right_context": 1,
               "stacker_step": 2}, 4))
add("signal_overlap_add_int16", "SignalOverlapAdd", "int16",
    "TFLM signal custom op: 3 frames of 10 overlap-added every 4 samples, full-range values "
    "(the sums saturate), the third invocation",
    _stateful("SignalOverlapAdd", ("int16", _i16((2, 3, 10), 32767)),
              [("y", "int16", (2, 12))], {"T": 7, "frame_step": 4}, 3))
add("signal_overlap_add_float32", "SignalOverlapAdd", "float32",
    "TFLM signal custom op: 3 float frames of 10 overlap-added every 4 samples, the third "
    "invocation",
    _stateful("SignalOverlapAdd", ("float32", lambda rng: uniform(rng, (3, 10))),
              [("y", "float32", (12,))], {"T": 0, "frame_step": 4}, 3))
add("signal_filter_bank_spectral_subtraction_uint32", "SignalFilterBankSpectralSubtraction",
    "uint32",
    "TFLM signal custom op: 24 channels, clamping, other coefficients on odd channels, some "
    "inputs whose shift wraps: the fifth invocation",
    _stateful("SignalFilterBankSpectralSubtraction",
              ("uint32", lambda rng: np.concatenate(
                  [ints(rng, (20,), 0, 1 << 20, "uint32"),
                   ints(rng, (4,), 1 << 31, (1 << 32) - 1, "uint32")])),
              [("y", "uint32", (24,)), ("noise_estimate", "uint32", (24,))],
              {"alternate_one_minus_smoothing": 15684, "alternate_smoothing": 700,
               "clamping": True, "min_signal_remaining": 1638, "num_channels": 24,
               "one_minus_smoothing": 14884, "smoothing": 1500, "smoothing_bits": 10,
               "spectral_subtraction_bits": 14}, 5))
