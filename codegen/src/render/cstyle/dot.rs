//! Packed int8 dot products ([`crate::uop::UOpKind::Dot`]): each operand is four consecutive int8 values
//! read as one 32-bit word, and the four products are summed into the accumulator. On a core
//! with the DSP extension that is two `SXTB16` per word (bytes 0 and 2, then 1 and 3, each
//! sign-extended to a pair of halfwords) and two `SMLAD` (two 16-bit products and their sum
//! added to the accumulator in one instruction); elsewhere it is the same sum in plain C.
//! Both operands are read the same way, so the pairing never changes the sum. With Helium,
//! sixteen int8 values of each operand are one 128-bit vector and one `VMLADAVA` sums their
//! products.

use super::Renderer;
use crate::dtype::DType;
use crate::render::RenderError;
use crate::uop::UOp;

/// The helpers: `kiln_ld4` reads a word at any alignment (one `LDR` on cores that allow
/// unaligned loads), `kiln_dot4` accumulates its products.
const PACKED_DOT: &str = "#ifndef KILN_DOT4_DEFINED\n\
#define KILN_DOT4_DEFINED\n\
static inline int kiln_ld4(const signed char* p) { int w; __builtin_memcpy(&w, p, 4); return w; }\n\
#if defined(__ARM_FEATURE_DSP)\n\
#include <arm_acle.h>\n\
static inline int kiln_sxtb16_ror8(int x) {\n\
  int r; __asm__(\"sxtb16 %0, %1, ror #8\" : \"=r\"(r) : \"r\"(x)); return r;\n\
}\n\
static inline int kiln_dot4(int acc, int a, int b) {\n\
  acc = __smlad(__sxtb16(a), __sxtb16(b), acc);\n\
  return __smlad(kiln_sxtb16_ror8(a), kiln_sxtb16_ror8(b), acc);\n\
}\n\
#else\n\
static inline int kiln_dot4(int acc, int a, int b) {\n\
  return acc + (signed char)a * (signed char)b + (signed char)(a >> 8) * (signed char)(b >> 8)\n\
    + (signed char)(a >> 16) * (signed char)(b >> 16) + (signed char)(a >> 24) * (signed char)(b >> 24);\n\
}\n\
#endif\n\
#endif";

/// The helpers for an int16 operand and an int8 one (a widened weight and int8 activations,
/// or activations stored as int16 and an int8 weight): `kiln_dot4w` multiplies the four int16
/// values at `w` (two words, any alignment) by a word of four int8 values. One side holds its
/// values in pair order ([`crate::kernel::Kernel::paired`]), 0 and 2 then 1 and 3, as `SXTB16`
/// unpacks the int8 word, so each pair is one `SMLAD`. It follows [`PACKED_DOT`] in the helpers (sorted: `…DOT4_DEFINED`
/// before `…DOT4_WIDE_DEFINED`) and uses its `kiln_sxtb16_ror8`.
const WIDE_DOT: &str = "#ifndef KILN_DOT4_WIDE_DEFINED\n\
#define KILN_DOT4_WIDE_DEFINED\n\
static inline int kiln_ld2h(const short* p) { int w; __builtin_memcpy(&w, p, 4); return w; }\n\
#if defined(__ARM_FEATURE_DSP)\n\
static inline int kiln_dot4w(int acc, int a, const short* w) {\n\
  acc = __smlad(__sxtb16(a), kiln_ld2h(w), acc);\n\
  return __smlad(kiln_sxtb16_ror8(a), kiln_ld2h(w + 2), acc);\n\
}\n\
#else\n\
static inline int kiln_dot4w(int acc, int a, const short* w) {\n\
  return acc + (signed char)a * w[0] + (signed char)(a >> 16) * w[1]\n\
    + (signed char)(a >> 8) * w[2] + (signed char)(a >> 24) * w[3];\n\
}\n\
#endif\n\
#endif";

/// The helper for two int16 operands (an activation stored as int16 and a widened weight,
/// or two such activations): `kiln_dot4ww` multiplies the four values at `a` by the four at
/// `w`, in the same order, two words each, one `SMLAD` a word. It follows [`WIDE_DOT`] in the
/// helpers (`…DOT4_WIDE_DEFINED` before `…DOT4_WW_DEFINED`) and uses its `kiln_ld2h`.
const WIDE_WIDE_DOT: &str = "#ifndef KILN_DOT4_WW_DEFINED\n\
#define KILN_DOT4_WW_DEFINED\n\
#if defined(__ARM_FEATURE_DSP)\n\
static inline int kiln_dot4ww(int acc, const short* a, const short* w) {\n\
  acc = __smlad(kiln_ld2h(a), kiln_ld2h(w), acc);\n\
  return __smlad(kiln_ld2h(a + 2), kiln_ld2h(w + 2), acc);\n\
}\n\
#else\n\
static inline int kiln_dot4ww(int acc, const short* a, const short* w) {\n\
  return acc + a[0] * w[0] + a[1] * w[1] + a[2] * w[2] + a[3] * w[3];\n\
}\n\
#endif\n\
#endif";

/// The helpers for Helium's dot products: `kiln_v16` is sixteen int8 values, `kiln_ld16`
/// loads them from any alignment (one `VLDRB.8`) and `kiln_dot16` adds their sixteen products
/// with another such vector's to the accumulator (one `VMLADAVA.S8`).
const HELIUM_DOT: &str = "#ifndef KILN_DOT16_DEFINED\n\
#define KILN_DOT16_DEFINED\n\
#if defined(__ARM_FEATURE_MVE)\n\
#include <arm_mve.h>\n\
typedef int8x16_t kiln_v16;\n\
static inline kiln_v16 kiln_ld16(const signed char* p) { return vldrbq_s8(p); }\n\
static inline int kiln_dot16(int acc, kiln_v16 a, kiln_v16 b) { return vmladavaq_s8(acc, a, b); }\n\
#else\n\
typedef struct { signed char v[16]; } kiln_v16;\n\
static inline kiln_v16 kiln_ld16(const signed char* p) { kiln_v16 r; __builtin_memcpy(&r, p, 16); return r; }\n\
static inline int kiln_dot16(int acc, kiln_v16 a, kiln_v16 b) {\n\
  for (int k = 0; k < 16; k++) acc += a.v[k] * b.v[k];\n\
  return acc;\n\
}\n\
#endif\n\
#endif";

/// The operand type of a packed dot product: four int8 lanes.
pub(super) const PACKED: DType = DType::I8.vec(4);

/// An int16 operand: four int16 lanes (a widened weight, or activations stored as int16).
pub(super) const WIDE: DType = DType::I16.vec(4);

/// The operand type of Helium's dot products: sixteen int8 lanes.
pub(super) const HELIUM: DType = DType::I8.vec(16);

impl Renderer<'_> {
    /// Four int8 values of a buffer, loaded as one word for a [`crate::uop::UOpKind::Dot`]
    /// (sixteen as one Helium vector); four int16 values are read by the dot product itself,
    /// from their address.
    pub(super) fn packed_load(&mut self, i: usize, u: &UOp) -> Result<(), RenderError> {
        let helium = u.dtype == Some(HELIUM);
        if !self.target.packed_dot || u.src.len() != 2 || (helium && !self.target.helium_dot) {
            return Err(self.unsupported(format!("a load of {}", u.dtype.unwrap_or(PACKED))));
        }
        let at = format!("{}+{}", self.src(u, 0), self.src(u, 1));
        if helium {
            self.helpers.insert(HELIUM_DOT.to_string());
            let name = self.fresh("vec");
            self.line(format!("kiln_v16 {name} = kiln_ld16({at});"));
            self.exprs[i] = name;
            return Ok(());
        }
        self.helpers.insert(PACKED_DOT.to_string());
        if u.dtype == Some(WIDE) {
            self.helpers.insert(WIDE_DOT.to_string());
            self.exprs[i] = format!("({at})");
            return Ok(());
        }
        let name = self.fresh("val");
        self.line(format!("int {name} = kiln_ld4({at});"));
        self.exprs[i] = name;
        Ok(())
    }

    /// `acc + Σ a·b` over the four lanes of two packed words, of a word and four int16 values
    /// (in either place), of two fours of int16 values, or of two Helium vectors of sixteen
    /// int8 values; on a target with [`crate::target::Target::lane_dot`], over pairs
    /// ([`Renderer::lane_dot`]).
    pub(super) fn dot(&mut self, i: usize, u: &UOp) -> Result<(), RenderError> {
        if self.target.lane_dot {
            return self.lane_dot(i, u);
        }
        let (a, b) = (self.dtype_of(u, 1), self.dtype_of(u, 2));
        let helper = match (a, b) {
            (PACKED, PACKED) => "kiln_dot4",
            (PACKED, WIDE) | (WIDE, PACKED) => "kiln_dot4w",
            (WIDE, WIDE) => "kiln_dot4ww",
            (HELIUM, HELIUM) => "kiln_dot16",
            _ => "",
        };
        if !self.target.packed_dot || helper.is_empty() || u.dtype != Some(DType::I32) {
            return Err(self.unsupported("a packed dot product".to_string()));
        }
        // The operands' loads brought in `HELIUM_DOT` and `WIDE_DOT`.
        match (a, b) {
            (HELIUM, HELIUM) => {}
            (WIDE, WIDE) => {
                self.helpers.insert(PACKED_DOT.to_string());
                self.helpers.insert(WIDE_WIDE_DOT.to_string());
            }
            _ => {
                self.helpers.insert(PACKED_DOT.to_string());
            }
        }
        // `kiln_dot4w` takes the int8 word first.
        let (x, y) = match a == WIDE {
            true => (self.src(u, 2), self.src(u, 1)),
            false => (self.src(u, 1), self.src(u, 2)),
        };
        let e = format!("{helper}({}, {x}, {y})", self.src(u, 0));
        self.value(i, "alu", e)
    }
}

impl Renderer<'_> {
    /// A dot product of int8 pairs ([`crate::target::Target::lane_dot`]): in one `int`, the
    /// two products of two pairs added to it; in each lane of a vector of them, the two
    /// products of that lane's pairs, each operand one pair for every lane or a pair per lane
    /// side by side ([`lane_dot_helpers`]).
    fn lane_dot(&mut self, i: usize, u: &UOp) -> Result<(), RenderError> {
        let pair = DType::I8.vec(2);
        let acc = u.dtype.filter(|d| d.scalar() == DType::I32);
        let lanes = acc.map_or(0, |d| d.count);
        let fits = |k: usize| {
            let d = self.dtype_of(u, k);
            d == pair || (lanes > 1 && d == pair.vec(2 * lanes))
        };
        if acc.is_none() || !fits(1) || !fits(2) {
            return Err(self.unsupported("a dot product of int8 pairs".to_string()));
        }
        let (a, b, sum) = (self.src(u, 1), self.src(u, 2), self.src(u, 0));
        if lanes == 1 {
            let e = format!("({sum}+{a}[0]*{b}[0]+{a}[1]*{b}[1])");
            return self.value(i, "alu", e);
        }
        let t = self.ty(acc.expect("checked"))?;
        let operand = |k: usize, x: &str| match self.dtype_of(u, k) == pair {
            true => format!("kiln_pair_{t}({x})"),
            false => format!("kiln_widen_{t}({x})"),
        };
        let e = format!("kiln_dot2_{t}({sum}, {}, {})", operand(1, a), operand(2, b));
        self.helpers.insert(lane_dot_helpers(&t, lanes));
        self.value(i, "alu", e)
    }
}

/// The macros of the dot products of int8 pairs in `lanes` int32 lanes (C type `t`), as
/// [`super::alu::vector_high_word`]'s: `kiln_pair_T` widens one pair to int16 and repeats it
/// in every lane, `kiln_widen_T` widens a pair per lane, `kiln_dot2_T` adds each lane's two
/// products to the accumulator. With AVX2 (8 lanes) or AVX-512BW (16) those are
/// `vpbroadcastw` and `vpmovsxbw`, `vpmovsxbw`, and one `vpmaddwd`; else the same in plain C.
pub(crate) fn lane_dot_helpers(t: &str, lanes: u8) -> String {
    let halves = 2 * lanes as usize;
    let pairs = format!("kiln_i16x{halves}_of_{t}");
    let (bytes_of, halves_of) = (
        format!("kiln_i8x{halves}_of_{t}"),
        format!("kiln_i16x{lanes}_of_{t}"),
    );
    let same = vec!["kiln_h"; lanes as usize].join(", ");
    // The pair's two bytes as one halfword.
    let half = "({ __typeof__(p) kiln_p = (p); short kiln_h; __builtin_memcpy(&kiln_h, &kiln_p, 2); kiln_h; })";
    let plain = format!(
        "#define kiln_pair_{t}(p) ({{ short kiln_h = {half}; \
         __builtin_convertvector(({bytes_of})(({halves_of}){{{same}}}), {pairs}); }})\n\
         #define kiln_widen_{t}(x) __builtin_convertvector((x), {pairs})\n\
         #define kiln_dot2_{t}(acc, a, b) ({{ {t} kiln_r = (acc); {pairs} kiln_a = (a), \
         kiln_b = (b); for (int kiln_k = 0; kiln_k < {lanes}; kiln_k++) kiln_r[kiln_k] += \
         kiln_a[2 * kiln_k] * kiln_b[2 * kiln_k] + kiln_a[2 * kiln_k + 1] * kiln_b[2 * kiln_k + 1]; \
         kiln_r; }})"
    );
    // (feature, prefix, the int16 vector, the int8 vector it widens, its set1)
    let wide = match lanes {
        8 => Some(("__AVX2__", "_mm256", "__m256i", "__m128i", "_mm_set1_epi16")),
        16 => Some((
            "__AVX512BW__",
            "_mm512",
            "__m512i",
            "__m256i",
            "_mm256_set1_epi16",
        )),
        _ => None,
    };
    let body = match wide {
        Some((feature, p, v, narrow, set1)) => format!(
            "#if defined({feature})\n#include <immintrin.h>\n\
             #define kiln_pair_{t}(p) (({pairs}){p}_cvtepi8_epi16({set1}({half})))\n\
             #define kiln_widen_{t}(x) (({pairs}){p}_cvtepi8_epi16(({narrow})(x)))\n\
             #define kiln_dot2_{t}(acc, a, b) ((acc) + ({t}){p}_madd_epi16(({v})(a), ({v})(b)))\n\
             #else\n{plain}\n#endif"
        ),
        None => plain,
    };
    let guard = format!("KILN_DOT2_{}_DEFINED", t.to_uppercase());
    format!(
        "#ifndef {guard}\n#define {guard}\n\
         typedef short {pairs} __attribute__((vector_size({}), aligned(2)));\n\
         typedef signed char {bytes_of} __attribute__((vector_size({halves}), aligned(1)));\n\
         typedef short {halves_of} __attribute__((vector_size({halves}), aligned(2)));\n\
         {body}\n#endif",
        2 * halves
    )
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::super::cc::{assert_with_and_without_avx, compile_and_run, list};
    use super::lane_dot_helpers;

    /// The accumulators, a shared pair, and two vectors of a pair per lane, for `lanes` lanes:
    /// int8's ends among them.
    fn operands(lanes: usize) -> (Vec<i64>, [i64; 2], Vec<i64>, Vec<i64>) {
        let acc = (0..lanes as i64)
            .map(|l| (2 * l - lanes as i64) * 130_000_007)
            .collect();
        let w = (0..2 * lanes as i64)
            .map(|k| [-128, 127, -1, 0][k as usize % 4] + (k / 4) * 9 % 50)
            .map(|x| x.clamp(-128, 127))
            .collect();
        let v = (0..2 * lanes as i64).map(|k| 127 - k * 37 % 256).collect();
        (acc, [-128, -128], w, v)
    }

    /// Each lane's sum: its accumulator plus the products of `a`'s pair (one for every lane,
    /// or one per lane) and its pair of `b`.
    fn expected(acc: &[i64], a: &[i64], b: &[i64]) -> Vec<i64> {
        let at = |x: &[i64], l: usize, j: usize| x[if x.len() == 2 { j } else { 2 * l + j }];
        (0..acc.len())
            .map(|l| acc[l] + (0..2).map(|j| at(a, l, j) * at(b, l, j)).sum::<i64>())
            .collect()
    }

    /// Compiles the helpers with `flags` and, where `run`, returns the sums (8 lanes, then
    /// 16) of a shared pair and a pair per lane, then of two pairs per lane.
    fn lane_dots(flags: &[&str], run: bool) -> Vec<i64> {
        let mut src = String::from("#include <stdio.h>\n");
        src += "typedef signed char signed_char2 __attribute__((vector_size(2), aligned(1)));\n";
        let mut main = String::from("int main(void) {\n");
        for lanes in [8usize, 16] {
            let (t, bytes) = (format!("int{lanes}"), format!("signed_char{}", 2 * lanes));
            src += &format!(
                "typedef int {t} __attribute__((vector_size({}), aligned(4)));\n\
                 typedef signed char {bytes} __attribute__((vector_size({}), aligned(1)));\n{}\n",
                4 * lanes,
                2 * lanes,
                lane_dot_helpers(&t, lanes as u8)
            );
            let (acc, p, w, v) = operands(lanes);
            main += &format!(
                "  {{ {t} acc = {{{}}}; signed_char2 p = {{{}}}; {bytes} w = {{{}}}, v = {{{}}};\n    \
                 {t} r = kiln_dot2_{t}(acc, kiln_pair_{t}(p), kiln_widen_{t}(w));\n    \
                 {t} s = kiln_dot2_{t}(acc, kiln_widen_{t}(v), kiln_widen_{t}(w));\n    \
                 for (int k = 0; k < {lanes}; k++) printf(\"%d\\n\", r[k]);\n    \
                 for (int k = 0; k < {lanes}; k++) printf(\"%d\\n\", s[k]); }}\n",
                list(&acc),
                list(&p),
                list(&w),
                list(&v)
            );
        }
        main += "  return 0;\n}\n";
        compile_and_run(&(src + &main), flags, run)
    }

    #[test]
    fn dot_products_of_pairs_in_lanes_equal_the_plain_sums_with_and_without_avx() {
        let mut want = Vec::new();
        for lanes in [8, 16] {
            let (acc, p, w, v) = operands(lanes);
            want.extend(expected(&acc, &p, &w));
            want.extend(expected(&acc, &v, &w));
        }
        let avx512 = std::arch::is_x86_feature_detected!("avx512bw");
        assert_with_and_without_avx(
            lane_dots,
            &want,
            (&["-mavx2", "-mavx512f", "-mavx512bw"], avx512),
        );
    }
}
