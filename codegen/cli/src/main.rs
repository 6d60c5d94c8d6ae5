fn main() -> std::process::ExitCode {
    kiln_cli::main()
}
