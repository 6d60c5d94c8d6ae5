//! The `kiln` command line.

mod explain;

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
    /// Show one kernel at every stage: AST, optimized axes, UOps and rendered source.
    Explain(explain::Args),
}

/// Runs the CLI; errors are printed with their causes and give exit code 2.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
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
