//! Renderers: a linear UOp program → source code for a target.
//!
//! One C-style renderer does the work ([`cstyle`]); each target is mostly data: a [`Dialect`]
//! (keywords, type names, how thread ids and barriers are spelled) and its capabilities
//! ([`Target`]), which the kernel optimizer and linearizer read too.

pub mod cstyle;

use crate::dtype::DType;

/// What a target can do; read by the optimizer and the linearizer.
#[derive(Clone, Debug)]
pub struct Target {
    /// Short name used in reports and process-replay records (`c`, `opencl`, …).
    pub name: &'static str,
    /// Threads with local (work-group) ids exist; otherwise every dim is a loop.
    pub has_local: bool,
    /// Local (work-group shared) memory exists.
    pub has_shared: bool,
    /// Vector loads and stores of 2 or 4 floats are allowed.
    pub supports_float4: bool,
    /// Per-axis limits of the global size (x, y, z); `None` when unlimited.
    pub global_max: Option<Vec<usize>>,
    /// Per-axis limits of the local size (x, y, z).
    pub local_max: Option<Vec<usize>>,
    /// Bytes of local memory.
    pub shared_max: usize,
    pub dialect: Dialect,
}

impl Target {
    /// Plain C for CPUs and microcontrollers: no threads, no vectors.
    pub fn c() -> Self {
        Target {
            name: "c",
            has_local: false,
            has_shared: false,
            supports_float4: false,
            global_max: None,
            local_max: None,
            shared_max: 0,
            dialect: Dialect::c(),
        }
    }

    /// An abstract device with threads and local memory, for testing the GPU paths of the
    /// linearizer in the interpreter. Renders as C-style text that is not meant to compile.
    pub fn threaded(global_max: Vec<usize>, local_max: Vec<usize>) -> Self {
        Target {
            name: "threaded",
            has_local: true,
            has_shared: true,
            supports_float4: true,
            global_max: Some(global_max),
            local_max: Some(local_max),
            shared_max: 32768,
            dialect: Dialect::c(),
        }
    }
}

/// How a C-like language spells the parts of a kernel.
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
    /// Function for a global id on an axis (`get_group_id`), if the dialect has threads.
    pub gid: &'static str,
    /// Function for a local id on an axis (`get_local_id`).
    pub lid: &'static str,
    /// Names a scalar or vector type.
    pub type_name: fn(DType) -> String,
}

impl Dialect {
    pub fn c() -> Self {
        Dialect {
            kernel_prefix: "void",
            buffer_prefix: "",
            smem_prefix: "static ",
            barrier: "/* barrier */",
            restrict: "restrict",
            gid: "",
            lid: "",
            type_name: c_type_name,
        }
    }
}

/// C99 type names (vectors through the GCC/Clang `vector_size` extension).
pub fn c_type_name(d: DType) -> String {
    use crate::dtype::Scalar::*;
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
    } else {
        format!("{}{}", d.scalar.name(), d.count)
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
