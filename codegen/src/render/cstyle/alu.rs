//! Constants, ALU ops and the helper functions they need.

use super::simd::{guarded, neon_view, Form};
use super::Renderer;
use crate::dtype::{DType, Scalar};
use crate::ops::{AluOp, BinaryOp, ConstValue, TernaryOp, UnaryOp};
use crate::render::{fill, RenderError};
use crate::uop::{UOp, UOpKind};

impl Renderer<'_> {
    pub(super) fn constant(&self, v: ConstValue, d: DType) -> Result<String, RenderError> {
        let s = match d.scalar {
            Scalar::F32 | Scalar::F16 | Scalar::F64 => {
                let x = v.as_f64();
                let suffix = if d.scalar == Scalar::F64 { "" } else { "f" };
                let dl = &self.dialect;
                if x.is_nan() {
                    fill(dl.nan, &[("$s", suffix)])
                } else if x.is_infinite() {
                    let sign = if x < 0.0 { "-" } else { "" };
                    format!("({sign}{})", fill(dl.inf, &[("$s", suffix)]))
                } else if d.scalar == Scalar::F64 {
                    format!("{x:?}{}", dl.f64_suffix)
                } else {
                    format!("{:?}f", x as f32)
                }
            }
            Scalar::Bool => self.dialect.bools[!v.is_zero() as usize].to_string(),
            Scalar::I64 if v.as_i64() == i64::MIN => {
                format!("(-9223372036854775807{}-1)", self.dialect.i64_suffixes[0])
            }
            Scalar::I64 => format!("{}{}", v.as_i64(), self.dialect.i64_suffixes[0]),
            Scalar::U64 => format!("{}{}", v.as_i64() as u64, self.dialect.i64_suffixes[1]),
            Scalar::U32 => format!("{}u", v.as_i64()),
            Scalar::I32 if v.as_i64() == i32::MIN as i64 => "(-2147483647-1)".to_string(),
            Scalar::I8 | Scalar::U8 | Scalar::I16 | Scalar::U16
                if self.dialect.typed_small_literals =>
            {
                let t = self.ty(d.scalar())?;
                let x = v.as_i64().to_string();
                fill(self.dialect.cast, &[("$t", &t), ("$x", &x)])
            }
            _ => format!("{}", v.as_i64()),
        };
        let s = if s.starts_with('-') {
            format!("({s})")
        } else {
            s
        };
        if d.count > 1 {
            let t = self.ty(d)?;
            let lanes = vec![s; d.count as usize].join(", ");
            return Ok(fill(self.dialect.pack, &[("$t", &t), ("$x", &lanes)]));
        }
        Ok(s)
    }

    pub(super) fn alu(&mut self, op: AluOp, u: &UOp) -> Result<String, RenderError> {
        let od = self.dtype_of(u, u.src.len() - 1);
        let d = self.dialect.clone();
        let logical = d.logical_bools && od.scalar == Scalar::Bool;
        let a = |k: usize| self.src(u, k).to_string();
        let e = match op {
            AluOp::Unary(o) => {
                let x = a(0);
                match o {
                    UnaryOp::Neg => format!("(-{x})"),
                    UnaryOp::Recip => format!(
                        "({}/{x})",
                        self.constant(ConstValue::from_f64(od, 1.0), od)?
                    ),
                    UnaryOp::Exp2 => format!("{}({x})", self.math("exp2", od)?),
                    UnaryOp::Log2 => format!("{}({x})", self.math("log2", od)?),
                    UnaryOp::Sin => format!("{}({x})", self.math("sin", od)?),
                    UnaryOp::Sqrt => format!("{}({x})", self.math("sqrt", od)?),
                }
            }
            AluOp::Binary(o) => {
                let (x, y) = (a(0), a(1));
                let infix = |s: &str| format!("({x}{s}{y})");
                match o {
                    BinaryOp::Add => infix("+"),
                    BinaryOp::Sub => infix("-"),
                    BinaryOp::Mul => infix("*"),
                    BinaryOp::Div => infix("/"),
                    BinaryOp::Mod if od.is_float() => {
                        format!("{}({x}, {y})", self.math("fmod", od)?)
                    }
                    BinaryOp::Mod if !d.c_remainder && !od.scalar.is_unsigned() => {
                        format!("{}({x}, {y})", self.rem_helper(od)?)
                    }
                    BinaryOp::Mod => infix("%"),
                    // Booleans have no order in a language that keeps them apart from
                    // integers: false < true, and the larger of two is either.
                    BinaryOp::CmpLt if logical => format!("(!{x}&&{y})"),
                    BinaryOp::Max if logical => infix("||"),
                    BinaryOp::CmpLt => infix("<"),
                    BinaryOp::CmpNe => infix("!="),
                    BinaryOp::Xor if logical => infix("^^"),
                    BinaryOp::And if logical => infix("&&"),
                    BinaryOp::Or if logical => infix("||"),
                    BinaryOp::Xor => infix("^"),
                    BinaryOp::And => infix("&"),
                    BinaryOp::Or => infix("|"),
                    BinaryOp::Shl => infix("<<"),
                    BinaryOp::Shr => infix(">>"),
                    BinaryOp::Max => format!("{}({x}, {y})", self.max_helper(od)?),
                }
            }
            AluOp::Ternary(TernaryOp::Where) if u.dtype.is_some_and(|d| d.count > 1) => {
                let args = format!("({}, {}, {})", a(0), a(1), a(2));
                let select = self.vector_select_helper(u.dtype.expect("typed"))?;
                format!("{select}{args}")
            }
            AluOp::Ternary(TernaryOp::Where) => format!("({}?{}:{})", a(0), a(1), a(2)),
            AluOp::Ternary(TernaryOp::MulAcc) => format!("(({}*{})+{})", a(0), a(1), a(2)),
        };
        Ok(e)
    }

    /// ALU op `i`'s expression `e`, cast back to its type where it is an 8- or 16-bit integer
    /// result that C computes in `int` (a sum, a difference, a product, a left shift, a
    /// negation) that nothing on its way converts to its type ([`Renderer::wraps_later`];
    /// modular arithmetic wraps the same at the end of a chain as at each step).
    pub(super) fn wrapped(
        &self,
        i: usize,
        op: AluOp,
        u: &UOp,
        e: String,
    ) -> Result<String, RenderError> {
        let Some(d) = u.dtype.filter(|d| d.count == 1) else {
            return Ok(e);
        };
        let small = matches!(
            d.scalar,
            Scalar::I8 | Scalar::U8 | Scalar::I16 | Scalar::U16
        );
        if !(grows(op) && small && self.dialect.promotes_small_ints) || self.wraps_later(i, d) {
            return Ok(e);
        }
        let t = self.ty(d)?;
        Ok(fill(self.dialect.cast, &[("$t", &t), ("$x", &e)]))
    }

    /// The clamp of a signed 32-bit value to the range of a `bits`-bit signed integer,
    /// `hi < m ? hi : m` with `m = max(x, lo)`, `lo = −2^(bits−1)`, `hi = 2^(bits−1) − 1` (an
    /// int8 requantization's last step): `x` and `bits`, on a C dialect.
    pub(super) fn saturation(&self, u: &UOp) -> Option<(crate::uop::UOpId, u32)> {
        let clamp = u.kind == UOpKind::Alu(AluOp::Ternary(TernaryOp::Where));
        if !clamp || !self.is_c() || u.dtype != Some(DType::I32) {
            return None;
        }
        let node = |id: crate::uop::UOpId| &self.prog.uops[id.index()];
        let int = |id| self.int_const(id);
        let (cond, hi, m) = (node(u.src[0]), u.src[1], u.src[2]);
        let less = UOpKind::Alu(AluOp::Binary(BinaryOp::CmpLt));
        if cond.kind != less || cond.src[..] != [hi, m] {
            return None;
        }
        let max = node(m);
        if max.kind != UOpKind::Alu(AluOp::Binary(BinaryOp::Max)) {
            return None;
        }
        let (hi, lo) = (int(hi)?, int(max.src[1])?);
        let bits = (hi + 1).checked_ilog2()? + 1;
        (hi + 1 == 1 << (bits - 1) && lo == -hi - 1 && bits < 32).then_some((max.src[0], bits))
    }

    /// The rounded high word of a 32×32-bit product, `(int)(((i64)a · (i64)b + 2^31) >> 32)`
    /// with `a`, `b` of type `i32` (the requantization's multiply), or the same lane by lane on
    /// vectors of `i32` on a SIMD target: `a` and `b`, on a C dialect.
    pub(super) fn high_word(&self, u: &UOp) -> Option<(crate::uop::UOpId, crate::uop::UOpId)> {
        let lanes = u.dtype.filter(|d| d.scalar == Scalar::I32)?.count;
        if !self.is_c() || (lanes > 1 && self.target.simd_lanes == 0) {
            return None;
        }
        let (narrow, wide) = (DType::I32.vec(lanes), DType::I64.vec(lanes));
        let node = |id: crate::uop::UOpId| &self.prog.uops[id.index()];
        let int = |id| self.lane_const(id);
        let binary = |id: crate::uop::UOpId, op: BinaryOp| {
            let n = node(id);
            (n.kind == UOpKind::Alu(AluOp::Binary(op))).then(|| (n.src[0], n.src[1]))
        };
        // An i32 value widened to i64, or an i64 constant within i32's range (a scalar one is
        // passed as is, a vector one as int32 lanes: [`Renderer::wide_splat`]).
        let widened = |id: crate::uop::UOpId| {
            let n = node(id);
            let from = n.src.first().and_then(|&s| node(s).dtype);
            if let (1, UOpKind::Const(ConstValue::Int(c))) = (lanes, &n.kind) {
                return i32::try_from(*c).is_ok().then_some(id);
            }
            if self.wide_splat(id).is_some() {
                return Some(id);
            }
            let one = n.src.len() == 1;
            (n.kind == UOpKind::Cast && one && n.dtype == Some(wide) && from == Some(narrow))
                .then(|| n.src[0])
        };
        if u.kind != UOpKind::Cast || u.src.len() != 1 {
            return None;
        }
        let (sum, by) = binary(u.src[0], BinaryOp::Shr)?;
        let (product, half) = binary(sum, BinaryOp::Add)?;
        let (a, b) = binary(product, BinaryOp::Mul)?;
        (int(by)? == 32 && int(half)? == 1 << 31).then_some(())?;
        Some((widened(a)?, widened(b)?))
    }

    /// The value of `id` where it is a vector of one i64 constant within i32's range (a
    /// requantization's fixed multiplier, repeated in every lane).
    pub(super) fn wide_splat(&self, id: crate::uop::UOpId) -> Option<i32> {
        let d = self.prog.uops[id.index()].dtype?;
        let c = (d.count > 1 && d.scalar == Scalar::I64)
            .then(|| self.lane_const(id))
            .flatten()?;
        i32::try_from(c).ok()
    }

    /// The value of an integer constant.
    fn int_const(&self, id: crate::uop::UOpId) -> Option<i64> {
        match self.prog.uops[id.index()].kind {
            UOpKind::Const(ConstValue::Int(c)) => Some(c),
            _ => None,
        }
    }

    /// The value of an integer constant, or of every lane of a vector of one.
    fn lane_const(&self, id: crate::uop::UOpId) -> Option<i64> {
        let u = &self.prog.uops[id.index()];
        match u.kind {
            UOpKind::Cast if u.src.len() > 1 && u.src.iter().all(|&s| s == u.src[0]) => {
                self.int_const(u.src[0])
            }
            _ => self.int_const(id),
        }
    }

    /// The rounded high word of `a · b`: one `SMMULR` where the core has it, else in 64 bits;
    /// on vectors of `lanes` int32, [`vector_high_word`]'s helper.
    pub(super) fn smmulr(
        &mut self,
        a: crate::uop::UOpId,
        b: crate::uop::UOpId,
        lanes: u8,
    ) -> String {
        if lanes > 1 {
            let t = (self.dialect.type_name)(DType::I32.vec(lanes));
            let operand = |id: crate::uop::UOpId| match self.wide_splat(id) {
                Some(c) => format!(
                    "(({t}){{{}}})",
                    vec![c.to_string(); lanes as usize].join(", ")
                ),
                None => self.exprs[id.index()].clone(),
            };
            let (x, y) = (operand(a), operand(b));
            let (name, helper) = vector_high_word(&t, lanes);
            let call = format!("{name}({x}, {y})");
            self.helpers.insert(helper);
            return call;
        }
        let (x, y) = (&self.exprs[a.index()], &self.exprs[b.index()]);
        let call = format!("kiln_smmulr({x}, {y})");
        self.helpers.insert(
            "#ifndef KILN_SMMULR_DEFINED\n#define KILN_SMMULR_DEFINED\n\
             #if defined(__ARM_FEATURE_DSP)\n\
             static inline int kiln_smmulr(int a, int b) { int r; \
             __asm__(\"smmulr %0, %1, %2\" : \"=r\"(r) : \"r\"(a), \"r\"(b)); return r; }\n\
             #else\n\
             static inline int kiln_smmulr(int a, int b) { \
             return (int)(((long long)a * b + 2147483648LL) >> 32); }\n\
             #endif\n#endif"
                .to_string(),
        );
        call
    }

    /// `x` saturated to `bits` signed bits: one `SSAT` where the core has it (the ACLE's
    /// `__ssat`), else the two comparisons.
    pub(super) fn ssat(&mut self, x: crate::uop::UOpId, bits: u32) -> String {
        self.helpers.insert(
            "#ifndef KILN_SSAT
#if defined(__ARM_FEATURE_SAT)
#include <arm_acle.h>
             #define KILN_SSAT(x, n) __ssat((x), (n))
#else
             #define KILN_SSAT(x, n) ((x) < -(1 << ((n) - 1)) ? -(1 << ((n) - 1)) :              (x) > (1 << ((n) - 1)) - 1 ? (1 << ((n) - 1)) - 1 : (x))
#endif
#endif"
                .to_string(),
        );
        format!("KILN_SSAT({}, {bits})", self.exprs[x.index()])
    }

    /// The dialect's function for `base` at the precision of `d` (`sqrtf`, `sqrt`), with the
    /// declaration or definition it needs.
    fn math(&mut self, base: &str, d: DType) -> Result<String, RenderError> {
        let (name, helper) = (self.dialect.math)(base, d)
            .ok_or_else(|| self.unsupported(format!("{base} on {d}")))?;
        self.helpers.extend(helper);
        Ok(name)
    }

    /// A guarded helper `kiln_{op}_{type}(a, b)` returning `body`.
    fn helper(&mut self, op: &str, d: DType, body: &str) -> Result<String, RenderError> {
        let t = self.ty(d)?;
        let name = format!("kiln_{op}_{}", d.scalar.name());
        let guard = format!("{}_DEFINED", name.to_uppercase());
        let prefix = self.dialect.helper_prefix;
        self.helpers.insert(format!(
            "#ifndef {guard}\n#define {guard}\n{prefix}{t} {name}({t} a, {t} b) {{ return {body}; }}\n#endif"
        ));
        Ok(name)
    }

    fn max_helper(&mut self, d: DType) -> Result<String, RenderError> {
        if d.count > 1 {
            return self.vector_max_helper(d);
        }
        self.helper("max", d, "a < b ? b : a")
    }

    /// `kiln_max_f32x8(a, b)` on a SIMD target's vectors: C has no `?:` on vectors, so the
    /// comparison's lane mask selects each lane (as the scalar helper does: `b` where `a < b`,
    /// else `a`, NaN included). A macro (a GCC/Clang statement expression, as the vector types
    /// are theirs): a function taking vectors would depend on the vector ABI of its flags.
    fn vector_max_helper(&mut self, d: DType) -> Result<String, RenderError> {
        let t = self.ty(d)?;
        if d.scalar.size() != 4 {
            return Err(self.unsupported(format!("max of {d}")));
        }
        let mask = DType {
            scalar: Scalar::I32,
            count: d.count,
        };
        let m = format!("{t}_mask");
        let name = format!("kiln_max_{}x{}", d.scalar.name(), d.count);
        let guard = format!("{}_DEFINED", name.to_uppercase());
        self.helpers.insert(format!(
            "#ifndef {guard}\n#define {guard}\n\
             typedef int {m} __attribute__((vector_size({}), aligned(4)));\n\
             #define {name}(a, b) ({{ {t} kiln_a = (a), kiln_b = (b); \
             {m} kiln_lt = ({m})(kiln_a < kiln_b); \
             ({t})((({m})kiln_b & kiln_lt) | (({m})kiln_a & ~kiln_lt)); }})\n#endif",
            mask.size()
        ));
        Ok(name)
    }

    /// `kiln_select_int8(m, a, b)` on a SIMD target's vectors of 32-bit lanes: each lane of `a`
    /// where the comparison's mask `m` is set, else of `b` (C has no `?:` on vectors). A macro,
    /// as [`Renderer::vector_max_helper`] is.
    fn vector_select_helper(&mut self, d: DType) -> Result<String, RenderError> {
        let t = self.ty(d)?;
        if d.scalar.size() != 4 {
            return Err(self.unsupported(format!("a selection of {d}")));
        }
        let m = self.ty(DType::BOOL.vec(d.count))?;
        let name = format!("kiln_select_{t}");
        let guard = format!("{}_DEFINED", name.to_uppercase());
        self.helpers.insert(format!(
            "#ifndef {guard}\n#define {guard}\n\
             #define {name}(m, a, b) ({{ {m} kiln_m = (m); {t} kiln_a = (a), kiln_b = (b); \
             ({t})((kiln_m & ({m})kiln_a) | (~kiln_m & ({m})kiln_b)); }})\n#endif"
        ));
        Ok(name)
    }

    /// C's remainder (the sign of the dividend) where `%` does not promise it.
    fn rem_helper(&mut self, d: DType) -> Result<String, RenderError> {
        self.helper("rem", d, "a - b * (a / b)")
    }
}

impl Renderer<'_> {
    /// Whether value `i` of the narrow type `d` is converted to `d` on its way anyway: kept in
    /// a variable of its type, stored, accumulated, passed to a typed helper, or used in more
    /// arithmetic of its type (which wraps in turn), directly or through a selection.
    fn wraps_later(&self, i: usize, d: DType) -> bool {
        if !self.inline(i) {
            return true;
        }
        let Some(j) = self.first_user[i] else {
            return true;
        };
        let user = &self.prog.uops[j];
        match user.kind {
            UOpKind::Store | UOpKind::Phi => true,
            UOpKind::Alu(AluOp::Binary(BinaryOp::Max)) => true,
            UOpKind::Alu(AluOp::Ternary(TernaryOp::Where)) if user.dtype == Some(d) => {
                self.wraps_later(j, d)
            }
            UOpKind::Alu(o) => grows(o) && user.dtype == Some(d),
            _ => false,
        }
    }
}

/// Whether C may compute `op`'s result of a narrow integer type beyond that type's range.
fn grows(op: AluOp) -> bool {
    matches!(
        op,
        AluOp::Unary(UnaryOp::Neg)
            | AluOp::Binary(BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Shl)
            | AluOp::Ternary(TernaryOp::MulAcc)
    )
}

/// The name and definition of the rounded high words of the products of two vectors of `lanes`
/// int32 (C type `t`), `(int)(((i64)a · (i64)b + 2^31) >> 32)` in each lane: a macro, as
/// [`Renderer::vector_max_helper`] is. With AVX2 (8 lanes) or AVX-512 (16), two signed 32×32→64
/// multiplies of the even and the odd lanes (`vpmuldq`) and a blend of their high words; with
/// NEON, per register of four lanes two widening multiplies (`SMULL`, `SMULL2`) and two
/// rounding narrowing shifts (`RSHRN`); else lane by lane.
pub(crate) fn vector_high_word(t: &str, lanes: u8) -> (String, String) {
    let name = format!("kiln_smmulr_{t}");
    let guard = format!("{}_DEFINED", name.to_uppercase());
    let each = format!(
        "#define {name}(a, b) ({{ {t} kiln_a = (a), kiln_b = (b), kiln_r = kiln_a; \
         for (int kiln_k = 0; kiln_k < {lanes}; kiln_k++) kiln_r[kiln_k] = \
         (int)(((long long)kiln_a[kiln_k] * kiln_b[kiln_k] + 2147483648LL) >> 32); kiln_r; }})"
    );
    let wide = match lanes {
        8 => Some((
            "__AVX2__",
            "_mm256",
            "__m256i",
            "_mm256_set1_epi64x",
            "_mm256_blend_epi32(kiln_e, kiln_o, 0xAA)",
        )),
        16 => Some((
            "__AVX512F__",
            "_mm512",
            "__m512i",
            "_mm512_set1_epi64",
            "_mm512_mask_blend_epi32(0xAAAA, kiln_e, kiln_o)",
        )),
        _ => None,
    };
    let mut forms: Vec<Form> = wide
        .map(|(feature, p, v, set1, blend)| {
            Form::x86(
                feature,
                format!(
                    "#define {name}(a, b) ({{ {v} kiln_a = ({v})(a), kiln_b = ({v})(b); \
                     {v} kiln_h = {set1}(2147483648LL); \
                     {v} kiln_e = {p}_srli_epi64({p}_add_epi64({p}_mul_epi32(kiln_a, kiln_b), kiln_h), 32); \
                     {v} kiln_o = {p}_add_epi64({p}_mul_epi32({p}_srli_epi64(kiln_a, 32), \
                     {p}_srli_epi64(kiln_b, 32)), kiln_h); ({t}){blend}; }})"
                ),
            )
        })
        .into_iter()
        .collect();
    if lanes.is_multiple_of(4) {
        let quarters = lanes as usize / 4;
        let (a, b) = (
            neon_view("kiln_a", t, "int32x4_t", quarters, "(a)"),
            neon_view("kiln_b", t, "int32x4_t", quarters, "(b)"),
        );
        forms.push(Form::neon(
            &[],
            format!(
                "#define {name}(a, b) ({{ {a} {b} \
                 for (int kiln_k = 0; kiln_k < {quarters}; kiln_k++) kiln_a.q[kiln_k] = vcombine_s32(\
                 vrshrn_n_s64(vmull_s32(vget_low_s32(kiln_a.q[kiln_k]), vget_low_s32(kiln_b.q[kiln_k])), 32), \
                 vrshrn_n_s64(vmull_high_s32(kiln_a.q[kiln_k], kiln_b.q[kiln_k]), 32)); kiln_a.v; }})"
            ),
        ));
    }
    (name, guarded(&guard, "", &forms, &each))
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::super::cc::{assert_on_aarch64, assert_with_and_without_avx, compile_and_run, list};
    use super::vector_high_word;

    /// The rounded high word of each product, as the scalar helper computes it.
    fn expected(a: &[i32], b: &[i32]) -> Vec<i64> {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| ((x as i64 * y as i64 + (1 << 31)) >> 32) as i32 as i64)
            .collect()
    }

    /// Compiles the vector helpers with `flags`, runs them on `a` and `b` (8 lanes, then 16)
    /// where `run`, and returns what they print.
    fn high_words(flags: &[&str], a: &[i32], b: &[i32], run: bool) -> Vec<i64> {
        compile_and_run(&high_words_src(a, b), flags, run)
    }

    /// A program printing the helpers' high words of `a` and `b` (8 lanes, then 16).
    fn high_words_src(a: &[i32], b: &[i32]) -> String {
        let mut src = String::from("#include <stdio.h>\n");
        let mut main = String::from("int main(void) {\n");
        for (lanes, at) in [(8u8, 0usize), (16, 8)] {
            let t = format!("int{lanes}");
            src.push_str(&format!(
                "typedef int {t} __attribute__((vector_size({}), aligned(4)));\n",
                4 * lanes as usize
            ));
            src.push_str(&vector_high_word(&t, lanes).1);
            src.push('\n');
            let part = |v: &[i32]| list(&v[at..at + lanes as usize]);
            main.push_str(&format!(
                "  {{ {t} a = {{{}}}, b = {{{}}}; {t} r = kiln_smmulr_{t}(a, b);\n    \
                 for (int k = 0; k < {lanes}; k++) printf(\"%d\\n\", r[k]); }}\n",
                part(a),
                part(b)
            ));
        }
        main.push_str("  return 0;\n}\n");
        src + &main
    }

    #[test]
    fn vector_high_words_equal_the_scalar_ones_with_and_without_avx_and_on_neon() {
        let a: Vec<i32> = (0..24i64)
            .map(|k| match k % 6 {
                0 => i32::MIN,
                1 => i32::MAX,
                2 => -1,
                3 => 1 << 30,
                _ => ((k * 0x3A5F_1C27 % 0x7FFF_FFFF) - (k % 2) * 0x4000_0000) as i32,
            })
            .collect();
        let b: Vec<i32> = a.iter().rev().map(|&x| x.wrapping_mul(7) ^ 0x55).collect();
        let (a, b) = (&a[..], &b[..]);
        // 8 lanes from the first 8 values, 16 from the next 16.
        let want = expected(a, b);
        let avx512 = std::arch::is_x86_feature_detected!("avx512f");
        let run = |flags: &[&str], run: bool| high_words(flags, a, b, run);
        assert_with_and_without_avx(run, &want, (&["-mavx2", "-mavx512f"], avx512));
        assert_on_aarch64(&high_words_src(a, b), &want);
    }
}
