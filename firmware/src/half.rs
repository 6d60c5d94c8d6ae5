//! IEEE half-precision conversions, for kernels over `float16` tensors on microcontrollers.
//! GCC for Arm (with `-mfp16-format=ieee`) calls these for the conversions the core cannot do
//! itself: every one on a Cortex-M0, double to half on a Cortex-M4F. Feature `c-math` exports
//! them under GCC's names on Arm.

/// The half nearest to a finite or infinite value given as sign, unbiased exponent and
/// significand (`bits` bits after the point, the leading 1 included for normal values), ties
/// to even; NaN is handled by the callers.
fn round_to_half(sign: u16, exp: i32, significand: u64, bits: u32) -> u16 {
    // A half keeps 10 bits after the point; below 2^-14 it is subnormal and keeps fewer.
    let shift = bits as i32 - 10 + (-14 - exp).max(0);
    if shift >= 64 {
        return sign;
    }
    let shift = shift as u32;
    let mut kept = significand >> shift;
    let rest = significand & ((1u64 << shift) - 1);
    let half_way = 1u64 << (shift - 1);
    if rest > half_way || (rest == half_way && kept & 1 == 1) {
        kept += 1;
    }
    // A normal value's kept bits hold its leading 1, worth one step of the exponent field:
    // adding them to (exponent - 1) << 10 carries into the exponent when rounding overflows.
    let biased = if exp < -14 { 0 } else { (exp + 14) as u64 };
    let magnitude = (biased << 10) + kept;
    if magnitude >= 0x7c00 {
        sign | 0x7c00
    } else {
        sign | magnitude as u16
    }
}

/// The half nearest to `x` (ties to even), as bits.
pub fn f32_to_f16(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 16) & 0x8000) as u16;
    let exp = ((b >> 23) & 0xff) as i32;
    let mantissa = u64::from(b & 0x7f_ffff);
    match exp {
        0xff if mantissa != 0 => sign | 0x7e00 | (mantissa >> 13) as u16,
        0xff => sign | 0x7c00,
        0 => round_to_half(sign, -126, mantissa, 23),
        _ => round_to_half(sign, exp - 127, mantissa | 1 << 23, 23),
    }
}

/// The half nearest to `x` (ties to even, rounded once), as bits.
pub fn f64_to_f16(x: f64) -> u16 {
    let b = x.to_bits();
    let sign = ((b >> 48) & 0x8000) as u16;
    let exp = ((b >> 52) & 0x7ff) as i32;
    let mantissa = b & ((1 << 52) - 1);
    match exp {
        0x7ff if mantissa != 0 => sign | 0x7e00 | (mantissa >> 42) as u16,
        0x7ff => sign | 0x7c00,
        0 => round_to_half(sign, -1022, mantissa, 52),
        _ => round_to_half(sign, exp - 1023, mantissa | 1 << 52, 52),
    }
}

/// The value of half `h` (exact).
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from(h >> 10) & 0x1f;
    let mantissa = u32::from(h & 0x3ff);
    let magnitude = match exp {
        0x1f => 0x7f80_0000 | mantissa << 13,
        0 if mantissa == 0 => 0,
        // Subnormal: mantissa × 2^-24, exact in a float.
        0 => (mantissa as f32 * (1.0 / 16_777_216.0)).to_bits(),
        _ => (exp + 112) << 23 | mantissa << 13,
    };
    f32::from_bits(sign | magnitude)
}

/// GCC calls its half conversions with the base procedure call standard ("aapcs": values in
/// integer registers), even where the FPU passes floats in its own registers.
#[cfg(all(feature = "c-math", target_arch = "arm"))]
mod exports {
    /// GCC's float-to-half conversion (`-mfp16-format=ieee`).
    #[no_mangle]
    pub extern "aapcs" fn __gnu_f2h_ieee(x: f32) -> u16 {
        super::f32_to_f16(x)
    }

    /// GCC's half-to-float conversion.
    #[no_mangle]
    pub extern "aapcs" fn __gnu_h2f_ieee(h: u16) -> f32 {
        super::f16_to_f32(h)
    }

    /// GCC's double-to-half conversion, rounded once.
    #[no_mangle]
    pub extern "aapcs" fn __gnu_d2h_ieee(x: f64) -> u16 {
        super::f64_to_f16(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_half_survives_a_round_trip_through_float_and_double() {
        for h in 0..=u16::MAX {
            let x = f16_to_f32(h);
            if x.is_nan() {
                assert!(f32_to_f16(x) & 0x7c00 == 0x7c00 && f32_to_f16(x) & 0x3ff != 0);
                continue;
            }
            assert_eq!(f32_to_f16(x), h, "{h:#06x} = {x}");
            assert_eq!(f64_to_f16(f64::from(x)), h, "{h:#06x} = {x}");
        }
    }

    #[test]
    fn known_values() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 5.960_464_5e-8);
        assert_eq!(f32_to_f16(65519.0), 0x7bff);
        assert_eq!(f32_to_f16(65520.0), 0x7c00, "rounds up to infinity");
        assert_eq!(f32_to_f16(1e-8), 0, "below half the smallest subnormal");
        assert_eq!(f32_to_f16(-0.0), 0x8000);
        assert_eq!(f32_to_f16(f32::INFINITY), 0x7c00);
    }

    /// Every float between two neighbouring halves goes to the nearer; the midpoint to the even
    /// one. Double rounding (double → float → half) would get some of these wrong.
    #[test]
    fn values_between_halves_round_to_nearest_even() {
        for h in (0u16..0x7bff).step_by(7) {
            let (lo, hi) = (f64::from(f16_to_f32(h)), f64::from(f16_to_f32(h + 1)));
            let mid = (lo + hi) / 2.0;
            let even = if h & 1 == 0 { h } else { h + 1 };
            assert_eq!(f64_to_f16(mid), even, "midpoint after {h:#06x}");
            let step = (hi - lo) / 1024.0;
            assert_eq!(f64_to_f16(mid - step), h);
            assert_eq!(f64_to_f16(mid + step), h + 1);
            assert_eq!(f32_to_f16((mid - step) as f32), h);
            assert_eq!(f32_to_f16((mid + step) as f32), h + 1);
        }
        // Just above a midpoint by less than a float's precision: double rounding would tie.
        let mid = (1.0 + f64::from(f16_to_f32(0x3c01))) / 2.0;
        assert_eq!(f64_to_f16(mid + 1e-12), 0x3c01);
    }
}
