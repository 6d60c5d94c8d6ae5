//! A rendered kernel with its name left open: whoever gathers kernels into one file (the
//! bundle, a GPU source, a timing harness) names each one there.

/// Whether a kernel function is visible outside the file it is written into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Linkage {
    /// An exported function (a kernel rendered on its own, an OpenCL `__kernel`).
    External,
    /// A `static` function, reached through a table in the same file.
    Internal,
}

/// A kernel's source, split around its entry point's name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KernelSource {
    /// Everything before the entry point: preamble, helpers, the entry's attributes (and a GLSL
    /// shader's module scope).
    pub head: String,
    /// The entry's return type and qualifiers (`void`, `__kernel void`).
    pub prefix: &'static str,
    /// Whether the entry is a function of its own name; a GLSL shader's entry is `main`.
    pub takes_name: bool,
    /// From the parameter list to the closing brace.
    pub tail: String,
}

impl KernelSource {
    /// The whole source, its entry named `name` (unless it is a shader's `main`).
    pub fn with_name(&self, name: &str, linkage: Linkage) -> String {
        let storage = match linkage {
            Linkage::External => "",
            Linkage::Internal => "static ",
        };
        let name = if self.takes_name { name } else { "main" };
        format!("{}{storage}{} {name}{}", self.head, self.prefix, self.tail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(takes_name: bool) -> KernelSource {
        KernelSource {
            head: "#define K 1\nATTR ".into(),
            prefix: "void",
            takes_name,
            tail: "(float* data0) {\n}\n".into(),
        }
    }

    #[test]
    fn a_function_takes_its_name_and_linkage_after_its_attributes() {
        let s = source(true);
        assert_eq!(
            s.with_name("E_4", Linkage::Internal),
            "#define K 1\nATTR static void E_4(float* data0) {\n}\n"
        );
        assert_eq!(
            s.with_name("k_0", Linkage::External),
            "#define K 1\nATTR void k_0(float* data0) {\n}\n"
        );
    }

    #[test]
    fn a_shader_entry_stays_main() {
        assert!(source(false)
            .with_name("E_4", Linkage::External)
            .contains("void main(float* data0)"));
    }
}
