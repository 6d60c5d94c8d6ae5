//! Renderers: a linear UOp program → source code for a target.
//!
//! One C-style renderer does the work ([`cstyle`]); each language is data: a [`Dialect`]
//! (keywords, type names, templates for casts, vector access and thread ids), chosen by the
//! target's [`Language`]. The target's capabilities ([`crate::target::Target`]) are read by
//! the optimizer and the linearizer too. The OpenCL C ([`opencl`]) and GLSL compute ([`glsl`])
//! dialects live in their own modules.

pub mod cstyle;
pub mod glsl;
pub mod opencl;
mod program;
mod source;

pub use program::{
    candidate_key, candidate_programs, flops_mem, to_program, to_program_aliasing, Program,
    ProgramBuffer, ProgramError,
};
pub use source::{KernelSource, Linkage};

use crate::dtype::{DType, Scalar};
use crate::target::Language;

/// How buffers reach a kernel and where its entry point stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// Buffers are pointer parameters of a named function (C, OpenCL C).
    Params,
    /// Buffers are storage blocks bound by position; local arrays live at module scope; the
    /// entry point is `void main()` and the work-group size a layout qualifier (GLSL compute).
    Bindings,
}

/// How a vector of 2 or 4 elements is read from or written to a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VectorAccess {
    /// Through a cast pointer: `*((float4*)(buf+idx))`.
    Pointer,
    /// Through the `vloadN`/`vstoreN` builtins, valid in every address space.
    Builtin,
    /// Lane by lane: `vec4(buf[idx], buf[idx+1], …)`.
    Lanes,
}

/// A math function of the dialect: the name to call, and a declaration or definition it needs.
pub type MathFn = (String, Option<String>);

/// How a C-like language spells the parts of a kernel. Templates name their holes `$t` (a
/// type), `$x` (a value or comma-separated values), `$n` (a lane or width), `$a` (an axis
/// number), `$c` (an axis letter), `$s` (the float-literal suffix).
#[derive(Clone, Debug)]
pub struct Dialect {
    /// Text before every kernel (`void`, `__kernel void`).
    pub kernel_prefix: &'static str,
    /// Qualifier of global buffer parameters (`__global ` in OpenCL).
    pub buffer_prefix: &'static str,
    /// Declares an array in local memory (`__local `).
    pub smem_prefix: &'static str,
    /// The barrier statement.
    pub barrier: &'static str,
    /// `restrict` spelling for pointer parameters.
    pub restrict: &'static str,
    pub entry: Entry,
    /// Template of a global thread id (`get_group_id($a)`).
    pub gid: &'static str,
    /// Template of a local thread id (`get_local_id($a)`).
    pub lid: &'static str,
    /// Names a scalar or vector type.
    pub type_name: fn(DType) -> String,
    /// Names the element type of a buffer, `None` when the dialect cannot store that type.
    pub storage_type: fn(DType) -> Option<String>,
    /// Template of a numeric conversion.
    pub cast: &'static str,
    /// Template of a numeric conversion of a vector, lane by lane.
    pub convert: &'static str,
    /// Template packing scalars into a vector.
    pub pack: &'static str,
    /// Template of one lane of a vector.
    pub gep: &'static str,
    pub vector_access: VectorAccess,
    /// Reinterprets the bits of `x` (of type `from`) as `to` (named `t`).
    pub bitcast: fn(to: DType, from: DType, t: &str, x: &str) -> Option<String>,
    /// The function computing `base` (`exp2`, `log2`, `sin`, `sqrt`, `fmod`) on `d`.
    pub math: fn(base: &str, d: DType) -> Option<MathFn>,
    /// Templates of +infinity and NaN.
    pub inf: &'static str,
    pub nan: &'static str,
    /// Suffix of 64-bit float literals.
    pub f64_suffix: &'static str,
    /// Suffixes of signed and unsigned 64-bit integer literals.
    pub i64_suffixes: [&'static str; 2],
    /// Literals of 8- and 16-bit integers are cast to their type (a language without implicit
    /// conversions between integer widths: GLSL).
    pub typed_small_literals: bool,
    /// Arithmetic on 8- and 16-bit integers happens in `int` (C's integer promotions): such a
    /// result is cast back to its type, so that it wraps as the graph defines wherever it goes.
    pub promotes_small_ints: bool,
    /// Spellings of false and true.
    pub bools: [&'static str; 2],
    /// `&`, `|`, `^` on booleans are spelled `&&`, `||`, `^^`.
    pub logical_bools: bool,
    /// `%` on signed integers truncates like C; otherwise a helper computes C's remainder.
    pub c_remainder: bool,
    /// Qualifiers of helper functions (`static inline `).
    pub helper_prefix: &'static str,
    /// Lines before everything else, given the scalar types of the kernel's values and of its
    /// buffers.
    pub preamble: fn(values: &[Scalar], buffers: &[Scalar]) -> Vec<String>,
}

impl Dialect {
    /// The dialect a target's language is rendered in.
    pub fn of(language: Language) -> Self {
        match language {
            Language::C => Dialect::c(),
            Language::OpenCl => Dialect::opencl(),
            Language::Glsl => Dialect::glsl(),
        }
    }

    pub fn c() -> Self {
        Dialect {
            kernel_prefix: "void",
            buffer_prefix: "",
            smem_prefix: "static ",
            barrier: "/* barrier */",
            restrict: "restrict",
            entry: Entry::Params,
            gid: "($a)",
            lid: "($a)",
            type_name: c_type_name,
            storage_type: |d| Some(c_type_name(d)),
            cast: "(($t)($x))",
            // A cast between GCC's vector types reinterprets their bits.
            convert: "__builtin_convertvector($x, $t)",
            pack: "(($t){$x})",
            gep: "($x)[$n]",
            vector_access: VectorAccess::Pointer,
            // A union compound literal: C allows reading another member than the one written.
            bitcast: |_, from, t, x| {
                let f = c_type_name(from);
                Some(format!("((union {{ {f} f; {t} t; }}){{.f = {x}}}).t"))
            },
            math: c_math,
            inf: "__builtin_inf$s()",
            nan: "__builtin_nan$s(\"\")",
            f64_suffix: "",
            i64_suffixes: ["LL", "ULL"],
            typed_small_literals: false,
            promotes_small_ints: true,
            bools: ["0", "1"],
            logical_bools: false,
            c_remainder: true,
            helper_prefix: "static inline ",
            preamble: |_, _| Vec::new(),
        }
    }
}

/// Fills a template's holes: each `(hole, value)` in turn.
pub fn fill(template: &str, holes: &[(&str, &str)]) -> String {
    holes
        .iter()
        .fold(template.to_string(), |s, (h, v)| s.replace(h, v))
}

/// libm: `expf` for floats (declared), `exp` for doubles.
fn c_math(base: &str, d: DType) -> Option<MathFn> {
    let (name, t) = match d.scalar {
        Scalar::F64 => (base.to_string(), "double"),
        Scalar::F32 | Scalar::F16 => (format!("{base}f"), "float"),
        _ => return None,
    };
    let args = if base == "fmod" {
        format!("{t}, {t}")
    } else {
        t.to_string()
    };
    let decl = format!("{t} {name}({args});");
    Some((name, Some(decl)))
}

/// C99 type names (vectors through the GCC/Clang `vector_size` extension).
pub fn c_type_name(d: DType) -> String {
    use Scalar::*;
    let base = match d.scalar {
        Bool => "_Bool",
        I8 => "signed char",
        U8 => "unsigned char",
        I16 => "short",
        U16 => "unsigned short",
        I32 => "int",
        U32 => "unsigned int",
        I64 => "long long",
        U64 => "unsigned long long",
        F16 => "_Float16",
        F32 => "float",
        F64 => "double",
    };
    if d.count == 1 {
        base.to_string()
    } else if d.scalar == Bool {
        // A vector comparison's lane masks (see the renderer's SIMD types).
        format!("kiln_mask{}", d.count)
    } else {
        // `float8`, `unsigned_char4`: one word, for a typedef.
        format!("{}{}", base.replace(' ', "_"), d.count)
    }
}

/// A program could not be rendered for the target.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum RenderError {
    #[error("kernel {kernel}: target `{target}` cannot render {what}")]
    Unsupported {
        kernel: String,
        target: &'static str,
        what: String,
    },
}
