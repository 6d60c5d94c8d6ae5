//! The C-style renderer shared by every C-like target.
//!
//! Values used once in the same block are inlined into their user; everything else gets a
//! named local. Loads are always named, so that gated loads are evaluated where they stand.

mod alu;
mod body;
#[cfg(all(test, target_arch = "x86_64"))]
mod cc;
mod convert;
mod dot;
mod entry;
mod simd;

use super::{fill, Dialect, Entry, KernelSource, RenderError, VectorAccess};
use crate::dtype::{DType, Scalar};
use crate::target::Target;
use crate::uop::{Linear, UOp, UOpId, UOpKind};
use std::collections::BTreeSet;

/// Renders `prog` as one function (`name` labels it in errors; whoever writes the source names
/// it). The source starts with the helper definitions it needs (guarded, so several kernels can
/// share one file). The buffers in `aliased` may overlap another buffer of the kernel (it runs
/// in place): their pointers are not `restrict`.
pub fn render(
    name: &str,
    prog: &Linear,
    target: &Target,
    aliased: &[u32],
) -> Result<KernelSource, RenderError> {
    let mut r = Renderer::new(name, prog, target, aliased);
    r.check_precision()?;
    r.body()?;
    Ok(r.finish())
}

/// A buffer of a kernel bound by position (GLSL): id, element type, written or not.
struct Binding {
    id: u32,
    storage: String,
    mutable: bool,
}

/// UOps written as one expression of the ones they are computed from (see
/// [`Renderer::fuse_patterns`]).
#[derive(Clone, Copy)]
enum Fused {
    /// A clamp to a `bits`-bit signed range: `KILN_SSAT(x, bits)`.
    Saturate { x: UOpId, bits: u32 },
    /// The rounded high word of `a · b`: `kiln_smmulr(a, b)`.
    HighWord { a: UOpId, b: UOpId },
}

struct Renderer<'a> {
    name: &'a str,
    prog: &'a Linear,
    target: &'a Target,
    /// How the target's language spells things.
    dialect: Dialect,
    exprs: Vec<String>,
    uses: Vec<usize>,
    first_user: Vec<Option<usize>>,
    stacks: Vec<Vec<usize>>,
    lines: Vec<String>,
    params: Vec<(u32, String)>,
    bindings: Vec<Binding>,
    /// Declarations at module scope (local arrays in GLSL).
    module: Vec<String>,
    helpers: BTreeSet<String>,
    /// Per UOp, the pattern it is written as, if any.
    fused: Vec<Option<Fused>>,
    counters: std::collections::HashMap<&'static str, usize>,
    depth: usize,
    /// Buffers that may overlap another one: no `restrict`.
    aliased: &'a [u32],
}

impl<'a> Renderer<'a> {
    fn new(name: &'a str, prog: &'a Linear, target: &'a Target, aliased: &'a [u32]) -> Self {
        let mut uses = vec![0; prog.uops.len()];
        let mut first_user = vec![None; prog.uops.len()];
        for (j, u) in prog.uops.iter().enumerate() {
            for s in &u.src {
                uses[s.index()] += 1;
                first_user[s.index()].get_or_insert(j);
            }
        }
        let mut r = Renderer {
            name,
            prog,
            target,
            dialect: Dialect::of(target.language),
            exprs: vec![String::new(); prog.uops.len()],
            uses,
            first_user,
            stacks: prog.block_stacks(),
            lines: Vec::new(),
            params: Vec::new(),
            bindings: Vec::new(),
            module: Vec::new(),
            helpers: BTreeSet::new(),
            fused: vec![None; prog.uops.len()],
            counters: Default::default(),
            depth: 1,
            aliased,
        };
        r.fuse_patterns();
        r
    }

    /// Finds the UOps written as one expression ([`Fused`]): a saturating clamp is written from
    /// the value it clamps, a rounded high word from its two factors. What they replace is used
    /// no more (and not written), those values once more.
    fn fuse_patterns(&mut self) {
        let prog = self.prog;
        for (i, u) in prog.uops.iter().enumerate() {
            let (fused, inner, operands) = if let Some((x, bits)) = self.saturation(u) {
                (
                    Fused::Saturate { x, bits },
                    vec![u.src[0], u.src[2]],
                    vec![x],
                )
            } else if let Some((a, b)) = self.high_word(u) {
                // A vector constant is written in place, as int32 lanes.
                let values = [a, b].into_iter().filter(|&x| self.wide_splat(x).is_none());
                (Fused::HighWord { a, b }, vec![u.src[0]], values.collect())
            } else {
                continue;
            };
            self.fused[i] = Some(fused);
            for x in operands {
                self.uses[x.index()] += 1;
            }
            for id in inner {
                self.release(id);
            }
        }
    }

    /// One use fewer of `id`; when it has none left, one fewer of each of its sources.
    fn release(&mut self, id: UOpId) {
        let i = id.index();
        self.uses[i] -= 1;
        if self.uses[i] == 0 {
            for &s in &self.prog.uops[i].src {
                self.release(s);
            }
        }
    }

    /// The C dialect (a kernel is a `void` function of its buffers).
    fn is_c(&self) -> bool {
        self.dialect.entry == Entry::Params && self.dialect.kernel_prefix == "void"
    }

    fn unsupported(&self, what: String) -> RenderError {
        RenderError::Unsupported {
            kernel: self.name.to_string(),
            target: self.target.name,
            what,
        }
    }

    /// Refuses 16- and 64-bit floats on targets without them, before rendering anything.
    fn check_precision(&self) -> Result<(), RenderError> {
        let t = self.target;
        for d in self.prog.uops.iter().filter_map(|u| u.dtype) {
            let missing = match d.scalar {
                Scalar::F16 if !t.supports_half => "16-bit floats",
                Scalar::F64 if !t.supports_double => "64-bit floats",
                _ => continue,
            };
            return Err(self.unsupported(format!("{d}: the device has no {missing}")));
        }
        Ok(())
    }

    /// The element type of a buffer of `d`, or an error when the dialect cannot store it.
    fn storage(&self, d: DType) -> Result<String, RenderError> {
        (self.dialect.storage_type)(d).ok_or_else(|| self.unsupported(format!("a buffer of {d}")))
    }

    /// `access` (an element of a buffer of `d`) as a value of type `d`.
    fn stored_value(&self, d: DType, access: String) -> Result<String, RenderError> {
        let t = self.ty(d)?;
        if d.count > 1 || self.storage(d)? == t {
            return Ok(access);
        }
        Ok(fill(self.dialect.cast, &[("$t", &t), ("$x", &access)]))
    }

    fn ty(&self, d: DType) -> Result<String, RenderError> {
        if d.count > 1 && !self.target.supports_float4 && self.target.simd_lanes == 0 {
            return Err(self.unsupported(format!("vector type {d}")));
        }
        Ok((self.dialect.type_name)(d))
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

    /// On a SIMD target, a GCC/Clang vector type for each vector the kernel computes with.
    /// Its alignment is the lane's, so it reads and writes any element of a buffer.
    fn simd_types(&mut self) -> Result<(), RenderError> {
        if self.target.simd_lanes == 0 {
            return Ok(());
        }
        let vectors: BTreeSet<DType> = self
            .prog
            .uops
            .iter()
            .filter_map(|u| u.dtype)
            .filter(|d| d.count > 1)
            .collect();
        for v in vectors {
            let t = self.ty(v)?;
            // A comparison's lanes are masks of 32 bits, all ones or all zeros, as C compares
            // vectors of 32-bit lanes.
            let (lane, lane_size) = match v.scalar {
                Scalar::Bool => ("int".to_string(), 4),
                _ => (self.ty(v.scalar())?, v.scalar().size()),
            };
            let guard = format!("KILN_{}_DEFINED", t.to_uppercase());
            self.helpers.insert(format!(
                "#ifndef {guard}\n#define {guard}\ntypedef {lane} {t} __attribute__((vector_size({}), aligned({lane_size})));\n#endif",
                lane_size * v.count as usize,
            ));
        }
        Ok(())
    }

    fn value(&mut self, i: usize, prefix: &'static str, e: String) -> Result<(), RenderError> {
        // Unused (the parts of a fused pattern, [`Renderer::fuse_patterns`]): not written.
        if self.inline(i) || self.uses[i] == 0 {
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
        let dt = u.dtype.expect("typed");
        // A dot product's operand; on a target without them, a vector of int8 lanes.
        if self.target.packed_dot && (dt == dot::PACKED || dt == dot::WIDE || dt == dot::HELIUM) {
            return self.packed_load(i, u);
        }
        let t = self.ty(dt)?;
        let (buf, idx) = (self.src(u, 0), self.src(u, 1));
        let n = dt.count.to_string();
        let access = match self.dialect.vector_access {
            _ if dt.count == 1 => format!("{buf}[{idx}]"),
            VectorAccess::Pointer => format!("*(({t}*)({buf}+{idx}))"),
            VectorAccess::Builtin => format!("vload{n}(0, {buf}+{idx})"),
            VectorAccess::Lanes => {
                let lanes: Vec<String> = (0..dt.count).map(|k| lane(buf, idx, k)).collect();
                fill(self.dialect.pack, &[("$t", &t), ("$x", &lanes.join(", "))])
            }
        };
        let access = self.stored_value(dt, access)?;
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

    fn store(&mut self, u: &UOp) -> Result<(), RenderError> {
        let (buf, idx, v) = (self.src(u, 0), self.src(u, 1), self.src(u, 2));
        let vt = self.dtype_of(u, 2);
        let d = self.dialect.clone();
        let assign = match d.vector_access {
            _ if vt.count == 1 => {
                let st = self.storage(vt)?;
                let v = if st == self.ty(vt)? {
                    v.to_string()
                } else {
                    fill(d.cast, &[("$t", &st), ("$x", v)])
                };
                format!("{buf}[{idx}] = {v};")
            }
            VectorAccess::Pointer => {
                format!("*(({}*)({buf}+{idx})) = {v};", (d.type_name)(vt))
            }
            VectorAccess::Builtin => format!("vstore{}({v}, 0, {buf}+{idx});", vt.count),
            VectorAccess::Lanes => {
                // A vector packed from scalars stores those scalars.
                let packed = &self.prog.uops[u.src[2].index()];
                let parts = matches!(packed.kind, UOpKind::Cast) && packed.src.len() > 1;
                let lanes: Vec<String> = (0..vt.count)
                    .map(|k| {
                        let x = if parts {
                            self.exprs[packed.src[k as usize].index()].clone()
                        } else {
                            fill(d.gep, &[("$x", v), ("$n", &k.to_string())])
                        };
                        format!("{} = {x};", lane(buf, idx, k))
                    })
                    .collect();
                lanes.join(" ")
            }
        };
        let s = if u.src.len() == 4 {
            format!("if ({}) {{ {assign} }}", self.src(u, 3))
        } else {
            assign
        };
        self.line(s);
        Ok(())
    }
}

/// Element `k` after `idx` of `buf`, spelled for lane-by-lane vector access.
fn lane(buf: &str, idx: &str, k: u8) -> String {
    if k == 0 {
        format!("{buf}[{idx}]")
    } else {
        format!("{buf}[({idx})+{k}]")
    }
}
