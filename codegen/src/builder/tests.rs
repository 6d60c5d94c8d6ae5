use super::*;

fn kws() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models/kws_float.onnx")
}

#[test]
fn identifiers_are_snake_case_and_never_keywords() {
    assert_eq!(identifier("input_1"), "input_1");
    assert_eq!(
        identifier("StatefulPartitionedCall:0"),
        "statefulpartitionedcall_0"
    );
    assert_eq!(identifier("0x"), "_0x");
    assert_eq!(identifier("type"), "type_");
    assert_eq!(identifier(""), "__");
    assert!(is_identifier("kws_float"));
    assert!(!is_identifier("kws-float"));
    assert!(!is_identifier("9lives"));
    assert!(!is_identifier("fn"));
}

#[test]
fn cpus_follow_the_target_triple() {
    let host = "x86_64-unknown-linux-gnu";
    assert_eq!(Cpu::from_triple(host, host), Some(Cpu::Host));
    assert_eq!(
        Cpu::from_triple("thumbv7em-none-eabihf", host),
        Some(Cpu::CortexM4F)
    );
    assert_eq!(
        Cpu::from_triple("thumbv6m-none-eabi", host),
        Some(Cpu::CortexM0)
    );
    assert_eq!(
        Cpu::from_triple("riscv32imac-unknown-none-elf", host),
        Some(Cpu::Rv32imac)
    );
    assert_eq!(Cpu::from_triple("avr-unknown-gnu-atmega328", host), None);
    assert!(Cpu::CortexM4F.cflags().contains(&"-mfpu=fpv4-sp-d16"));
}

#[test]
fn generates_a_typed_module_and_prefixed_kernels() {
    let out = tempfile::tempdir().unwrap();
    let built = Builder::new(kws())
        .name("kws")
        .out_dir(out.path())
        .generate(Cpu::CortexM4F)
        .unwrap();
    assert_eq!(built.module, out.path().join("kiln/kws.rs"));
    let module = std::fs::read_to_string(&built.module).unwrap();
    let arena = format!("pub const ARENA_BYTES: usize = {};", built.arena_bytes);
    assert!(module.contains(&arena), "{module}");
    assert!(
        module
            .contains("pub fn run(&mut self, input_1: &[f32; 490]) -> Result<Outputs<'_>, Error>"),
        "{module}"
    );
    assert!(module.contains("pub const INPUT_1_SHAPE: [usize; 4] = [1, 49, 10, 1];"));
    assert!(module.contains("pub dense: &'m [f32; 12]"), "{module}");
    assert!(module.contains("#[link_name = \"kiln_kws_kernels\"]"));
    // The C code exports the prefixed table and nothing else under the default names.
    let c = std::fs::read_to_string(built.bundle_dir.join("kernels.c")).unwrap();
    assert!(c.contains("const kiln_kernel_fn kiln_kws_kernels[]"));
    assert!(!c.contains(" kiln_kernels["));
    assert!(
        c == built.kernels_c,
        "the kernels compiled are the ones written"
    );
    for file in ["schedule.bin", "weights.bin", "report.txt"] {
        assert!(built.bundle_dir.join(file).is_file(), "{file}");
    }
}

/// A `.tflite` file builds like an ONNX one (the content decides the format): int8 in, int8
/// out.
#[test]
fn a_tflite_model_builds() {
    let out = tempfile::tempdir().unwrap();
    let model =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/models/tflite/tiny_cnn.tflite");
    let built = Builder::new(&model)
        .out_dir(out.path())
        .generate(Cpu::Host)
        .unwrap_or_else(|e| panic!("{e:?}"));
    let module = std::fs::read_to_string(&built.module).unwrap();
    assert!(module.contains("[i8; 144]"), "{module}");
    assert!(built.kernels_c.contains("kiln_tiny_cnn_kernels"));
}

#[test]
fn a_missing_model_is_a_clear_error() {
    let out = tempfile::tempdir().unwrap();
    let err = Builder::new("no/such/model.onnx")
        .out_dir(out.path())
        .generate(Cpu::Host)
        .unwrap_err();
    assert!(matches!(err, BuildError::Load { .. }));
    // `Debug` is what a build script's `main` prints: the message, not a structure.
    let shown = format!("{err:?}");
    assert!(
        shown.starts_with("no/such/model.onnx: cannot read"),
        "{shown}"
    );
    assert!(!shown.contains("Load {"), "{shown}");
    assert_eq!(shown.matches("cannot read").count(), 1, "{shown}");
    assert!(!out.path().join("kiln").exists(), "nothing is written");
}

#[test]
fn a_name_that_is_no_identifier_is_refused() {
    let err = Builder::new(kws())
        .name("kws-model")
        .out_dir("unused")
        .generate(Cpu::Host)
        .unwrap_err();
    assert!(matches!(err, BuildError::Name { .. }), "{err}");
}

fn invalid(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/ops/invalid")
        .join(name)
}

#[test]
fn unsupported_ops_are_named_with_their_nodes_and_the_file() {
    let out = tempfile::tempdir().unwrap();
    let err = Builder::new(invalid("unknown_ops.onnx"))
        .out_dir(out.path())
        .generate(Cpu::CortexM4F)
        .unwrap_err();
    let shown = format!("{err:?}");
    assert!(shown.contains("unknown_ops.onnx: "), "{shown}");
    assert!(shown.contains("Frobnicate ×2 (frob_a, frob_b)"), "{shown}");
    assert!(shown.contains("Twiddle ×1 (twiddle)"), "{shown}");
    assert!(!out.path().join("kiln").exists(), "nothing is written");
}

#[test]
fn shapes_pin_free_dims() {
    let out = tempfile::tempdir().unwrap();
    let free = Builder::new(invalid("free_dim.onnx")).out_dir(out.path());
    let err = free.generate(Cpu::Host).unwrap_err();
    assert!(format!("{err:?}").contains("\"x\""), "{err:?}");
    let built = free.shape("x", [1, 6]).generate(Cpu::Host).unwrap();
    let module = std::fs::read_to_string(built.module).unwrap();
    assert!(
        module.contains("pub const X_SHAPE: [usize; 2] = [1, 6];"),
        "{module}"
    );
}

/// `state` keeps the GRU's hidden state in the arena: `run` takes only `x` and returns only
/// the scores; `constant` fixes an input, which `run` then lacks.
#[test]
fn states_and_constants_leave_the_run_signature() {
    let out = tempfile::tempdir().unwrap();
    let model = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/models/onnx-streaming/gru_stream.onnx");
    let built = Builder::new(&model)
        .state("hn", "h")
        .out_dir(out.path())
        .generate(Cpu::Host)
        .unwrap_or_else(|e| panic!("{e:?}"));
    let module = std::fs::read_to_string(&built.module).unwrap();
    assert!(
        module.contains("pub const STATE_BYTES: usize = 128;"),
        "{module}"
    );
    assert!(
        module.contains("pub fn run(&mut self, x: &[f32; 16])"),
        "{module}"
    );
    assert!(module.contains("pub scores: &'m [f32; 4]"), "{module}");
    assert!(!module.contains("pub hn:"), "{module}");
    let zeros = vec!["0"; 16].join(",");
    let fixed = Builder::new(&model)
        .constant("x", &zeros)
        .out_dir(out.path());
    let module = std::fs::read_to_string(fixed.generate(Cpu::Host).unwrap().module).unwrap();
    assert!(
        module.contains("pub fn run(&mut self, h: &[f32; 32])"),
        "{module}"
    );
    let err = Builder::new(&model)
        .state("hn", "hidden")
        .out_dir(out.path());
    let shown = format!("{:?}", err.generate(Cpu::Host).unwrap_err());
    assert!(shown.contains("--state names input \"hidden\""), "{shown}");
}

/// A build script gets the kernels `kiln run` uses on a board of the same core: packed int8
/// dot products on the cores with the DSP extension, plain C on the others.
#[test]
fn the_cpu_picks_the_kernels_a_board_of_its_core_gets() {
    let model = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/models/mlperf-tiny/tflite/kws_ref_model.tflite");
    let out = tempfile::tempdir().unwrap();
    let kernels = |cpu: Cpu| {
        let built = Builder::new(&model).out_dir(out.path()).generate(cpu);
        built.unwrap_or_else(|e| panic!("{e:?}")).kernels_c
    };
    for cpu in [Cpu::CortexM4F, Cpu::CortexM7F, Cpu::CortexM33] {
        assert!(kernels(cpu).contains("kiln_dot4("), "{cpu:?}");
    }
    for cpu in [Cpu::CortexM0Plus, Cpu::CortexM3, Cpu::Rv32imc, Cpu::Host] {
        assert!(!kernels(cpu).contains("kiln_dot4("), "{cpu:?}");
    }
    assert_eq!(
        Cpu::from_triple("thumbv7em-none-eabihf", "x86_64-unknown-linux-gnu"),
        Some(Cpu::CortexM4F)
    );
}
