//! GLSL 4.50 compute shaders for Vulkan: the C-style renderer with one storage block per buffer
//! (bound by position), `shared` arrays at module scope, the work-group size as a layout
//! qualifier, `gl_WorkGroupID`/`gl_LocalInvocationID`, constructors for casts and vectors, and
//! vectors read and written lane by lane (storage blocks hold scalars).

use super::{Dialect, Entry, MathFn, VectorAccess};
use crate::dtype::{DType, Scalar};

impl Dialect {
    pub fn glsl() -> Self {
        Dialect {
            kernel_prefix: "void",
            buffer_prefix: "",
            smem_prefix: "shared ",
            barrier: "memoryBarrierShared(); barrier();",
            restrict: "restrict",
            entry: Entry::Bindings,
            gid: "int(gl_WorkGroupID.$c)",
            lid: "int(gl_LocalInvocationID.$c)",
            type_name: glsl_type_name,
            storage_type: glsl_storage_type,
            cast: "$t($x)",
            convert: "$t($x)",
            pack: "$t($x)",
            gep: "($x)[$n]",
            vector_access: VectorAccess::Lanes,
            bitcast: glsl_bitcast,
            math: glsl_math,
            inf: "uintBitsToFloat(0x7f800000u)",
            nan: "uintBitsToFloat(0x7fc00000u)",
            f64_suffix: "lf",
            i64_suffixes: ["l", "ul"],
            typed_small_literals: true,
            promotes_small_ints: false,
            bools: ["false", "true"],
            logical_bools: true,
            c_remainder: false,
            helper_prefix: "",
            preamble: glsl_preamble,
        }
    }
}

/// GLSL names: `float`, `uint`, `vec4`, `ivec2`, …; the explicitly sized types of the
/// `GL_EXT_shader_explicit_arithmetic_types` extension for the rest.
pub fn glsl_type_name(d: DType) -> String {
    let (base, prefix) = match d.scalar {
        Scalar::Bool => ("bool", "b"),
        Scalar::I32 => ("int", "i"),
        Scalar::U32 => ("uint", "u"),
        Scalar::F32 => ("float", ""),
        Scalar::F64 => ("double", "d"),
        Scalar::I8 => ("int8_t", "i8"),
        Scalar::U8 => ("uint8_t", "u8"),
        Scalar::I16 => ("int16_t", "i16"),
        Scalar::U16 => ("uint16_t", "u16"),
        Scalar::I64 => ("int64_t", "i64"),
        Scalar::U64 => ("uint64_t", "u64"),
        Scalar::F16 => ("float16_t", "f16"),
    };
    if d.count == 1 {
        base.to_string()
    } else {
        format!("{prefix}vec{}", d.count)
    }
}

/// Storage blocks hold 32- and 64-bit scalars (64-bit integers through the
/// `GL_EXT_shader_explicit_arithmetic_types_int64` extension, the device's `shaderInt64`),
/// 8- and 16-bit integers (8- and 16-bit storage, with their arithmetic types), and booleans
/// as bytes. 16-bit floats are not rendered.
fn glsl_storage_type(d: DType) -> Option<String> {
    match d.scalar {
        Scalar::Bool => Some("uint8_t".to_string()),
        Scalar::F16 => None,
        _ => Some(glsl_type_name(d)),
    }
}

fn glsl_bitcast(to: DType, from: DType, t: &str, x: &str) -> Option<String> {
    use Scalar::{F32, I32, U32};
    let f = match (from.scalar, to.scalar) {
        (F32, I32) => "floatBitsToInt".to_string(),
        (F32, U32) => "floatBitsToUint".to_string(),
        (I32, F32) => "intBitsToFloat".to_string(),
        (U32, F32) => "uintBitsToFloat".to_string(),
        (I32 | U32, I32 | U32) => t.to_string(),
        _ => return None,
    };
    Some(format!("{f}({x})"))
}

/// The builtins (`exp2`, `log2` and `sin` exist for 32-bit floats only), and C's `fmod`
/// (truncating) as a helper: GLSL's `mod` floors.
fn glsl_math(base: &str, d: DType) -> Option<MathFn> {
    let t = match d.scalar {
        Scalar::F32 => "float",
        Scalar::F64 if matches!(base, "sqrt" | "fmod") => "double",
        _ => return None,
    };
    if base != "fmod" {
        return Some((base.to_string(), None));
    }
    let name = format!("kiln_fmod_{}", d.scalar.name());
    let guard = format!("{}_DEFINED", name.to_uppercase());
    let def = format!(
        "#ifndef {guard}\n#define {guard}\n{t} {name}({t} a, {t} b) {{ return a - b * trunc(a / b); }}\n#endif"
    );
    Some((name, Some(def)))
}

fn glsl_preamble(values: &[Scalar], buffers: &[Scalar]) -> Vec<String> {
    let mut out = vec!["#version 450".to_string()];
    let bytes = |s: &Scalar| matches!(s, Scalar::Bool | Scalar::I8 | Scalar::U8);
    if values.iter().any(bytes) || buffers.iter().any(bytes) {
        out.push("#extension GL_EXT_shader_8bit_storage : require".to_string());
        out.push("#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require".to_string());
    }
    let shorts = |s: &Scalar| matches!(s, Scalar::I16 | Scalar::U16);
    if values.iter().any(shorts) || buffers.iter().any(shorts) {
        out.push(INT16_EXTENSION.to_string());
        out.push("#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require".to_string());
    }
    let wide = |s: &Scalar| matches!(s, Scalar::I64 | Scalar::U64);
    if values.iter().any(wide) || buffers.iter().any(wide) {
        out.push(INT64_EXTENSION.to_string());
    }
    out
}

/// The extension a kernel with 64-bit integers enables; a device runs it only with
/// `shaderInt64`.
pub const INT64_EXTENSION: &str =
    "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require";

/// The extension a kernel with 16-bit integers enables; a device runs it only with
/// `storageBuffer16BitAccess` and `shaderInt16`.
pub const INT16_EXTENSION: &str = "#extension GL_EXT_shader_16bit_storage : require";
