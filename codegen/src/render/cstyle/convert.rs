//! Conversions between vectors of 8-bit and 32-bit integers: the loads of int8 lanes widened
//! to int32, and int32 lanes stored as int8. GCC's `__builtin_convertvector` builds both a lane
//! at a time (an 8-byte vector is not one of its x86 vector modes); with AVX2 or AVX-512 each
//! is one to three instructions.

use super::simd::{guarded, neon_view, Form};
use super::Renderer;
use crate::dtype::{DType, Scalar};

impl Renderer<'_> {
    /// `x`, a vector of `from`, converted lane by lane to `to` (C type `t`) through a helper,
    /// when both are integers of 8 and 32 bits in 8 or 16 lanes on a SIMD target
    /// ([`int_conversion`]); `None` otherwise.
    pub(super) fn int_vector_conversion(
        &mut self,
        from: DType,
        to: DType,
        t: &str,
        x: &str,
    ) -> Option<String> {
        let sizes = (from.scalar.size(), to.scalar.size());
        let ints = from.is_int() && to.is_int() && matches!(sizes, (1, 4) | (4, 1));
        if self.target.simd_lanes == 0 || !ints || !matches!(from.count, 8 | 16) {
            return None;
        }
        let signed = from.scalar != Scalar::U8;
        let (name, helper) = int_conversion(t, from.count, sizes.0 == 1, signed);
        self.helpers.insert(helper);
        Some(format!("{name}({x})"))
    }
}

/// The name and definition of a conversion to vector type `t` of `lanes` lanes: from int8 (or
/// uint8 where not `signed`) to int32 where `widen`, else from int32 to 8 bits (the low byte
/// of each lane, as C converts). A macro, as [`super::alu::vector_high_word`] is. With AVX2 (8
/// lanes) `vpmovsxbd` or `vpmovzxbd`, or `vpshufb` and `vpermd`; with AVX-512 (16)
/// `vpmovsxbd`, `vpmovzxbd` or `vpmovdb`; with NEON (8) `SXTL`/`UXTL` twice, or `XTN` twice;
/// else `__builtin_convertvector`.
pub(crate) fn int_conversion(t: &str, lanes: u8, widen: bool, signed: bool) -> (String, String) {
    let source = match (widen, signed) {
        (true, true) => "i8",
        (true, false) => "u8",
        (false, _) => "i32",
    };
    let name = format!("kiln_cvt_{source}_{t}");
    let plain = format!("#define {name}(x) __builtin_convertvector((x), {t})");
    let mut forms: Vec<Form> = x86_conversion(t, lanes, widen, signed)
        .map(|(feature, e)| Form::x86(feature, format!("#define {name}(x) {e}")))
        .into_iter()
        .collect();
    if lanes == 8 {
        let e = neon_conversion(t, widen, signed);
        forms.push(Form::neon(&[], format!("#define {name}(x) {e}")));
    }
    let guard = format!("{}_DEFINED", name.to_uppercase());
    (name, guarded(&guard, "", &forms, &plain))
}

/// The x86 feature and the expression of [`int_conversion`], where x86 has one.
fn x86_conversion(t: &str, lanes: u8, widen: bool, signed: bool) -> Option<(&'static str, String)> {
    let ext = if signed { "epi8" } else { "epu8" };
    match (lanes, widen) {
        (8, true) => Some((
            "__AVX2__",
            format!(
                "({{ __typeof__(x) kiln_x = (x); long long kiln_q; \
                 __builtin_memcpy(&kiln_q, &kiln_x, 8); \
                 ({t})_mm256_cvt{ext}_epi32(_mm_cvtsi64_si128(kiln_q)); }})"
            ),
        )),
        (16, true) => Some((
            "__AVX512F__",
            format!("(({t})_mm512_cvt{ext}_epi32((__m128i)(x)))"),
        )),
        (8, false) => Some((
            "__AVX2__",
            format!(
                "({{ __m256i kiln_b = _mm256_shuffle_epi8((__m256i)(x), _mm256_setr_epi8(\
                 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, \
                 0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1)); \
                 kiln_b = _mm256_permutevar8x32_epi32(kiln_b, _mm256_setr_epi32(0, 4, 0, 0, 0, 0, 0, 0)); \
                 long long kiln_q = _mm_cvtsi128_si64(_mm256_castsi256_si128(kiln_b)); \
                 {t} kiln_r; __builtin_memcpy(&kiln_r, &kiln_q, 8); kiln_r; }})"
            ),
        )),
        (16, false) => Some((
            "__AVX512F__",
            format!("(({t})_mm512_cvtepi32_epi8((__m512i)(x)))"),
        )),
        _ => None,
    }
}

/// The NEON expression of [`int_conversion`] on 8 lanes (two registers of four int32).
fn neon_conversion(t: &str, widen: bool, signed: bool) -> String {
    if widen {
        let halves = match signed {
            true => "vmovl_s8((int8x8_t)(x))",
            false => "vreinterpretq_s16_u16(vmovl_u8((uint8x8_t)(x)))",
        };
        let r = neon_view("kiln_r", t, "int32x4_t", 2, "");
        return format!(
            "({{ int16x8_t kiln_h = {halves}; {r} \
             kiln_r.q[0] = vmovl_s16(vget_low_s16(kiln_h)); kiln_r.q[1] = vmovl_high_s16(kiln_h); \
             kiln_r.v; }})"
        );
    }
    let x = neon_view("kiln_x", "__typeof__(x)", "int32x4_t", 2, "(x)");
    format!(
        "({{ {x} ({t})vmovn_s16(vcombine_s16(vmovn_s32(kiln_x.q[0]), vmovn_s32(kiln_x.q[1]))); }})"
    )
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::super::cc::{assert_on_aarch64, assert_with_and_without_avx, compile_and_run, list};
    use super::int_conversion;

    /// int8 values, their ends among them, and int32 values beyond int8's range.
    fn values(lanes: usize) -> (Vec<i64>, Vec<i64>) {
        let bytes = (0..lanes as i64).map(|k| 127 - k * 73 % 256).collect();
        let words = (0..lanes as i64)
            .map(|k| (k - 5) * 40_000_123 + k)
            .collect();
        (bytes, words)
    }

    /// What C's conversions give: each byte widened as int8 and as uint8, each word's low byte.
    fn expected(bytes: &[i64], words: &[i64]) -> Vec<i64> {
        let signed = bytes.iter().copied();
        let unsigned = bytes.iter().map(|&b| b as u8 as i64);
        let low = words.iter().map(|&w| w as i8 as i64);
        signed.chain(unsigned).chain(low).collect()
    }

    /// Compiles the conversions with `flags` and, where `run`, returns their lanes
    /// ([`conversions_src`]).
    fn conversions(flags: &[&str], run: bool) -> Vec<i64> {
        compile_and_run(&conversions_src(), flags, run)
    }

    /// A program printing the conversions' lanes (8 lanes, then 16): int8 and uint8 widened,
    /// int32 narrowed.
    fn conversions_src() -> String {
        let mut src = String::from("#include <stdio.h>\n");
        let mut main = String::from("int main(void) {\n");
        for lanes in [8usize, 16] {
            let (t, b, u) = (
                format!("int{lanes}"),
                format!("signed_char{lanes}"),
                format!("unsigned_char{lanes}"),
            );
            for (lane, name, size) in [
                ("int", &t, 4),
                ("signed char", &b, 1),
                ("unsigned char", &u, 1),
            ] {
                src += &format!(
                    "typedef {lane} {name} __attribute__((vector_size({}), aligned({size})));\n",
                    size * lanes
                );
            }
            let helpers = [
                int_conversion(&t, lanes as u8, true, true),
                int_conversion(&t, lanes as u8, true, false),
                int_conversion(&b, lanes as u8, false, true),
            ];
            for (_, h) in &helpers {
                src += h;
                src.push('\n');
            }
            let (bytes, words) = values(lanes);
            let unsigned: Vec<i64> = bytes.iter().map(|&x| x as u8 as i64).collect();
            let print = |v: &str| {
                format!("    for (int k = 0; k < {lanes}; k++) printf(\"%d\\n\", (int){v}[k]);\n")
            };
            main += &format!(
                "  {{ {b} s = {{{}}}; {u} z = {{{}}}; {t} w = {{{}}};\n    \
                 {t} ws = {}(s); {t} wz = {}(z); {b} n = {}(w);\n{}{}{}  }}\n",
                list(&bytes),
                list(&unsigned),
                list(&words),
                helpers[0].0,
                helpers[1].0,
                helpers[2].0,
                print("ws"),
                print("wz"),
                print("n"),
            );
        }
        main += "  return 0;\n}\n";
        src + &main
    }

    #[test]
    fn int_vector_conversions_equal_plain_c_with_and_without_avx_and_on_neon() {
        let mut want = Vec::new();
        for lanes in [8, 16] {
            let (bytes, words) = values(lanes);
            want.extend(expected(&bytes, &words));
        }
        let avx512 = std::arch::is_x86_feature_detected!("avx512f");
        assert_with_and_without_avx(conversions, &want, (&["-mavx2", "-mavx512f"], avx512));
        assert_on_aarch64(&conversions_src(), &want);
    }
}
