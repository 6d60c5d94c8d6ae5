//! The function body: one statement (or inlined expression) per UOp, in program order.

use super::{Binding, Fused, Renderer};
use crate::render::{fill, Entry, RenderError};
use crate::uop::{UOp, UOpKind};

impl Renderer<'_> {
    pub(super) fn body(&mut self) -> Result<(), RenderError> {
        self.simd_types()?;
        for (i, u) in self.prog.uops.iter().enumerate() {
            self.render_uop(i, u)?;
        }
        Ok(())
    }

    /// UOp `i`: its declaration, statement or expression.
    fn render_uop(&mut self, i: usize, u: &UOp) -> Result<(), RenderError> {
        match self.fused[i] {
            Some(Fused::Saturate { x, bits }) => {
                let e = self.ssat(x, bits);
                return self.value(i, "alu", e);
            }
            Some(Fused::HighWord { a, b }) => {
                let e = self.smmulr(a, b, u.dtype.map_or(1, |d| d.count));
                return self.value(i, "cast", e);
            }
            None => {}
        }
        let d = self.dialect.clone();
        match &u.kind {
            UOpKind::DefineGlobal { buf, mutable } => self.define_global(i, u, buf.0, *mutable)?,
            UOpKind::DefineVar { name, .. } => self.define_var(i, name)?,
            UOpKind::DefineLocal { name, size } => self.define_local(i, u, name, *size)?,
            UOpKind::Special {
                local, axis, name, ..
            } => self.thread_id(i, *local, *axis, name)?,
            UOpKind::Const(v) => {
                self.exprs[i] = self.constant(*v, u.dtype.expect("typed"))?;
            }
            UOpKind::DefineAcc { .. } => self.define_acc(i, u)?,
            UOpKind::Range { .. } => self.open_range(i, u),
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
            UOpKind::Store => self.store(u)?,
            UOpKind::Alu(op) => {
                let e = self.alu(*op, u)?;
                let e = self.wrapped(i, *op, u, e)?;
                self.value(i, "alu", e)?;
            }
            UOpKind::Dot => self.dot(i, u)?,
            UOpKind::Cast => self.cast(i, u)?,
            UOpKind::Bitcast => self.bitcast(i, u)?,
            UOpKind::Gep(l) => {
                let e = fill(d.gep, &[("$x", self.src(u, 0)), ("$n", &l.to_string())]);
                self.value(i, "gep", e)?;
            }
            UOpKind::Sink => {}
        }
        Ok(())
    }

    /// Buffer `buf`: a parameter `data{buf}` of the function, or a binding.
    fn define_global(
        &mut self,
        i: usize,
        u: &UOp,
        buf: u32,
        mutable: bool,
    ) -> Result<(), RenderError> {
        let d = self.dialect.clone();
        let t = self.storage(u.dtype.expect("typed"))?;
        self.exprs[i] = format!("data{buf}");
        if d.entry == Entry::Bindings {
            self.bindings.push(Binding {
                id: buf,
                storage: t,
                mutable,
            });
            return Ok(());
        }
        let c = if mutable { "" } else { "const " };
        let restrict = match self.aliased.contains(&buf) {
            true => String::new(),
            false => format!("{} ", d.restrict),
        };
        let p = format!("{}{c}{t}* {restrict}data{buf}", d.buffer_prefix);
        self.params.push((buf, p));
        Ok(())
    }

    /// A variable: an `int` parameter (not on targets with bindings only).
    fn define_var(&mut self, i: usize, name: &str) -> Result<(), RenderError> {
        if self.dialect.entry == Entry::Bindings {
            return Err(self.unsupported(format!("the variable {name}")));
        }
        self.exprs[i] = name.to_string();
        self.params.push((u32::MAX, format!("const int {name}")));
        Ok(())
    }

    /// A local-memory array: declared in the function, or at module scope with bindings.
    fn define_local(
        &mut self,
        i: usize,
        u: &UOp,
        name: &str,
        size: usize,
    ) -> Result<(), RenderError> {
        let d = self.dialect.clone();
        let t = self.ty(u.dtype.expect("typed"))?;
        self.exprs[i] = name.to_string();
        let decl = format!("{}{t} {name}[{size}];", d.smem_prefix);
        match d.entry {
            Entry::Params => self.line(decl),
            Entry::Bindings => self.module.push(decl),
        }
        Ok(())
    }

    /// A thread index: the dialect's global or local id along `axis`, named `name`.
    fn thread_id(
        &mut self,
        i: usize,
        local: bool,
        axis: u8,
        name: &str,
    ) -> Result<(), RenderError> {
        if !self.target.has_local {
            return Err(self.unsupported(format!("thread index {name}")));
        }
        let d = self.dialect.clone();
        let f = if local { d.lid } else { d.gid };
        let (a, c) = (axis.to_string(), ["x", "y", "z"][axis as usize % 3]);
        let id = fill(f, &[("$a", &a), ("$c", c)]);
        self.exprs[i] = name.to_string();
        self.line(format!("int {name} = {id}; /* {name} */"));
        Ok(())
    }

    /// A cast, or a vector packed from its sources.
    fn cast(&mut self, i: usize, u: &UOp) -> Result<(), RenderError> {
        let d = self.dialect.clone();
        let t = self.ty(u.dtype.expect("typed"))?;
        let e = if u.src.len() > 1 {
            let parts: Vec<&str> = (0..u.src.len()).map(|k| self.src(u, k)).collect();
            fill(d.pack, &[("$t", &t), ("$x", &parts.join(", "))])
        } else if self.dtype_of(u, 0).is_vector() {
            let (from, x) = (self.dtype_of(u, 0), self.src(u, 0).to_string());
            self.int_vector_conversion(from, u.dtype.expect("typed"), &t, &x)
                .unwrap_or_else(|| fill(d.convert, &[("$t", &t), ("$x", &x)]))
        } else {
            fill(d.cast, &[("$t", &t), ("$x", self.src(u, 0))])
        };
        self.value(i, "cast", e)
    }

    /// A bitcast, where the dialect has one for the two types.
    fn bitcast(&mut self, i: usize, u: &UOp) -> Result<(), RenderError> {
        let to = u.dtype.expect("typed");
        let t = self.ty(to)?;
        let e = (self.dialect.bitcast)(to, self.dtype_of(u, 0), &t, self.src(u, 0))
            .ok_or_else(|| self.unsupported(format!("a bitcast to {to}")))?;
        self.value(i, "cast", e)
    }

    /// An accumulator, initialized to its source.
    fn define_acc(&mut self, i: usize, u: &UOp) -> Result<(), RenderError> {
        let name = self.fresh("acc");
        let t = self.ty(u.dtype.expect("typed"))?;
        self.line(format!("{t} {name} = {};", self.src(u, 0)));
        self.exprs[i] = name;
        Ok(())
    }

    /// A loop over its sources' range; the body is indented until its end.
    fn open_range(&mut self, i: usize, u: &UOp) {
        let name = self.fresh("ridx");
        let (a, b) = (self.src(u, 0).to_string(), self.src(u, 1).to_string());
        self.line(format!("for (int {name} = {a}; {name} < {b}; {name}++) {{"));
        self.exprs[i] = name;
        self.depth += 1;
    }
}
