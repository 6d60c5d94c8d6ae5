//! The kernel's frame: preamble, helpers, the entry point and its parameters or bindings.

use super::Renderer;
use crate::dtype::Scalar;
use crate::render::Entry;
use crate::uop::UOpKind;
use std::collections::BTreeSet;
use std::fmt::Write;

/// The attribute that turns GCC's loop vectorizer off for one function (nothing elsewhere).
const NO_LOOP_VECTORIZE: &str = "#ifndef KILN_NO_LOOP_VECTORIZE\n\
    #if defined(__GNUC__) && !defined(__clang__)\n\
    #define KILN_NO_LOOP_VECTORIZE __attribute__((optimize(\"no-tree-loop-vectorize\")))\n\
    #else\n#define KILN_NO_LOOP_VECTORIZE\n#endif\n#endif";

impl Renderer<'_> {
    pub(super) fn finish(mut self) -> String {
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
        let attribute = if wide && d.entry == Entry::Params && d.kernel_prefix == "void" {
            let _ = writeln!(s, "{NO_LOOP_VECTORIZE}");
            "KILN_NO_LOOP_VECTORIZE "
        } else {
            ""
        };
        for h in &self.helpers {
            let _ = writeln!(s, "{h}");
        }
        let _ = match d.entry {
            Entry::Params => writeln!(
                s,
                "{attribute}{} {}({}) {{",
                d.kernel_prefix, self.name, params
            ),
            Entry::Bindings => writeln!(s, "{} main() {{", d.kernel_prefix),
        };
        for l in &self.lines {
            let _ = writeln!(s, "{l}");
        }
        s.push_str("}\n");
        s
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
