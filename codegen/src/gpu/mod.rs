//! Edge GPUs: a model compiled for OpenCL or Vulkan and the files a user ships (the runtimes
//! that execute its schedule on a device are the runners').
//!
//! A GPU bundle is an ordinary [`Bundle`] (schedule, weights, report) plus one [`GpuKernel`]
//! per entry of its kernel table: the source and the launch sizes each kernel needs. On disk
//! they are `launch.txt` (one line per kernel, see [`launch`]) and the sources written by
//! [`write_sources`]: `kernels.cl` for OpenCL; `<kernel>.comp` and its SPIR-V `<kernel>.spv`
//! for Vulkan.

mod kernel;
pub mod launch;
pub mod spirv;

use crate::bundle::Bundle;
use crate::compile::{compile as compile_model, CompileError};
use crate::graph::{Graph, Lazy};
use crate::optimize::Optimize;
use crate::target::{DeviceLimits, Target};
use std::path::{Path, PathBuf};

/// The GPU programming interfaces Kiln renders for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    OpenCl,
    Vulkan,
}

impl Api {
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenCl => "opencl",
            Api::Vulkan => "vulkan",
        }
    }

    /// `opencl` or `vulkan`.
    pub fn from_name(name: &str) -> Option<Api> {
        [Api::OpenCl, Api::Vulkan]
            .into_iter()
            .find(|a| a.name() == name)
    }

    /// Portable limits for ahead-of-time builds, when the device is not at hand.
    pub fn default_limits(self) -> DeviceLimits {
        match self {
            Api::OpenCl => DeviceLimits::opencl_default(),
            Api::Vulkan => DeviceLimits::vulkan_default(),
        }
    }

    /// The target of this interface for a device with `limits`.
    pub fn target(self, limits: &DeviceLimits) -> Target {
        match self {
            Api::OpenCl => Target::opencl(limits),
            Api::Vulkan => Target::vulkan(limits),
        }
    }
}

/// One kernel of the table: its source and how to launch it.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuKernel {
    /// Unique in the bundle (the kernel table's name).
    pub name: String,
    /// OpenCL C (a `__kernel` function of that name) or GLSL (a whole shader).
    pub src: String,
    /// Work-groups per axis (x, y, z).
    pub groups: [usize; 3],
    /// Threads per work-group per axis.
    pub local: [usize; 3],
    /// Bytes of local memory the kernel declares.
    pub shared_bytes: usize,
    /// Buffer parameters, in argument (binding) order.
    pub buffers: usize,
    pub uses_half: bool,
    pub uses_double: bool,
}

/// A model compiled for a GPU interface.
#[derive(Clone, Debug)]
pub struct GpuBundle {
    pub api: Api,
    pub bundle: Bundle,
    /// In kernel-table order (the schedule's kernel indices).
    pub kernels: Vec<GpuKernel>,
}

/// Errors of compiling for a GPU, or of a kernel a device cannot take.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error(transparent)]
    Compile(#[from] CompileError),
    #[error("{what} did not compile:\n{log}")]
    Build { what: String, log: String },
    #[error("kernel {kernel}: {what} is {needed}, the device allows {limit}")]
    OverLimit {
        kernel: String,
        what: &'static str,
        needed: String,
        limit: String,
    },
    #[error("kernel {kernel} needs {feature}, which the device does not have")]
    MissingFeature {
        kernel: String,
        feature: &'static str,
    },
    #[error("the bundle was refused: {0}")]
    Refused(String),
    /// The bundle could not be written (other than for an I/O error, which is `Io`).
    #[error("the bundle was refused")]
    Bundle(#[source] crate::bundle::PackError),
    #[error("{path}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

pub fn compile(
    name: &str,
    graph: &Graph,
    outputs: &[Lazy],
    api: Api,
    limits: &DeviceLimits,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<GpuBundle, GpuError> {
    let target = api.target(limits);
    let (bundle, _) = compile_model(
        name,
        graph,
        outputs,
        &target,
        Optimize::Heuristics,
        progress,
    )
    .map_err(GpuError::from)?;
    from_bundle(api, bundle)
}

/// The GPU bundle of `bundle` (compiled for `api`'s target): each kernel's source and launch
/// sizes from the programs of its steps. The bundle's C kernel table is replaced by a note: a
/// GPU bundle's kernels are in the files [`write_sources`] writes.
pub fn from_bundle(api: Api, mut bundle: Bundle) -> Result<GpuBundle, GpuError> {
    let mut kernels: Vec<Option<GpuKernel>> = vec![None; bundle.kernel_names.len()];
    for (p, &k) in bundle.programs.iter().zip(&bundle.step_kernels) {
        let k = k as usize;
        if kernels[k].is_none() {
            kernels[k] = Some(GpuKernel::from_program(p, &bundle.kernel_names[k]));
        }
    }
    let kernels = kernels
        .into_iter()
        .enumerate()
        .map(|(k, g)| g.ok_or_else(|| GpuError::Refused(format!("kernel {k} is never launched"))))
        .collect::<Result<Vec<_>, _>>()?;
    bundle.kernels_c = format!(
        "/* Kiln {} bundle: the kernels are in {}, their launch sizes in {}. */\n",
        api.name(),
        match api {
            Api::OpenCl => OPENCL_FILE,
            Api::Vulkan => "<kernel>.comp and <kernel>.spv",
        },
        launch::LAUNCH_FILE
    );
    Ok(GpuBundle {
        api,
        bundle,
        kernels,
    })
}

/// The OpenCL source file of a bundle.
pub const OPENCL_FILE: &str = "kernels.cl";

/// All OpenCL kernels of a bundle in one source (helpers are guarded, so they can repeat).
pub fn opencl_source(kernels: &[GpuKernel]) -> String {
    let mut s = String::from("/* @generated by Kiln. Do not edit. */\n");
    for k in kernels {
        s.push_str(&k.src);
        s.push('\n');
    }
    s
}

/// Writes the sources of `gb` and its launch table into `dir` (which must exist): for OpenCL
/// `kernels.cl`; for Vulkan `<kernel>.comp` and `<kernel>.spv` (compiled by `glslc`). Returns
/// the files written.
pub fn write_sources(dir: &Path, gb: &GpuBundle) -> Result<Vec<PathBuf>, GpuError> {
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).map_err(|source| GpuError::Io {
            path: p.display().to_string(),
            source,
        })?;
        Ok::<PathBuf, GpuError>(p)
    };
    let mut files = vec![write(
        launch::LAUNCH_FILE,
        launch::render(gb.api, &gb.kernels).as_bytes(),
    )?];
    match gb.api {
        Api::OpenCl => files.push(write(OPENCL_FILE, opencl_source(&gb.kernels).as_bytes())?),
        Api::Vulkan => {
            let shaders: Vec<(&str, &str)> = gb
                .kernels
                .iter()
                .map(|k| (k.name.as_str(), k.src.as_str()))
                .collect();
            for (k, spv) in gb.kernels.iter().zip(spirv::compile_all(&shaders)?) {
                files.push(write(&format!("{}.comp", k.name), k.src.as_bytes())?);
                files.push(write(&format!("{}.spv", k.name), &spirv::to_bytes(&spv))?);
            }
        }
    }
    Ok(files)
}

impl GpuBundle {
    /// Writes the whole bundle into `dir` (replacing it): the bundle's files, then the GPU
    /// sources and launch table.
    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>, GpuError> {
        self.bundle.write(dir).map_err(|e| match e {
            crate::bundle::PackError::Io { path, source } => GpuError::Io { path, source },
            other => GpuError::Bundle(other),
        })?;
        write_sources(dir, self)
    }

    /// Checks every kernel against a device's limits and features before anything runs.
    pub fn check(&self, limits: &DeviceLimits) -> Result<(), GpuError> {
        self.kernels.iter().try_for_each(|k| k.check(limits))
    }
}
