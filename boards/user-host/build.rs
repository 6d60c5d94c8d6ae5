//! Compiles the two models this program runs, for the machine it is built for.

fn main() -> Result<(), kiln_codegen::BuildError> {
    kiln_codegen::Builder::new("../../codegen/models/kws_float.onnx")
        .name("kws")
        .build()?;
    kiln_codegen::Builder::new("../../tests/models/residual.onnx").build()?;
    Ok(())
}
