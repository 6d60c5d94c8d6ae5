fn main() -> std::process::ExitCode {
    kiln_codegen::cli::main()
}
