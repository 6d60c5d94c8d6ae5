//! OpenCL C 1.2: the C-style renderer with work-group builtins, `__global`/`__local` address
//! spaces, `vloadN`/`vstoreN` for vectors (valid for global and local memory alike) and the
//! overloaded math builtins.

use super::{fill, Dialect, Entry, MathFn, VectorAccess};
use crate::dtype::{DType, Scalar};

impl Dialect {
    pub fn opencl() -> Self {
        Dialect {
            kernel_prefix: "__kernel void",
            buffer_prefix: "__global ",
            smem_prefix: "__local ",
            barrier: "barrier(CLK_LOCAL_MEM_FENCE);",
            restrict: "restrict",
            entry: Entry::Params,
            gid: "get_group_id($a)",
            lid: "get_local_id($a)",
            type_name: opencl_type_name,
            storage_type: opencl_storage_type,
            cast: "(($t)($x))",
            convert: "convert_$t($x)",
            pack: "(($t)($x))",
            gep: "($x).s$n",
            vector_access: VectorAccess::Builtin,
            bitcast: |to, from, t, x| {
                (to.size() == from.size()).then(|| fill("as_$t($x)", &[("$t", t), ("$x", x)]))
            },
            math: opencl_math,
            inf: "INFINITY",
            nan: "NAN",
            f64_suffix: "",
            i64_suffixes: ["LL", "ULL"],
            typed_small_literals: false,
            promotes_small_ints: true,
            bools: ["0", "1"],
            logical_bools: false,
            c_remainder: true,
            helper_prefix: "static inline ",
            preamble: opencl_preamble,
        }
    }
}

/// OpenCL C names: `float`, `uchar`, `float4`, ….
pub fn opencl_type_name(d: DType) -> String {
    let base = match d.scalar {
        Scalar::Bool => "bool",
        Scalar::I8 => "char",
        Scalar::U8 => "uchar",
        Scalar::I16 => "short",
        Scalar::U16 => "ushort",
        Scalar::I32 => "int",
        Scalar::U32 => "uint",
        Scalar::I64 => "long",
        Scalar::U64 => "ulong",
        Scalar::F16 => "half",
        Scalar::F32 => "float",
        Scalar::F64 => "double",
    };
    if d.count == 1 {
        base.to_string()
    } else {
        format!("{base}{}", d.count)
    }
}

/// Kernel parameters cannot point to `bool`: booleans are stored as bytes.
fn opencl_storage_type(d: DType) -> Option<String> {
    Some(match d.scalar {
        Scalar::Bool => opencl_type_name(DType::U8.vec(d.count)),
        _ => opencl_type_name(d),
    })
}

fn opencl_math(base: &str, d: DType) -> Option<MathFn> {
    d.is_float().then(|| (base.to_string(), None))
}

fn opencl_preamble(scalars: &[Scalar], _buffers: &[Scalar]) -> Vec<String> {
    let mut out = Vec::new();
    if scalars.contains(&Scalar::F16) {
        out.push("#pragma OPENCL EXTENSION cl_khr_fp16 : enable".to_string());
    }
    if scalars.contains(&Scalar::F64) {
        out.push("#pragma OPENCL EXTENSION cl_khr_fp64 : enable".to_string());
    }
    out
}
