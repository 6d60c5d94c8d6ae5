//! The kernel's frame: preamble, helpers, the entry point and its parameters or bindings.

use super::Renderer;
use crate::dtype::Scalar;
use crate::render::{Entry, KernelSource};
use crate::uop::UOpKind;
use std::collections::BTreeSet;
use std::fmt::Write;

/// The attribute that turns GCC's loop vectorizer off for one function (nothing elsewhere).
const NO_LOOP_VECTORIZE: &str = "#ifndef KILN_NO_LOOP_VECTORIZE\n\
    #if defined(__GNUC__) && !defined(__clang__)\n\
    #define KILN_NO_LOOP_VECTORIZE __attribute__((optimize(\"no-tree-loop-vectorize\")))\n\
    #else\n#define KILN_NO_LOOP_VECTORIZE\n#endif\n#endif";

/// The attribute that keeps GCC from fusing a float multiply and add into one rounding (an FMA)
/// in one function, and from inlining it into a caller that would fuse them; Clang takes the
/// standard pragma at the top of the body instead.
const EXACT_FLOAT: &str = "#ifndef KILN_EXACT_FLOAT\n\
    #if defined(__GNUC__) && !defined(__clang__)\n\
    #define KILN_EXACT_FLOAT __attribute__((optimize(\"fp-contract=off\"), noinline))\n\
    #else\n#define KILN_EXACT_FLOAT\n#endif\n#endif";

/// Clang's form of [`EXACT_FLOAT`], the first lines of the body.
const EXACT_FLOAT_PRAGMA: &str = "#if defined(__clang__)\n#pragma STDC FP_CONTRACT OFF\n#endif";

impl Renderer<'_> {
    pub(super) fn finish(mut self) -> KernelSource {
        self.params.sort_by_key(|p| p.0);
        let params: Vec<&str> = self.params.iter().map(|p| p.1.as_str()).collect();
        let params = params.join(", ");
        let d = self.dialect.clone();
        let mut s = String::new();
        let (values, buffers) = self.scalars();
        for l in (d.preamble)(&values, &buffers) {
            let _ = writeln!(s, "{l}");
        }
        if d.entry == Entry::Bindings {
            self.module_scope(&mut s);
        }
        // GCC's loop vectorizer takes minutes on the long 64-bit integer chains of fixed-point
        // requantization (and gains nothing there): such kernels opt out of it.
        let wide = values
            .iter()
            .any(|v| matches!(v, Scalar::I64 | Scalar::U64));
        let c = self.is_c();
        let mut attribute = String::new();
        if wide && c {
            let _ = writeln!(s, "{NO_LOOP_VECTORIZE}");
            attribute.push_str("KILN_NO_LOOP_VECTORIZE ");
        }
        // A kernel that turns float values into integers (a requantization with a float scale,
        // a quantization) rounds each product as it is written: a product fused with the add
        // of a rounding step would round once where the reference rounds twice.
        let exact = c && self.quantizes(&values);
        if exact {
            let _ = writeln!(s, "{EXACT_FLOAT}");
            attribute.push_str("KILN_EXACT_FLOAT ");
        }
        for h in &self.helpers {
            let _ = writeln!(s, "{h}");
        }
        let mut tail = match d.entry {
            Entry::Params => {
                s.push_str(&attribute);
                format!("({params}) {{\n")
            }
            Entry::Bindings => "() {\n".to_string(),
        };
        if exact {
            let _ = writeln!(tail, "{EXACT_FLOAT_PRAGMA}");
        }
        for l in &self.lines {
            let _ = writeln!(tail, "{l}");
        }
        tail.push_str("}\n");
        KernelSource {
            head: s,
            prefix: d.kernel_prefix,
            takes_name: d.entry == Entry::Params,
            tail,
        }
    }

    /// Whether the kernel computes with floats (`values`) and writes only integer buffers.
    fn quantizes(&self, values: &[Scalar]) -> bool {
        let mut written = self.prog.uops.iter().filter_map(|u| match u.kind {
            UOpKind::DefineGlobal { mutable: true, .. } => u.dtype.map(|d| d.scalar),
            _ => None,
        });
        values.iter().any(|v| v.is_float()) && written.all(|d| d.is_int())
    }

    /// The scalar types of the kernel's values, and of its global buffers.
    fn scalars(&self) -> (Vec<Scalar>, Vec<Scalar>) {
        let (mut values, mut buffers) = (BTreeSet::new(), BTreeSet::new());
        for u in &self.prog.uops {
            if let Some(d) = u.dtype {
                let set = match u.kind {
                    UOpKind::DefineGlobal { .. } => &mut buffers,
                    _ => &mut values,
                };
                set.insert(d.scalar);
            }
        }
        (values.into_iter().collect(), buffers.into_iter().collect())
    }

    /// GLSL's module scope: work-group size, one storage block per buffer (bound by its
    /// position in id order), local arrays.
    fn module_scope(&mut self, s: &mut String) {
        let mut local = [1usize; 3];
        for u in &self.prog.uops {
            if let UOpKind::Special {
                local: true,
                axis,
                size,
                ..
            } = &u.kind
            {
                local[*axis as usize % 3] = *size;
            }
        }
        let [x, y, z] = local;
        let _ = writeln!(
            s,
            "layout(local_size_x = {x}, local_size_y = {y}, local_size_z = {z}) in;"
        );
        self.bindings.sort_by_key(|b| b.id);
        for (n, b) in self.bindings.iter().enumerate() {
            let ro = if b.mutable { "" } else { "readonly " };
            let _ = writeln!(
                s,
                "layout(std430, set = 0, binding = {n}) restrict {ro}buffer Data{id} {{ {t} data{id}[]; }};",
                id = b.id,
                t = b.storage
            );
        }
        for m in &self.module {
            let _ = writeln!(s, "{m}");
        }
    }
}
