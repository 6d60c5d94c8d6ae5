//! The `kiln` command line, on top of the compiler (`kiln-codegen`) and the runners
//! (`kiln-runners`): compile, run, explain, replay, the benchmark and the conformance harness.

mod bench;
pub mod conformance;
mod demo;
mod explain;
mod model;
mod replay;
mod run;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "kiln",
    version,
    about = "Ahead-of-time compiler for neural networks on microcontrollers and edge GPUs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compile and run the bundled keyword-spotting model and check it against onnxruntime.
    Demo(demo::Args),
    /// Compile a model into a bundle: kernels, weights, schedule and a report.
    Compile(run::CompileArgs),
    /// Compile and run a model on a board, on inputs from a folder; optionally compare.
    Run(run::RunArgs),
    /// Show one kernel at every stage: AST, optimized axes, UOps and rendered source.
    Explain(explain::Args),
    /// Benchmarks Kiln on the MLPerf Tiny float models against onnxruntime, tinygrad and TFLM.
    Bench(bench::Args),
    /// Runs the ONNX backend node tests through the whole pipeline and tabulates the results.
    Conformance(conformance::command::Args),
    /// Process replay: records every kernel of a corpus of models, or diffs a build against a
    /// record.
    Replay(replay::Args),
    /// Runs one conformance case (used by `conformance`, one child process a case).
    #[command(hide = true)]
    ConformanceCase(conformance::command::CaseArgs),
}

/// Runs the CLI; errors are printed with their causes and give exit code 2.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(a) => demo::run(a),
        Command::Compile(a) => run::compile_cmd(a),
        Command::Run(a) => run::run_cmd(a),
        Command::Explain(a) => explain::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Conformance(a) => conformance::command::run(a),
        Command::Replay(a) => replay::run(a),
        Command::ConformanceCase(a) => conformance::command::run_case(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
