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
    /// int8 values.
    pub(super) fn dot(&mut self, i: usize, u: &UOp) -> Result<(), RenderError> {
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
