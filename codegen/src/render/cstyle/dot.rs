//! Packed int8 dot products ([`crate::uop::UOpKind::Dot`]): each operand is four consecutive int8 values
//! read as one 32-bit word, and the four products are summed into the accumulator. On a core
//! with the DSP extension that is two `SXTB16` per word (bytes 0 and 2, then 1 and 3, each
//! sign-extended to a pair of halfwords) and two `SMLAD` (two 16-bit products and their sum
//! added to the accumulator in one instruction); elsewhere it is the same sum in plain C.
//! Both operands are read the same way, so the pairing never changes the sum. With Helium,
//! sixteen int8 values of each operand are one 128-bit vector and one `VMLADAVA` sums their
//! products.

use super::simd::{guarded, neon_view, Form};
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
        if self.target.lane_dot > 0 {
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
    /// A dot product of int8 groups ([`crate::target::Target::lane_dot`], of 2 or 4): in one
    /// `int`, the products of two groups added to it; in each lane of a vector of them, the
    /// products of that lane's groups, each operand one group for every lane or a group per
    /// lane side by side ([`lane_dot_helpers`]).
    fn lane_dot(&mut self, i: usize, u: &UOp) -> Result<(), RenderError> {
        let width = self.target.lane_dot;
        let group = DType::I8.vec(width);
        let acc = u.dtype.filter(|d| d.scalar() == DType::I32);
        let lanes = acc.map_or(0, |d| d.count);
        let fits = |k: usize| {
            let d = self.dtype_of(u, k);
            d == group || (lanes > 1 && d == group.vec(width * lanes))
        };
        if acc.is_none() || !fits(1) || !fits(2) {
            return Err(self.unsupported(format!("a dot product of int8 groups of {width}")));
        }
        let (a, b, sum) = (self.src(u, 1), self.src(u, 2), self.src(u, 0));
        if lanes == 1 {
            let terms: String = (0..width).map(|j| format!("+{a}[{j}]*{b}[{j}]")).collect();
            return self.value(i, "alu", format!("({sum}{terms})"));
        }
        let t = self.ty(acc.expect("checked"))?;
        let shared = match width {
            2 => "pair",
            _ => "quad",
        };
        let operand = |k: usize, x: &str| match (self.dtype_of(u, k) == group, width) {
            (true, _) => format!("kiln_{shared}_{t}({x})"),
            (false, 2) => format!("kiln_widen_{t}({x})"),
            (false, _) => x.to_string(),
        };
        let e = format!(
            "kiln_dot{width}_{t}({sum}, {}, {})",
            operand(1, a),
            operand(2, b)
        );
        self.helpers.insert(match width {
            2 => lane_dot_helpers(&t, lanes),
            _ => quad_dot_helpers(&t, lanes),
        });
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
    let forms: Vec<Form> = wide
        .map(|(feature, p, v, narrow, set1)| {
            Form::x86(
                feature,
                format!(
                    "#define kiln_pair_{t}(p) (({pairs}){p}_cvtepi8_epi16({set1}({half})))\n\
                     #define kiln_widen_{t}(x) (({pairs}){p}_cvtepi8_epi16(({narrow})(x)))\n\
                     #define kiln_dot2_{t}(acc, a, b) ((acc) + ({t}){p}_madd_epi16(({v})(a), ({v})(b)))"
                ),
            )
        })
        .into_iter()
        .collect();
    let guard = format!("KILN_DOT2_{}_DEFINED", t.to_uppercase());
    let common = format!(
        "typedef short {pairs} __attribute__((vector_size({}), aligned(2)));\n\
         typedef signed char {bytes_of} __attribute__((vector_size({halves}), aligned(1)));\n\
         typedef short {halves_of} __attribute__((vector_size({halves}), aligned(2)));",
        2 * halves
    );
    guarded(&guard, &common, &forms, &plain)
}

/// The macros of the dot products of int8 fours in `lanes` int32 lanes (C type `t`):
/// `kiln_quad_T` repeats one four in every lane, `kiln_dot4_T` adds each lane's four products
/// of two vectors of a four per lane to the accumulator. With NEON's dot products (Armv8.2-A
/// `dotprod`) one `SDOT` per register of four lanes; with NEON alone two widening multiplies
/// (`SMULL`, `SMULL2`) and three pairwise sums; else plain C.
pub(crate) fn quad_dot_helpers(t: &str, lanes: u8) -> String {
    let (fours, quarters) = (
        format!("kiln_i8x{}_of_{t}", 4 * lanes as usize),
        lanes as usize / 4,
    );
    let plain = format!(
        "#define kiln_quad_{t}(p) ({{ __typeof__(p) kiln_p = (p); {fours} kiln_r; \
         for (int kiln_k = 0; kiln_k < {}; kiln_k++) kiln_r[kiln_k] = kiln_p[kiln_k % 4]; kiln_r; }})\n\
         #define kiln_dot4_{t}(acc, a, b) ({{ {t} kiln_r = (acc); __typeof__(a) kiln_a = (a); \
         __typeof__(b) kiln_b = (b); for (int kiln_k = 0; kiln_k < {}; kiln_k++) \
         kiln_r[kiln_k / 4] += kiln_a[kiln_k] * kiln_b[kiln_k]; kiln_r; }})",
        4 * lanes as usize,
        4 * lanes as usize,
    );
    let mut forms = Vec::new();
    if lanes.is_multiple_of(4) {
        let r = neon_view("kiln_r", &fours, "int32x4_t", quarters, "");
        let quad = format!(
            "#define kiln_quad_{t}(p) ({{ __typeof__(p) kiln_p = (p); int kiln_s; \
             __builtin_memcpy(&kiln_s, &kiln_p, 4); {r} \
             for (int kiln_k = 0; kiln_k < {quarters}; kiln_k++) kiln_r.q[kiln_k] = vdupq_n_s32(kiln_s); \
             kiln_r.v; }})"
        );
        let views = [
            neon_view("kiln_r", t, "int32x4_t", quarters, "(acc)"),
            neon_view("kiln_a", "__typeof__(a)", "int8x16_t", quarters, "(a)"),
            neon_view("kiln_b", "__typeof__(b)", "int8x16_t", quarters, "(b)"),
        ]
        .join(" ");
        let dot = |sum: &str| {
            format!(
                "{quad}\n#define kiln_dot4_{t}(acc, a, b) ({{ {views} \
                 for (int kiln_k = 0; kiln_k < {quarters}; kiln_k++) kiln_r.q[kiln_k] = {sum}; \
                 kiln_r.v; }})"
            )
        };
        let (r, a, b) = ("kiln_r.q[kiln_k]", "kiln_a.q[kiln_k]", "kiln_b.q[kiln_k]");
        let sdot = format!("vdotq_s32({r}, {a}, {b})");
        let pairwise = format!(
            "vaddq_s32({r}, vpaddq_s32(vpaddlq_s16(vmull_s8(vget_low_s8({a}), vget_low_s8({b}))), \
             vpaddlq_s16(vmull_high_s8({a}, {b}))))"
        );
        forms.push(Form::neon(&["__ARM_FEATURE_DOTPROD"], dot(&sdot)));
        forms.push(Form::neon(&[], dot(&pairwise)));
    }
    let guard = format!("KILN_DOT4_{}_DEFINED", t.to_uppercase());
    let common = format!(
        "typedef signed char {fours} __attribute__((vector_size({}), aligned(1)));",
        4 * lanes as usize
    );
    guarded(&guard, &common, &forms, &plain)
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::super::cc::{assert_on_aarch64, assert_with_and_without_avx, compile_and_run, list};
    use super::{lane_dot_helpers, quad_dot_helpers};

    /// The accumulators, a shared group of `width`, and two vectors of a group per lane, for
    /// `lanes` lanes: int8's ends among them.
    fn operands(lanes: usize, width: usize) -> (Vec<i64>, Vec<i64>, Vec<i64>, Vec<i64>) {
        let acc = (0..lanes as i64)
            .map(|l| (2 * l - lanes as i64) * 130_000_007)
            .collect();
        let n = (width * lanes) as i64;
        let w = (0..n)
            .map(|k| [-128, 127, -1, 0][k as usize % 4] + (k / 4) * 9 % 50)
            .map(|x| x.clamp(-128, 127))
            .collect();
        let v = (0..n).map(|k| 127 - k * 37 % 256).collect();
        let shared = [-128, 127, -128, -1][4 - width..].to_vec();
        (acc, shared, w, v)
    }

    /// Each lane's sum: its accumulator plus the products of `a`'s group of `w` (one for
    /// every lane, or one per lane) and its group of `b`.
    fn expected(acc: &[i64], a: &[i64], b: &[i64], w: usize) -> Vec<i64> {
        let at = |x: &[i64], l: usize, j: usize| x[if x.len() == w { j } else { w * l + j }];
        (0..acc.len())
            .map(|l| acc[l] + (0..w).map(|j| at(a, l, j) * at(b, l, j)).sum::<i64>())
            .collect()
    }

    /// What the program of [`dots`] prints.
    fn dots_expected(width: usize) -> Vec<i64> {
        let mut want = Vec::new();
        for lanes in [8, 16] {
            let (acc, p, w, v) = operands(lanes, width);
            want.extend(expected(&acc, &p, &w, width));
            want.extend(expected(&acc, &v, &w, width));
        }
        want
    }

    /// A program of the helpers for groups of `width` (2: [`lane_dot_helpers`], 4:
    /// [`quad_dot_helpers`]) printing the sums (8 lanes, then 16) of a shared group and a
    /// group per lane, then of two groups per lane.
    fn dots(width: usize) -> String {
        let g = format!("signed_char{width}");
        let mut src = String::from("#include <stdio.h>\n");
        src += &format!(
            "typedef signed char {g} __attribute__((vector_size({width}), aligned(1)));\n"
        );
        let mut main = String::from("int main(void) {\n");
        for lanes in [8usize, 16] {
            let (t, bytes) = (
                format!("int{lanes}"),
                format!("signed_char{}", width * lanes),
            );
            let (helpers, shared, each) = match width {
                2 => (lane_dot_helpers(&t, lanes as u8), "kiln_pair", "kiln_widen"),
                _ => (quad_dot_helpers(&t, lanes as u8), "kiln_quad", ""),
            };
            let each = |x: &str| match each {
                "" => x.to_string(),
                f => format!("{f}_{t}({x})"),
            };
            src += &format!(
                "typedef int {t} __attribute__((vector_size({}), aligned(4)));\n\
                 typedef signed char {bytes} __attribute__((vector_size({}), aligned(1)));\n{helpers}\n",
                4 * lanes,
                width * lanes,
            );
            let (acc, p, w, v) = operands(lanes, width);
            let dot = format!("kiln_dot{width}_{t}");
            main += &format!(
                "  {{ {t} acc = {{{}}}; {g} p = {{{}}}; {bytes} w = {{{}}}, v = {{{}}};\n    \
                 {t} r = {dot}(acc, {shared}_{t}(p), {});\n    \
                 {t} s = {dot}(acc, {}, {});\n    \
                 for (int k = 0; k < {lanes}; k++) printf(\"%d\\n\", r[k]);\n    \
                 for (int k = 0; k < {lanes}; k++) printf(\"%d\\n\", s[k]); }}\n",
                list(&acc),
                list(&p),
                list(&w),
                list(&v),
                each("w"),
                each("v"),
                each("w"),
            );
        }
        src + &main + "  return 0;\n}\n"
    }

    #[test]
    fn dot_products_of_pairs_in_lanes_equal_the_plain_sums_with_and_without_avx() {
        let avx512 = std::arch::is_x86_feature_detected!("avx512bw");
        assert_with_and_without_avx(
            |flags, run| compile_and_run(&dots(2), flags, run),
            &dots_expected(2),
            (&["-mavx2", "-mavx512f", "-mavx512bw"], avx512),
        );
    }

    #[test]
    fn dot_products_of_fours_in_lanes_equal_the_plain_sums_in_c_and_on_neon() {
        let (src, want) = (dots(4), dots_expected(4));
        assert_eq!(compile_and_run(&src, &[], true), want, "plain C");
        assert_on_aarch64(&src, &want);
    }
}
