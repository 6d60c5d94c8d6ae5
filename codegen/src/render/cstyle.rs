//! The C-style renderer shared by every C-like target.
//!
//! Values used once in the same block are inlined into their user; everything else gets a
//! named local. Loads are always named, so that gated loads are evaluated where they stand.

use super::{RenderError, Target};
use crate::dtype::{DType, Scalar};
use crate::ops::{AluOp, BinaryOp, ConstValue, TernaryOp, UnaryOp};
use crate::uop::{Linear, UOp, UOpKind};
use std::collections::BTreeSet;
use std::fmt::Write;

/// Renders `prog` as one function named `name`. Returns the source, which starts with the
/// helper definitions it needs (guarded, so several kernels can share one file).
pub fn render(name: &str, prog: &Linear, target: &Target) -> Result<String, RenderError> {
    let mut r = Renderer::new(name, prog, target);
    r.body()?;
    Ok(r.finish())
}

struct Renderer<'a> {
    name: &'a str,
    prog: &'a Linear,
    target: &'a Target,
    exprs: Vec<String>,
    uses: Vec<usize>,
    first_user: Vec<Option<usize>>,
    stacks: Vec<Vec<usize>>,
    lines: Vec<String>,
    params: Vec<(u32, String)>,
    helpers: BTreeSet<String>,
    counters: std::collections::HashMap<&'static str, usize>,
    depth: usize,
}

impl<'a> Renderer<'a> {
    fn new(name: &'a str, prog: &'a Linear, target: &'a Target) -> Self {
        let mut uses = vec![0; prog.uops.len()];
        let mut first_user = vec![None; prog.uops.len()];
        for (j, u) in prog.uops.iter().enumerate() {
            for s in &u.src {
                uses[s.index()] += 1;
                first_user[s.index()].get_or_insert(j);
            }
        }
        Renderer {
            name,
            prog,
            target,
            exprs: vec![String::new(); prog.uops.len()],
            uses,
            first_user,
            stacks: prog.block_stacks(),
            lines: Vec::new(),
            params: Vec::new(),
            helpers: BTreeSet::new(),
            counters: Default::default(),
            depth: 1,
        }
    }

    fn unsupported(&self, what: String) -> RenderError {
        RenderError::Unsupported {
            kernel: self.name.to_string(),
            target: self.target.name,
            what,
        }
    }

    fn ty(&self, d: DType) -> Result<String, RenderError> {
        if d.count > 1 && !self.target.supports_float4 {
            return Err(self.unsupported(format!("vector type {d}")));
        }
        Ok((self.target.dialect.type_name)(d))
    }

    fn fresh(&mut self, prefix: &'static str) -> String {
        let n = self.counters.entry(prefix).or_insert(0);
        *n += 1;
        format!("{prefix}{}", *n - 1)
    }

    fn line(&mut self, s: String) {
        self.lines.push(format!("{}{}", "  ".repeat(self.depth), s));
    }

    fn src(&self, u: &UOp, k: usize) -> &str {
        &self.exprs[u.src[k].index()]
    }

    fn dtype_of(&self, u: &UOp, k: usize) -> DType {
        self.prog.uops[u.src[k].index()].dtype.unwrap_or(DType::I32)
    }

    /// A value is inlined when its only user stands in the same block.
    fn inline(&self, i: usize) -> bool {
        self.uses[i] == 1 && self.first_user[i].is_some_and(|j| self.stacks[j] == self.stacks[i])
    }

    fn body(&mut self) -> Result<(), RenderError> {
        let d = &self.target.dialect;
        for (i, u) in self.prog.uops.iter().enumerate() {
            let dtype = u.dtype;
            match &u.kind {
                UOpKind::DefineGlobal { buf, mutable } => {
                    let t = self.ty(dtype.expect("typed"))?;
                    let c = if *mutable { "" } else { "const " };
                    self.exprs[i] = format!("data{}", buf.0);
                    let p = format!("{}{c}{t}* {} data{}", d.buffer_prefix, d.restrict, buf.0);
                    self.params.push((buf.0, p));
                }
                UOpKind::DefineVar { name, .. } => {
                    self.exprs[i] = name.clone();
                    self.params.push((u32::MAX, format!("const int {name}")));
                }
                UOpKind::DefineLocal { name, size } => {
                    let t = self.ty(dtype.expect("typed"))?;
                    self.exprs[i] = name.clone();
                    self.line(format!("{}{t} {name}[{size}];", d.smem_prefix));
                }
                UOpKind::Special {
                    local, axis, name, ..
                } => {
                    if !self.target.has_local {
                        return Err(self.unsupported(format!("thread index {name}")));
                    }
                    let f = if *local { d.lid } else { d.gid };
                    self.exprs[i] = name.clone();
                    self.line(format!("int {name} = {f}({axis}); /* {name} */"));
                }
                UOpKind::Const(v) => {
                    self.exprs[i] = self.constant(*v, dtype.expect("typed"))?;
                }
                UOpKind::DefineAcc { .. } => {
                    let name = self.fresh("acc");
                    let t = self.ty(dtype.expect("typed"))?;
                    self.line(format!("{t} {name} = {};", self.src(u, 0)));
                    self.exprs[i] = name;
                }
                UOpKind::Range { .. } => {
                    let name = self.fresh("ridx");
                    let (a, b) = (self.src(u, 0).to_string(), self.src(u, 1).to_string());
                    self.line(format!("for (int {name} = {a}; {name} < {b}; {name}++) {{"));
                    self.exprs[i] = name;
                    self.depth += 1;
                }
                UOpKind::If => {
                    let c = self.src(u, 0).to_string();
                    self.line(format!("if ({c}) {{"));
                    self.depth += 1;
                }
                UOpKind::EndRange | UOpKind::EndIf => {
                    self.depth -= 1;
                    self.line("}".into());
                }
                UOpKind::Barrier => {
                    let b = d.barrier.to_string();
                    self.line(b);
                }
                UOpKind::Phi => {
                    let (acc, v) = (self.src(u, 0).to_string(), self.src(u, 1).to_string());
                    self.line(format!("{acc} = {v};"));
                    self.exprs[i] = acc;
                }
                UOpKind::Load => self.load(i, u)?,
                UOpKind::Store => self.store(u),
                UOpKind::Alu(op) => {
                    let e = self.alu(*op, u)?;
                    self.value(i, "alu", e)?;
                }
                UOpKind::Cast => {
                    let t = self.ty(dtype.expect("typed"))?;
                    let e = if u.src.len() > 1 {
                        let parts: Vec<&str> = (0..u.src.len()).map(|k| self.src(u, k)).collect();
                        format!("(({t}){{{}}})", parts.join(", "))
                    } else {
                        format!("(({t})({}))", self.src(u, 0))
                    };
                    self.value(i, "cast", e)?;
                }
                UOpKind::Bitcast => {
                    let t = self.ty(dtype.expect("typed"))?;
                    let e = format!("__builtin_bit_cast({t}, {})", self.src(u, 0));
                    self.value(i, "cast", e)?;
                }
                UOpKind::Gep(l) => {
                    let e = format!("({})[{l}]", self.src(u, 0));
                    self.value(i, "gep", e)?;
                }
                UOpKind::Sink => {}
            }
        }
        Ok(())
    }

    fn value(&mut self, i: usize, prefix: &'static str, e: String) -> Result<(), RenderError> {
        if self.inline(i) {
            self.exprs[i] = e;
        } else {
            let t = self.ty(self.prog.uops[i].dtype.expect("typed"))?;
            let name = self.fresh(prefix);
            self.line(format!("{t} {name} = {e};"));
            self.exprs[i] = name;
        }
        Ok(())
    }

    fn load(&mut self, i: usize, u: &UOp) -> Result<(), RenderError> {
        let t = self.ty(u.dtype.expect("typed"))?;
        let (buf, idx) = (self.src(u, 0), self.src(u, 1));
        let access = if u.dtype.is_some_and(|d| d.count > 1) {
            format!("*(({t}*)({buf}+{idx}))")
        } else {
            format!("{buf}[{idx}]")
        };
        let gated = u.src.len() >= 4
            && !matches!(
                self.prog.uops[u.src[2].index()].kind,
                UOpKind::Barrier | UOpKind::If
            );
        let e = if gated {
            format!("({}?{access}:{})", self.src(u, 2), self.src(u, 3))
        } else {
            access
        };
        let name = self.fresh("val");
        self.line(format!("{t} {name} = {e};"));
        self.exprs[i] = name;
        Ok(())
    }

    fn store(&mut self, u: &UOp) {
        let (buf, idx, v) = (self.src(u, 0), self.src(u, 1), self.src(u, 2));
        let vt = self.dtype_of(u, 2);
        let target = if vt.count > 1 {
            format!("*(({}*)({buf}+{idx}))", (self.target.dialect.type_name)(vt))
        } else {
            format!("{buf}[{idx}]")
        };
        let s = if u.src.len() == 4 {
            format!("if ({}) {{ {target} = {v}; }}", self.src(u, 3))
        } else {
            format!("{target} = {v};")
        };
        self.line(s);
    }

    fn constant(&self, v: ConstValue, d: DType) -> Result<String, RenderError> {
        let s = match d.scalar {
            Scalar::F32 | Scalar::F16 | Scalar::F64 => {
                let x = v.as_f64();
                let suffix = if d.scalar == Scalar::F64 { "" } else { "f" };
                if x.is_nan() {
                    format!("__builtin_nan{suffix}(\"\")")
                } else if x.is_infinite() {
                    let sign = if x < 0.0 { "-" } else { "" };
                    format!("({sign}__builtin_inf{suffix}())")
                } else if d.scalar == Scalar::F64 {
                    format!("{x:?}")
                } else {
                    format!("{:?}f", x as f32)
                }
            }
            Scalar::Bool => (if v.is_zero() { "0" } else { "1" }).to_string(),
            Scalar::I64 if v.as_i64() == i64::MIN => "(-9223372036854775807LL-1)".to_string(),
            Scalar::I64 => format!("{}LL", v.as_i64()),
            Scalar::U64 => format!("{}ULL", v.as_i64() as u64),
            Scalar::U32 => format!("{}u", v.as_i64()),
            Scalar::I32 if v.as_i64() == i32::MIN as i64 => "(-2147483647-1)".to_string(),
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
            return Ok(format!("(({t}){{{lanes}}})"));
        }
        Ok(s)
    }

    fn alu(&mut self, op: AluOp, u: &UOp) -> Result<String, RenderError> {
        let od = self.dtype_of(u, u.src.len() - 1);
        let a = |k: usize| self.src(u, k).to_string();
        Ok(match op {
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
                    BinaryOp::Mod => infix("%"),
                    BinaryOp::CmpLt => infix("<"),
                    BinaryOp::CmpNe => infix("!="),
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
        })
    }

    /// The libm function for `base` at the precision of `d` (`sqrtf`, `sqrt`).
    fn math(&mut self, base: &str, d: DType) -> Result<String, RenderError> {
        let (name, t) = match d.scalar {
            Scalar::F64 => (base.to_string(), "double"),
            Scalar::F32 | Scalar::F16 => (format!("{base}f"), "float"),
            _ => return Err(self.unsupported(format!("{base} on {d}"))),
        };
        let args = if base == "fmod" {
            format!("{t}, {t}")
        } else {
            t.to_string()
        };
        self.helpers.insert(format!("{t} {name}({args});"));
        Ok(name)
    }

    fn max_helper(&mut self, d: DType) -> Result<String, RenderError> {
        let t = self.ty(d)?;
        let name = format!("kiln_max_{}", d.scalar.name());
        let guard = format!("{}_DEFINED", name.to_uppercase());
        self.helpers.insert(format!(
            "#ifndef {guard}\n#define {guard}\nstatic inline {t} {name}({t} a, {t} b) {{ return a < b ? b : a; }}\n#endif"
        ));
        Ok(name)
    }

    fn finish(mut self) -> String {
        self.params.sort_by_key(|p| p.0);
        let params: Vec<&str> = self.params.iter().map(|p| p.1.as_str()).collect();
        let mut s = String::new();
        for h in &self.helpers {
            let _ = writeln!(s, "{h}");
        }
        let _ = writeln!(
            s,
            "{} {}({}) {{",
            self.target.dialect.kernel_prefix,
            self.name,
            params.join(", ")
        );
        for l in &self.lines {
            let _ = writeln!(s, "{l}");
        }
        s.push_str("}\n");
        s
    }
}
