//! The `kiln` command line.

mod demo;
mod explain;
mod model;
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
}

/// Runs the CLI; errors are printed with their causes and give exit code 2.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(a) => demo::run(a),
        Command::Compile(a) => run::compile_cmd(a),
        Command::Run(a) => run::run_cmd(a),
        Command::Explain(a) => explain::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}
