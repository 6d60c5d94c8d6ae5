//! Constants, ALU ops and the helper functions they need.

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
    /// with `a`, `b` of type `i32` (the requantization's multiply): `a` and `b`, on a C dialect.
    pub(super) fn high_word(&self, u: &UOp) -> Option<(crate::uop::UOpId, crate::uop::UOpId)> {
        if !self.is_c() || u.dtype != Some(DType::I32) {
            return None;
        }
        let node = |id: crate::uop::UOpId| &self.prog.uops[id.index()];
        let int = |id| self.int_const(id);
        let binary = |id: crate::uop::UOpId, op: BinaryOp| {
            let n = node(id);
            (n.kind == UOpKind::Alu(AluOp::Binary(op))).then(|| (n.src[0], n.src[1]))
        };
        // An i32 value widened to i64, or an i64 constant within i32's range (it is passed as is).
        let widened = |id: crate::uop::UOpId| {
            let n = node(id);
            let from = n.src.first().and_then(|&s| node(s).dtype);
            if let Some(c) = int(id) {
                return i32::try_from(c).is_ok().then_some(id);
            }
            (n.kind == UOpKind::Cast && n.dtype == Some(DType::I64) && from == Some(DType::I32))
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

    /// The value of an integer constant.
    fn int_const(&self, id: crate::uop::UOpId) -> Option<i64> {
        match self.prog.uops[id.index()].kind {
            UOpKind::Const(ConstValue::Int(c)) => Some(c),
            _ => None,
        }
    }

    /// The rounded high word of `a · b`: one `SMMULR` where the core has it, else in 64 bits.
    pub(super) fn smmulr(&mut self, a: crate::uop::UOpId, b: crate::uop::UOpId) -> String {
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
        format!(
            "kiln_smmulr({}, {})",
            self.exprs[a.index()],
            self.exprs[b.index()]
        )
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
