//! Compiles the three models this program runs, for the machine it is built for.

fn main() -> Result<(), kiln_codegen::BuildError> {
    kiln_codegen::Builder::new("../../codegen/models/kws_float.onnx")
        .name("kws")
        .build()?;
    kiln_codegen::Builder::new("../../tests/models/residual.onnx").build()?;
    // A streaming GRU: its hidden state `h` stays in the arena, fed by output `hn`.
    kiln_codegen::Builder::new("../../tests/models/onnx-streaming/gru_stream.onnx")
        .name("gru")
        .state("hn", "h")
        .build()?;
    Ok(())
}
