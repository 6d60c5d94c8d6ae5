//! Packed int8 dot products ([`crate::uop::UOpKind::Dot`]): each operand is four consecutive int8 values
//! read as one 32-bit word, and the four products are summed into the accumulator. On a core
//! with the DSP extension that is two `SXTB16` per word (bytes 0 and 2, then 1 and 3, each
//! sign-extended to a pair of halfwords) and two `SMLAD` (two 16-bit products and their sum
//! added to the accumulator in one instruction); elsewhere it is the same sum in plain C.
//! Both operands are read the same way, so the pairing never changes the sum.

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

/// The operand type of a packed dot product: four int8 lanes.
pub(super) const PACKED: DType = DType::I8.vec(4);

impl Renderer<'_> {
    /// Four int8 values of a buffer, loaded as one word for a [`crate::uop::UOpKind::Dot`].
    pub(super) fn packed_load(&mut self, i: usize, u: &UOp) -> Result<(), RenderError> {
        if !self.target.packed_dot || u.src.len() != 2 {
            return Err(self.unsupported(format!("a load of {PACKED}")));
        }
        self.helpers.insert(PACKED_DOT.to_string());
        let e = format!("kiln_ld4({}+{})", self.src(u, 0), self.src(u, 1));
        let name = self.fresh("val");
        self.line(format!("int {name} = {e};"));
        self.exprs[i] = name;
        Ok(())
    }

    /// `acc + Σ a·b` over the four lanes of two packed words.
    pub(super) fn dot(&mut self, i: usize, u: &UOp) -> Result<(), RenderError> {
        let packed = |k: usize| self.dtype_of(u, k) == PACKED;
        if !self.target.packed_dot || !packed(1) || !packed(2) || u.dtype != Some(DType::I32) {
            return Err(self.unsupported("a packed dot product".to_string()));
        }
        self.helpers.insert(PACKED_DOT.to_string());
        let e = format!(
            "kiln_dot4({}, {}, {})",
            self.src(u, 0),
            self.src(u, 1),
            self.src(u, 2)
        );
        self.value(i, "alu", e)
    }
}
