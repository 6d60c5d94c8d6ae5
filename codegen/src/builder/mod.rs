//! Kiln as a build-time dependency: a model compiled from a user's `build.rs`, the way
//! `prost-build` or `bindgen` work.
//!
//! In `build.rs`:
//!
//! ```no_run
//! fn main() -> Result<(), kiln_codegen::BuildError> {
//!     kiln_codegen::Builder::new("models/kws.onnx")
//!         .name("kws")
//!         .shape("input_1", [1, 49, 10, 1])
//!         .build()?;
//!     Ok(())
//! }
//! ```
//!
//! A `.tflite` file is built the same way (the file's content decides its format).
//!
//! [`Builder::build`] compiles the model for the crate's target (its CPU from cargo's `TARGET`,
//! or the one [`Builder::cpu`] names), writes the bundle to `$OUT_DIR/kiln/<name>/`, compiles
//! the kernels with the `cc` crate into a static library whose only symbols are prefixed with
//! the model's name, prints `cargo:rerun-if-changed` for the model, and writes a Rust module,
//! `$OUT_DIR/kiln/<name>.rs`. The crate includes it with
//! `kiln_firmware::include_model!(kws);` and gets a typed, allocation-free API over the
//! `kiln-firmware` runtime:
//!
//! ```ignore
//! kiln_firmware::include_model!(kws);
//!
//! let mut arena = kws::Arena::zeroed(); // or a `static` in a RAM region of your choice
//! let mut model = kws::Model::new(&mut arena)?;
//! let scores: &[f32; 12] = model.run(&features)?.identity;
//! ```
//!
//! The module holds `ARENA_BYTES`, `WEIGHTS_BYTES`, `KERNEL_NAMES`, one `*_SHAPE` per input and
//! output, the `Arena` type, `Model` (`new`, `run`, `run_with` for a per-kernel hook) and
//! `Outputs`. Nothing in it is global but the model's own read-only data, so two models live
//! in one firmware side by side. Firmware for a microcontroller enables the `c-math` feature of
//! `kiln-firmware`, which provides the math functions the kernels call.

use std::fmt;
use std::path::{Path, PathBuf};

mod module;

use crate::bundle::PackError;
use crate::compile::{compile_file, CompileError, Compiled, FileError, FileOptions};
use crate::dtype::{DType, Scalar};
use crate::model::{ImportOptions, ModelError};
use crate::optimize::Optimize;
use crate::target::Target;
use module::IoTensor;

/// The CPU a model's kernels are compiled for (the one table of [`kiln_devices`]): it picks
/// the kernels' target and the C compiler's flags.
pub use kiln_devices::Cpu;

/// Why a model could not be built into a crate. Its `Debug` form is its message with its
/// causes, so that a build script's `main() -> Result<(), BuildError>` prints a clear error,
/// not a structure.
#[derive(thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    #[error("{model}: cannot read it")]
    Load {
        model: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The model (ONNX or TFLite, as its content says) could not be imported.
    #[error("{model}")]
    Import {
        model: PathBuf,
        #[source]
        source: Box<ModelError>,
    },
    #[error("{model}")]
    Compile {
        model: PathBuf,
        #[source]
        source: Box<CompileError>,
    },
    #[error("{model}")]
    Bundle {
        model: PathBuf,
        #[source]
        source: PackError,
    },
    #[error("shape for input {input:?}: {reason}")]
    Shape { input: String, reason: String },
    #[error(
        "model name {name:?} is not a Rust identifier: name it with `Builder::name` \
         (letters, digits and `_`, not starting with a digit)"
    )]
    Name { name: String },
    #[error("{model}: {tensor} is {dtype}, which the generated Rust API has no element type for")]
    Dtype {
        model: PathBuf,
        tensor: String,
        dtype: String,
    },
    #[error("no CPU is known for target {triple}: name one with `Builder::cpu`")]
    UnknownTarget { triple: String },
    #[error("{var} names CPU {name:?}, which is not one of {}", known.join(", "))]
    UnknownCpu {
        var: &'static str,
        name: String,
        known: Vec<&'static str>,
    },
    #[error(
        "{var} is not set: call `build` from a build script, or set it with `Builder::{setter}`"
    )]
    NotInBuildScript {
        var: &'static str,
        setter: &'static str,
    },
    #[error("writing {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("compiling the kernels of {model} with the C compiler")]
    CCompiler {
        model: PathBuf,
        #[source]
        source: cc::Error,
    },
}

impl fmt::Debug for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::error::chain(self))
    }
}

/// Compiles one model from a build script; see the [module documentation](self).
#[derive(Clone, Debug)]
pub struct Builder {
    model: PathBuf,
    name: Option<String>,
    cpu: Option<Cpu>,
    import: ImportOptions,
    out_dir: Option<PathBuf>,
    optimize: bool,
}

/// What [`Builder::build`] made.
#[derive(Clone, Debug)]
pub struct Built {
    /// The model's name: the generated module's and the symbols' prefix.
    pub name: String,
    /// The generated Rust module.
    pub module: PathBuf,
    /// The bundle's folder: kernels, weights, schedule and `report.txt`.
    pub bundle_dir: PathBuf,
    /// The CPU the kernels were compiled for.
    pub cpu: Cpu,
    pub arena_bytes: usize,
    pub weight_bytes: usize,
    /// The kernels' C source, as compiled.
    pub kernels_c: String,
}

impl Builder {
    /// A builder for the model at `model`, ONNX or TFLite as its content says (relative paths
    /// are taken from the current folder, which in a build script is the crate's root).
    pub fn new(model: impl AsRef<Path>) -> Self {
        Builder {
            model: model.as_ref().to_path_buf(),
            name: None,
            cpu: None,
            import: ImportOptions::default(),
            out_dir: None,
            optimize: true,
        }
    }

    /// The generated module's name (default: the model file's name, made an identifier).
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }

    /// The CPU to compile for (default: from cargo's `TARGET`).
    pub fn cpu(mut self, cpu: Cpu) -> Self {
        self.cpu = Some(cpu);
        self
    }

    /// How a quantized ONNX model requantizes (`kiln compile --requant`; default: as
    /// onnxruntime does). A TFLite model always follows TFLM.
    pub fn requant(mut self, requant: crate::onnx::Requant) -> Self {
        self.import.requant = requant;
        self
    }

    /// Keeps a TFLite model's float16 weights as float16 in flash (`kiln compile --keep-f16`).
    pub fn keep_f16(mut self, keep: bool) -> Self {
        self.import.keep_f16 = keep;
        self
    }

    /// Pins the shape of input `input` (needed where the model leaves dims free; a free batch
    /// dim is 1 without it).
    pub fn shape<const R: usize>(mut self, input: &str, dims: [usize; R]) -> Self {
        self.import.shapes.push((input.to_string(), dims.to_vec()));
        self
    }

    /// Fixes input `input` at compile time (`kiln compile --const`): `value` is numbers in the
    /// input's type (`"16000"`, `"1,0,0"`) or a `.npy` / `.pb` file. The generated `run` has
    /// no parameter for it.
    pub fn constant(mut self, input: &str, value: &str) -> Self {
        self.import.bindings.consts.push(crate::model::ConstInput {
            name: input.to_string(),
            value: crate::model::ConstSource::from_text(value),
        });
        self
    }

    /// Keeps a state in the arena (`kiln compile --state OUT=IN`): output `output` becomes
    /// input `input` of the next run, zeros before the first and after `Model::reset`. The
    /// generated `run` has neither.
    pub fn state(mut self, output: &str, input: &str) -> Self {
        self.import.bindings.states.push(crate::model::StateLink {
            output: output.to_string(),
            input: input.to_string(),
        });
        self
    }

    /// Where to write (default: cargo's `OUT_DIR`).
    pub fn out_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Whether to apply the kernel optimizations (default: yes).
    pub fn optimize(mut self, optimize: bool) -> Self {
        self.optimize = optimize;
        self
    }

    /// Compiles the model, writes the bundle and the Rust module, and compiles the kernels
    /// for the crate being built. Call it from a build script.
    pub fn build(self) -> Result<Built, BuildError> {
        println!("cargo:rerun-if-changed={}", self.model.display());
        let cpu = match self.cpu {
            Some(cpu) => cpu,
            None => build_cpu()?,
        };
        let built = self.generate(cpu)?;
        let library = format!("kiln_{}", built.name);
        let c_file = built.bundle_dir.join(crate::bundle::KERNELS_FILE);
        cc::Build::new()
            .file(&c_file)
            .opt_level(2)
            .flag("-fno-math-errno")
            .flags(cpu.cflags())
            .warnings(false)
            .try_compile(&library)
            .map_err(|source| BuildError::CCompiler {
                model: self.model.clone(),
                source,
            })?;
        Ok(built)
    }

    /// Compiles the model and writes the bundle and the Rust module, without compiling the C:
    /// what [`build`](Self::build) does before the C compiler runs.
    pub fn generate(&self, cpu: Cpu) -> Result<Built, BuildError> {
        let name = match &self.name {
            Some(n) => n.clone(),
            None => identifier(
                &self
                    .model
                    .file_stem()
                    .map(|s| s.to_string_lossy().to_string())
                    .unwrap_or_default(),
            ),
        };
        if !is_identifier(&name) {
            return Err(BuildError::Name { name });
        }
        let out_dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => PathBuf::from(build_var("OUT_DIR", "out_dir")?),
        };
        let compiled = self.compile(&name, cpu)?;
        let kiln_dir = out_dir.join("kiln");
        let bundle_dir = kiln_dir.join(&name);
        let bundle_err = |source| BuildError::Bundle {
            model: self.model.clone(),
            source,
        };
        let mut bundle = compiled.bundle.clone();
        bundle.kernels_c = bundle.kernels_c_with_prefix(&format!("kiln_{name}"));
        bundle.write(&bundle_dir).map_err(bundle_err)?;
        let module = kiln_dir.join(format!("{name}.rs"));
        let source = self.module_source(&name, &bundle_dir, &compiled)?;
        write_atomically(&module, &source)?;
        Ok(Built {
            name,
            module,
            bundle_dir,
            cpu,
            arena_bytes: bundle.report.arena_bytes,
            weight_bytes: bundle.weights.len(),
            kernels_c: bundle.kernels_c,
        })
    }

    fn compile(&self, name: &str, cpu: Cpu) -> Result<Compiled, BuildError> {
        let options = FileOptions {
            name: Some(name.to_string()),
            import: self.import.clone(),
            how: match self.optimize {
                true => Optimize::Heuristics,
                false => Optimize::Off,
            },
        };
        let target = Target::for_cpu(cpu);
        match compile_file(&self.model, options, &target, &mut |_, _| {}) {
            Ok((compiled, _)) => Ok(compiled),
            Err(FileError::Import { path, source }) => Err(match *source {
                ModelError::Read { source, .. } => BuildError::Load {
                    model: path,
                    source,
                },
                other => BuildError::Import {
                    model: path,
                    source: Box::new(other),
                },
            }),
            Err(FileError::Compile { path, source }) => Err(BuildError::Compile {
                model: path,
                source,
            }),
        }
    }

    /// The Rust module over the bundle in `dir`.
    fn module_source(&self, name: &str, dir: &Path, c: &Compiled) -> Result<String, BuildError> {
        let inputs = self.tensors(&c.inputs, "input")?;
        let outputs = self.tensors(&c.outputs, "output")?;
        Ok(module::source(
            &self.model,
            name,
            dir,
            &c.bundle,
            &inputs,
            &outputs,
        ))
    }

    /// The model's inputs or outputs as the module names and types them.
    fn tensors(
        &self,
        io: &[(String, DType, Vec<usize>)],
        role: &'static str,
    ) -> Result<Vec<IoTensor>, BuildError> {
        let mut out: Vec<IoTensor> = Vec::with_capacity(io.len());
        for (name, dtype, shape) in io {
            let rust_type = rust_type(dtype.scalar).ok_or_else(|| BuildError::Dtype {
                model: self.model.clone(),
                tensor: format!("{role} {name:?}"),
                dtype: format!("{:?}", dtype.scalar),
            })?;
            let mut ident = identifier(name);
            while out.iter().any(|t| t.ident == ident) || ident == "hook" {
                ident.push('_');
            }
            out.push(IoTensor {
                role,
                onnx_name: name.clone(),
                ident,
                rust_type,
                elements: shape.iter().product(),
                shape: shape.clone(),
            });
        }
        Ok(out)
    }
}

/// The Rust element type of a scalar type: its short name, but for `f16`, which has none.
fn rust_type(s: Scalar) -> Option<&'static str> {
    (s != Scalar::F16).then(|| s.name())
}

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "self", "static", "struct", "super", "trait", "true", "try", "type",
    "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield",
];

/// `name` as a snake-case Rust identifier: other characters become `_`, a leading digit or a
/// keyword gets a `_` more.
fn identifier(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| match c {
            'A'..='Z' => c.to_ascii_lowercase(),
            'a'..='z' | '0'..='9' | '_' => c,
            _ => '_',
        })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    if KEYWORDS.contains(&s.as_str()) || s == "_" {
        s.push('_');
    }
    s
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name != "_"
        && !KEYWORDS.contains(&name)
}

/// The CPU of the crate being built: the one `KILN_CPU` names (a board's `.cargo/config.toml`
/// sets it), else the one cargo's `TARGET` implies.
fn build_cpu() -> Result<Cpu, BuildError> {
    println!("cargo:rerun-if-env-changed={}", kiln_devices::CPU_VAR);
    if let Ok(name) = std::env::var(kiln_devices::CPU_VAR) {
        return Cpu::by_name(&name).ok_or_else(|| BuildError::UnknownCpu {
            var: kiln_devices::CPU_VAR,
            name,
            known: Cpu::names(),
        });
    }
    let target = build_var("TARGET", "cpu")?;
    let host = build_var("HOST", "cpu")?;
    Cpu::from_triple(&target, &host).ok_or(BuildError::UnknownTarget { triple: target })
}

fn build_var(var: &'static str, setter: &'static str) -> Result<String, BuildError> {
    std::env::var(var).map_err(|_| BuildError::NotInBuildScript { var, setter })
}

/// Writes `text` to a sibling temporary file, then renames it over `path`.
fn write_atomically(path: &Path, text: &str) -> Result<(), BuildError> {
    let io = |source| BuildError::Io {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension(format!("rs.kiln-tmp-{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

#[cfg(test)]
mod tests;
