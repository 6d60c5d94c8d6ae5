//! Generates the ONNX protobuf types from the vendored `proto/onnx.proto` at build time.
//! `protox` (a protobuf compiler written in Rust) parses the schema, so no system `protoc` is
//! needed; `prost-build` turns it into Rust, included by `src/onnx/proto.rs`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/onnx.proto");
    let descriptors = protox::compile(["onnx.proto"], ["proto"])?;
    prost_build::Config::new().compile_fds(descriptors)?;
    Ok(())
}
