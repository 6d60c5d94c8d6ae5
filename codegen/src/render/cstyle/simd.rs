//! The shape every vector helper of the C renderer shares: one include guard, then the first
//! of its instruction-set forms whose condition the C compiler meets (x86's `immintrin.h`
//! under `__AVX2__` or `__AVX512*__`, AArch64's `arm_neon.h`), else its plain C form, so the
//! same kernels compile on any machine and take its vector instructions where it has them.

/// One instruction-set form of a helper: its preprocessor condition, the header it needs, and
/// its definitions.
pub(crate) struct Form {
    pub cond: String,
    pub header: &'static str,
    pub body: String,
}

impl Form {
    /// A form for x86 under `feature` (`__AVX2__`), with `immintrin.h`.
    pub fn x86(feature: &str, body: String) -> Self {
        Form {
            cond: format!("defined({feature})"),
            header: "immintrin.h",
            body,
        }
    }

    /// A form for AArch64 with NEON, and with `extra` features (`__ARM_FEATURE_DOTPROD`).
    pub fn neon(extra: &[&str], body: String) -> Self {
        let mut cond = String::from("defined(__aarch64__) && defined(__ARM_NEON)");
        for f in extra {
            cond += &format!(" && defined({f})");
        }
        Form {
            cond,
            header: "arm_neon.h",
            body,
        }
    }
}

/// The definitions under include guard `guard`: `common` (typedefs every form uses, may be
/// empty), then the first of `forms` whose condition holds, else `plain`.
pub(crate) fn guarded(guard: &str, common: &str, forms: &[Form], plain: &str) -> String {
    let mut out = format!("#ifndef {guard}\n#define {guard}\n");
    if !common.is_empty() {
        out += common;
        out.push('\n');
    }
    for (k, f) in forms.iter().enumerate() {
        let directive = if k == 0 { "#if" } else { "#elif" };
        out += &format!(
            "{directive} {}\n#include <{}>\n{}\n",
            f.cond, f.header, f.body
        );
    }
    match forms.is_empty() {
        true => out += &format!("{plain}\n#endif"),
        false => out += &format!("#else\n{plain}\n#endif\n#endif"),
    }
    out
}

/// A statement expression's view of vector `x` of C type `t` as `quarters` NEON registers of
/// type `q` (`int32x4_t`): a union named `name`, its `.q[k]` the registers, its `.v` the
/// vector (left unset where `x` is empty).
pub(crate) fn neon_view(name: &str, t: &str, q: &str, quarters: usize, x: &str) -> String {
    let union = format!("union {{ {t} v; {q} q[{quarters}]; }} {name}");
    match x.is_empty() {
        true => format!("{union};"),
        false => format!("{union} = {{ {x} }};"),
    }
}
