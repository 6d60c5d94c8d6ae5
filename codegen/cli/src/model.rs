//! Shared by the model commands: loading and compiling a model, reading and writing tensors.

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
pub use kiln_codegen::compile::Compiled;
use kiln_codegen::compile::{compile_file, FileOptions};
use kiln_codegen::onnx::Requant;
use kiln_codegen::optimize::{Beam, Cache, Optimize};
use kiln_codegen::target::{Memory, Target};
use kiln_codegen::tensor::Tensor;
use kiln_codegen::tensorio;
use kiln_codegen::{model, onnx};
use kiln_runners::{Measure, Runner};
use std::path::Path;

/// `--shape NAME=1x49x10x1` flags, and the model file.
#[derive(clap::Args, Clone)]
pub struct ModelArgs {
    /// The model: ONNX, or TFLite (told apart by the file's content).
    pub model: std::path::PathBuf,
    /// Pins a free input dim: `NAME=1x49x10x1` (a free batch dim defaults to 1).
    #[arg(long = "shape", value_name = "NAME=DIMS")]
    pub shapes: Vec<String>,
    /// BEAM search of width N over each kernel's opts (C targets), measured on this host, or by
    /// estimated cycles on the emulated board a command runs on; the results are cached
    /// (`$KILN_BEAM_CACHE`, else `~/.cache/kiln/beam`). 0: hand-coded opts.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub beam: usize,
    /// How a quantized ONNX model's integer kernels requantize: `onnx` (onnxruntime's float32
    /// scale, halves rounded to even: bit for bit with onnxruntime) or `tflm` (TFLM's
    /// fixed-point multipliers, integer arithmetic only). A TFLite model always follows TFLM.
    #[arg(long, value_enum, default_value_t = RequantArg::Onnx)]
    pub requant: RequantArg,
    /// Keeps a TFLite model's float16 weights (the converter's float16 quantization) as float16
    /// in flash, half the bytes, each widened to float32 where a kernel reads it (exact);
    /// without it they are widened once, at compile time.
    #[arg(long)]
    pub keep_f16: bool,
    /// Fixes an input at compile time: `NAME=VALUE` (numbers, comma-separated, in the input's
    /// type) or `NAME=path.npy`. Constant folding and `If` see its value, and the compiled
    /// model no longer has that input.
    #[arg(long = "const", value_name = "NAME=VALUE")]
    pub consts: Vec<String>,
    /// Keeps a state on the device: output OUT becomes input IN of the next run (zeros before
    /// the first run and after a reset), and neither is an input or output of the compiled
    /// model any more. Repeatable: `--state hn=h --state cn=c`.
    #[arg(long = "state", value_name = "OUT=IN")]
    pub states: Vec<String>,
    /// Stores the int8 weights of the packed dot products (convolutions, dense layers) widened
    /// to int16 in flash, in the order `SMLAD` takes them: fewer instructions per product on a
    /// core with the DSP extension, for twice those weights' flash (the target `c-dsp-wide`).
    #[arg(long)]
    pub wide_weights: bool,
    /// Stores the int8 activations that the packed dot products read as int16 in the arena,
    /// each written widened once by the kernel that computes it: fewer instructions per
    /// product on a core with the DSP extension, for twice those buffers' RAM (the target
    /// `c-dsp-i16`, or `c-dsp-wide-i16` with `--wide-weights`).
    #[arg(long)]
    pub wide_activations: bool,
    /// What the arena planner trades: `speed` keeps each kernel's output apart from its
    /// inputs; `min` lets a kernel write its output over an input that dies there, shifted so
    /// that every byte is read before it is written over, runs a padding and the depthwise
    /// convolution after it one channel at a time, each output channel over its input
    /// channel, and runs of layers a band of output rows at a time (rows kept from band to
    /// band, or a halo recomputed within 0.2x the model's operations), wherever that makes
    /// the arena smaller (the same outputs, less RAM; C targets).
    #[arg(long, value_enum, default_value_t = MemoryArg::Speed)]
    pub memory: MemoryArg,
    /// The most bytes the arena may take: a plan over it is made again with `--memory min`,
    /// and one still over it is an error that says by how much, and at which step.
    #[arg(long, value_name = "BYTES")]
    pub arena_limit: Option<usize>,
}

/// `--memory`'s values.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MemoryArg {
    #[default]
    Speed,
    Min,
}

impl From<MemoryArg> for Memory {
    fn from(m: MemoryArg) -> Memory {
        match m {
            MemoryArg::Speed => Memory::Speed,
            MemoryArg::Min => Memory::Min,
        }
    }
}

impl ModelArgs {
    /// The model file `model`, with every option at its default.
    pub fn file(model: std::path::PathBuf) -> ModelArgs {
        ModelArgs {
            model,
            shapes: Vec::new(),
            beam: 0,
            requant: RequantArg::default(),
            keep_f16: false,
            consts: Vec::new(),
            states: Vec::new(),
            wide_weights: false,
            wide_activations: false,
            memory: MemoryArg::Speed,
            arena_limit: None,
        }
    }
}

/// `--requant`'s values.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RequantArg {
    #[default]
    Onnx,
    Tflm,
}

impl From<RequantArg> for Requant {
    fn from(r: RequantArg) -> Requant {
        match r {
            RequantArg::Onnx => Requant::Onnx,
            RequantArg::Tflm => Requant::Tflm,
        }
    }
}

fn progress(len: usize, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    let style =
        ProgressStyle::with_template("{msg:>12} [{bar:30}] {pos}/{len}").expect("a valid template");
    bar.set_style(style.progress_chars("=> "));
    bar.set_message(what.to_string());
    bar
}

/// How the flags say the model is imported.
fn import_options(args: &ModelArgs) -> Result<model::ImportOptions> {
    let shapes = args
        .shapes
        .iter()
        .map(|s| onnx::parse_shape_override(s))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(model::ImportOptions {
        shapes,
        requant: args.requant.into(),
        keep_f16: args.keep_f16,
        // Set by the compiler from the target.
        channels_in_words: false,
        bindings: model::Bindings::parse(&args.consts, &args.states)?,
    })
}

/// What a BEAM search (`--beam`) measures its candidates by: where a runner runs.
pub struct BeamCost(Measure);

impl BeamCost {
    /// Wall time on this host.
    pub fn host() -> Result<BeamCost> {
        BeamCost::of(kiln_runners::by_name("host", &Default::default())?.as_ref())
    }

    /// Measured where `runner` runs (the host, an emulated board).
    pub fn of(runner: &dyn Runner) -> Result<BeamCost> {
        match runner.measure() {
            Some(m) => Ok(BeamCost(m)),
            None => bail!(
                "{}: a BEAM search cannot measure kernels there (the host and the emulated \
                 boards can)",
                runner.name()
            ),
        }
    }
}

/// Imports, schedules, linearizes, renders and bundles the model (a BEAM search measured on
/// this host).
pub fn compile(args: &ModelArgs, target: &Target) -> Result<Compiled> {
    compile_with_cost(args, target, BeamCost::host()?)
}

/// The model compiled to run on `runner`: for its target, a BEAM search (`--beam`) measured
/// there.
pub fn compile_for(args: &ModelArgs, runner: &dyn Runner) -> Result<Compiled> {
    let target = runner.target();
    match args.beam {
        0 => compile_searched(args, &target, None),
        _ => compile_with_cost(args, &target, BeamCost::of(runner)?),
    }
}

/// [`compile`], with a BEAM search (`--beam`) measured by `cost`.
pub fn compile_with_cost(args: &ModelArgs, target: &Target, cost: BeamCost) -> Result<Compiled> {
    compile_searched(args, target, Some(cost))
}

/// `target` with what `--wide-weights` and `--wide-activations` widen.
fn widened(target: &Target, args: &ModelArgs) -> Result<Target> {
    type Widen = fn(&Target) -> Option<Target>;
    let asks: [(bool, &str, &str, Widen); 2] = [
        (
            args.wide_weights,
            "--wide-weights",
            "weights",
            Target::with_wide_weights,
        ),
        (
            args.wide_activations,
            "--wide-activations",
            "activations",
            Target::with_wide_activations,
        ),
    ];
    let mut target = target.clone();
    for (_, flag, what, widen) in asks.into_iter().filter(|a| a.0) {
        target = widen(&target).with_context(|| {
            format!(
                "{flag}: the target {} has no DSP dot products to widen {what} for (c-dsp and \
                 the boards with the DSP extension have; Helium's, on the Cortex-M55, read int8 \
                 lanes as they are)",
                target.name
            )
        })?;
    }
    Ok(target)
}

/// The model compiled for `target`: with `--beam`, its kernels searched as `cost` measures
/// them (there must be one), else the target's heuristics. With `--arena-limit`, an arena
/// over the limit is planned again with `--memory min`, and one still over it is an error.
fn compile_searched(
    args: &ModelArgs,
    target: &Target,
    mut cost: Option<BeamCost>,
) -> Result<Compiled> {
    let target = widened(target, args)?;
    let memory = args.memory.into();
    let compiled = compile_once(args, &target.with_memory(memory), cost.as_mut())?;
    let Some(limit) = args.arena_limit else {
        return Ok(compiled);
    };
    let arena = compiled.bundle.report.arena_bytes;
    let compiled = match (arena > limit, memory) {
        (true, Memory::Speed) => {
            eprintln!(
                "arena {arena} B is over --arena-limit {limit} B: planning with --memory min"
            );
            compile_once(args, &target.with_memory(Memory::Min), cost.as_mut())?
        }
        _ => compiled,
    };
    within_limit(compiled, limit)
}

/// `c`, when its arena is at most `limit` bytes; else the error that says by how much the
/// smallest arena misses it and which step sets it.
fn within_limit(c: Compiled, limit: usize) -> Result<Compiled> {
    let r = &c.bundle.report;
    if r.arena_bytes <= limit {
        return Ok(c);
    }
    let step = r.arena_peak_step;
    let kernel = r.steps.get(step).map_or("?", |s| s.name.as_str());
    bail!(
        "--arena-limit {limit} B: the smallest arena found is {} B, {} B over the limit; at \
         step {step} (kernel {kernel}) {} B are alive at once even with kernels written over \
         their dying inputs, depthwise layers run a channel at a time and runs of layers a \
         band of rows at a time (rows kept from band to band, or a halo recomputed within 0.2x \
         the model's operations)",
        r.arena_bytes,
        r.arena_bytes - limit,
        r.arena_lower_bound
    )
}

/// [`compile_searched`]'s one compile, for `target` as it is.
fn compile_once(
    args: &ModelArgs,
    target: &Target,
    cost: Option<&mut BeamCost>,
) -> Result<Compiled> {
    let import = import_options(args)?;
    let bar = progress(0, "kernels");
    let mut tick = |done: usize, total: usize| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    };
    let (model, by) = match (args.beam, cost) {
        (0, _) => (None, String::new()),
        (_, Some(BeamCost(Measure { model, by }))) => (Some(model), by.clone()),
        (_, None) => bail!("--beam: nothing measures the kernels for {}", target.name),
    };
    let how = match model {
        Some(model) => Optimize::Beam(Beam {
            width: args.beam,
            cache: Cache {
                dir: Cache::default_dir(),
            },
            cost: model.as_mut(),
        }),
        None => Optimize::Heuristics,
    };
    let started = std::time::Instant::now();
    let options = FileOptions {
        import,
        how,
        ..FileOptions::default()
    };
    let (compiled, stats) = compile_file(&args.model, options, target, &mut tick)?;
    if args.beam > 0 {
        eprintln!(
            "beam search ({by}): {} kernels searched, {} from the cache, in {:.1} s",
            stats.searched,
            stats.cached,
            started.elapsed().as_secs_f64()
        );
    }
    bar.finish_and_clear();
    Ok(compiled)
}

/// The same for an edge GPU with `limits`; also returns the GPU bundle (sources and launch
/// sizes).
pub fn compile_gpu(
    args: &ModelArgs,
    api: kiln_codegen::gpu::Api,
    limits: &kiln_codegen::target::DeviceLimits,
) -> Result<(Compiled, kiln_codegen::gpu::GpuBundle)> {
    let options = FileOptions {
        import: import_options(args)?,
        ..FileOptions::default()
    };
    let bar = progress(0, "kernels");
    let mut tick = |done: usize, total: usize| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    };
    let (compiled, _) = compile_file(&args.model, options, &api.target(limits), &mut tick)?;
    bar.finish_and_clear();
    let gb = kiln_codegen::gpu::from_bundle(api, compiled.bundle.clone())
        .with_context(|| format!("compiling {} for {}", args.model.display(), api.name()))?;
    Ok((compiled, gb))
}

/// Reads `input_N.npy`/`.pb` from `dir` and checks them against the model's inputs. A folder
/// written for the model file, with the inputs bound at compile time (`--const`, `--state`),
/// is read without them, and a note says so.
pub fn read_inputs(dir: &Path, c: &Compiled) -> Result<Vec<Vec<u8>>> {
    read_inputs_noting(dir, c, true)
}

/// [`read_inputs`], the note on unused files printed only if `note`.
pub fn read_inputs_noting(dir: &Path, c: &Compiled, note: bool) -> Result<Vec<Vec<u8>>> {
    let tensors = tensorio::read_dir_tensors(dir, "input")
        .with_context(|| format!("reading inputs from {}", dir.display()))?;
    let (tensors, unused) = without_bound(tensors, c.inputs.len(), &c.bound_inputs);
    for (i, name) in unused.iter().filter(|_| note) {
        eprintln!(
            "note: {}: input_{i} ({name}) is not used: it is bound at compile time (--const or \
             --state), and the compiled model has no such input",
            dir.display()
        );
    }
    if tensors.len() != c.inputs.len() {
        bail!(
            "the model has {} inputs, {} has {}",
            c.inputs.len(),
            dir.display(),
            tensors.len()
        );
    }
    let mut out = Vec::new();
    for (i, (t, (name, dtype, shape))) in tensors.iter().zip(&c.inputs).enumerate() {
        let want = dtype.scalar;
        if t.dtype() != want || t.numel() != shape.iter().product::<usize>() {
            bail!(
                "input {i} ({name}): the model wants {want} {shape:?}, input_{i} is {} {:?}",
                t.dtype(),
                t.shape()
            );
        }
        out.push(t.bytes().to_vec());
    }
    Ok(out)
}

/// A folder's tensors (`input_N` or `output_N`, in order) for a compiled model that has
/// `count` of them: as they are, or, when the folder was written for the model file, without
/// those bound at compile time (`bound`: index among the file's, name). Returns the tensors
/// kept, and those left out with their index.
pub fn without_bound(
    tensors: Vec<Tensor>,
    count: usize,
    bound: &[(usize, String)],
) -> (Vec<Tensor>, Vec<(usize, String)>) {
    if bound.is_empty() || tensors.len() != count + bound.len() {
        return (tensors, Vec::new());
    }
    let is_bound = |i: usize| bound.iter().any(|(b, _)| *b == i);
    let kept = tensors
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !is_bound(*i));
    (kept.map(|(_, t)| t).collect(), bound.to_vec())
}

/// Writes outputs as `output_N.npy` into `dir`.
pub fn write_outputs(dir: &Path, c: &Compiled, outputs: &[Vec<u8>]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let outputs = c.model_outputs(outputs).map_err(anyhow::Error::msg)?;
    for (i, (_, dtype, shape, bytes)) in outputs.into_iter().enumerate() {
        let t = Tensor::new(dtype.scalar, shape, bytes).with_context(|| format!("output {i}"))?;
        tensorio::write_npy(&dir.join(format!("output_{i}.npy")), &t)?;
    }
    Ok(())
}
