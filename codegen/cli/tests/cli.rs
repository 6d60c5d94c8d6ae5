//! The `kiln` command line: bad input gives a clear error and exit code 2 (never a panic, never
//! a half-written bundle); a good model compiles, runs and compares.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn kiln(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(args)
        .output()
        .expect("run kiln")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn garbage_and_truncated_models_exit_2_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.onnx");
    std::fs::write(&text, "this is not a model").unwrap();
    let good = std::fs::read(root().join("tests/models/mlp.onnx")).unwrap();
    let cut = dir.path().join("cut.onnx");
    std::fs::write(&cut, &good[..good.len() / 3]).unwrap();
    let out = dir.path().join("bundle");
    for bad in [&text, &cut, &dir.path().join("missing.onnx")] {
        let o = kiln(&[
            "compile",
            bad.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).starts_with("error: "), "{}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
        assert!(!out.exists(), "nothing is written on failure");
    }
}

#[test]
fn unknown_ops_are_all_listed_at_once() {
    let model = root().join("tests/ops/invalid/unknown_ops.onnx");
    if !model.exists() {
        panic!("missing {}: run scripts/make_op_models.py", model.display());
    }
    let dir = tempfile::tempdir().unwrap();
    let o = kiln(&[
        "compile",
        model.to_str().unwrap(),
        "-o",
        dir.path().join("b").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("unsupported"), "{e}");
}

#[test]
fn a_free_dim_needs_a_shape_and_a_shape_pins_it() {
    let model = root().join("tests/models/softmax_head.onnx");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b");
    let o = kiln(&[
        "compile",
        model.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--shape",
        "tokens=2x8x12",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        report.contains("[2, 8, 12]") && report.contains("arena bytes"),
        "{report}"
    );
    let o = kiln(&[
        "compile",
        model.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--shape",
        "tokens=2x8",
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a wrong rank is refused: {}",
        stderr(&o)
    );
}

#[test]
fn run_on_the_host_writes_outputs_and_fails_on_a_mismatch() {
    let model = root().join("tests/models/mlp.onnx");
    let data = root().join("tests/data/mlp");
    let dir = tempfile::tempdir().unwrap();
    let outs = dir.path().join("out");
    let args = |expect: &Path| {
        vec![
            "run".to_string(),
            model.display().to_string(),
            "--board".into(),
            "host".into(),
            "--inputs".into(),
            data.display().to_string(),
            "--outputs".into(),
            outs.display().to_string(),
            "--expect".into(),
            expect.display().to_string(),
        ]
    };
    let a = args(&data);
    let o = kiln(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("max abs error"));
    assert!(outs.join("output_0.npy").exists());
    // Expect the inputs as outputs: a mismatch, exit code 1.
    let wrong = dir.path().join("wrong");
    std::fs::create_dir_all(&wrong).unwrap();
    let mut t = kiln_codegen::tensorio::read_tensor(&data.join("output_0.npy")).unwrap();
    t.bytes_mut()[3] ^= 0x40;
    kiln_codegen::tensorio::write_npy(&wrong.join("output_0.npy"), &t).unwrap();
    let a = args(&wrong);
    let o = kiln(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("MISMATCH"));
}

/// An int8 output compares exactly, reports its largest difference in LSBs, and `--lsb`
/// widens the comparison.
#[test]
fn integer_outputs_compare_exactly_in_lsbs() {
    let model = root().join("tests/models/mlperf-tiny/tflite/kws_ref_model.tflite");
    let data = root().join("tests/data/kws_int8");
    let dir = tempfile::tempdir().unwrap();
    let outs = dir.path().join("out");
    let off = dir.path().join("off_by_one");
    std::fs::create_dir_all(&off).unwrap();
    let mut t = kiln_codegen::tensorio::read_tensor(&data.join("output_0.npy")).unwrap();
    // -128 → -127 in the first class: one step.
    t.bytes_mut()[0] = t.bytes()[0].wrapping_add(1);
    kiln_codegen::tensorio::write_npy(&off.join("output_0.npy"), &t).unwrap();
    let run = |expect: &Path, extra: &[&str]| {
        let (m, i, o, e) = (
            model.display().to_string(),
            data.display().to_string(),
            outs.display().to_string(),
            expect.display().to_string(),
        );
        let mut a = vec![
            "run",
            &m,
            "--board",
            "host",
            "--inputs",
            &i,
            "--outputs",
            &o,
            "--expect",
            &e,
        ];
        a.extend_from_slice(extra);
        let out = kiln(&a);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, text) = run(&data, &[]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("largest difference 0 LSB (exact): ok"),
        "{text}"
    );
    let (code, text) = run(&off, &[]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("largest difference 1 LSB (exact): MISMATCH in 1 of 12"),
        "{text}"
    );
    let (code, text) = run(&off, &["--lsb", "1"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("largest difference 1 LSB (at most 1 LSB): ok"),
        "{text}"
    );
}

#[test]
fn compile_writes_replay_records() {
    let model = root().join("tests/models/residual.onnx");
    let dir = tempfile::tempdir().unwrap();
    let (out, replay) = (dir.path().join("b"), dir.path().join("replay"));
    let o = kiln(&[
        "compile",
        model.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--replay",
        replay.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in ["kernels.c", "schedule.bin", "weights.bin", "report.txt"] {
        assert!(out.join(f).exists(), "{f}");
    }
    let records: Vec<_> = std::fs::read_dir(&replay).unwrap().collect();
    assert!(!records.is_empty());
}

/// A model of one `Softmax` node named `Softmax_0` whose `axis` is 7, on a `[2, 3]` input.
fn softmax_with_axis_7() -> Vec<u8> {
    use kiln_codegen::onnx::proto::attribute_proto::AttributeType;
    use kiln_codegen::onnx::proto::tensor_shape_proto::{dimension, Dimension};
    use kiln_codegen::onnx::proto::type_proto::{self, Tensor};
    use kiln_codegen::onnx::proto::{
        AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorShapeProto,
        TypeProto, ValueInfoProto,
    };
    use prost::Message;
    let value = |name: &str| ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(Tensor {
                elem_type: Some(1),
                shape: Some(TensorShapeProto {
                    dim: [2, 3]
                        .map(|d| Dimension {
                            value: Some(dimension::Value::DimValue(d)),
                            ..Default::default()
                        })
                        .to_vec(),
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    };
    let axis = AttributeProto {
        name: Some("axis".into()),
        r#type: Some(AttributeType::Int as i32),
        i: Some(7),
        ..Default::default()
    };
    let softmax = NodeProto {
        name: Some("Softmax_0".into()),
        op_type: Some("Softmax".into()),
        input: vec!["x".into()],
        output: vec!["y".into()],
        attribute: vec![axis],
        ..Default::default()
    };
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(13),
        }],
        graph: Some(GraphProto {
            name: Some("g".into()),
            node: vec![softmax],
            input: vec![value("x")],
            output: vec![value("y")],
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

#[test]
fn a_failing_node_is_named_with_its_file_and_op_and_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("axisoob.onnx");
    std::fs::write(&model, softmax_with_axis_7()).unwrap();
    let out = dir.path().join("b");
    let o = kiln(&[
        "compile",
        model.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("axisoob.onnx"), "{e}");
    assert!(e.contains("node Softmax_0 (Softmax)"), "{e}");
    assert_eq!(e.matches("out of range for rank 2").count(), 1, "{e}");
    assert!(!out.exists(), "nothing is written on failure");
}

/// A real board is run through a debug probe: with none attached (as in CI), `kiln run` says so
/// before it builds anything, naming the board, and exits 2 with no outputs written; a probe
/// asked for by serial number (one, or one of several boards) is named as missing; and a real
/// board speaks only RTT.
#[test]
#[cfg(feature = "probe")]
fn real_boards_without_their_probe_exit_2_naming_board_and_probe() {
    let model = root().join("tests/models/mlp.onnx");
    let data = root().join("tests/data/mlp");
    let dir = tempfile::tempdir().unwrap();
    let outs = dir.path().join("out");
    let none_attached = kiln_runners::board::probe::attached().is_empty();
    for board in ["nrf52840-dk", "stm32f411-nucleo", "rp2040-pico"] {
        let run = |extra: &[&str]| {
            let mut args = vec!["run", model.to_str().unwrap(), "--board", board];
            args.extend(["--inputs", data.to_str().unwrap()]);
            args.extend(["--outputs", outs.to_str().unwrap()]);
            args.extend(extra);
            kiln(&args)
        };
        let mut cases = vec![
            (
                vec!["--probe", "KILN-NO-SUCH-SERIAL"],
                format!("no debug probe with serial KILN-NO-SUCH-SERIAL for {board}"),
            ),
            (
                vec!["--io", "files"],
                format!("{board} is a real board: it speaks RTT only, not --io files"),
            ),
            // Several boards at once: every probe is looked for before anything is built.
            (
                vec!["--probe", "KILN-NO-SUCH-1", "--probe", "KILN-NO-SUCH-2"],
                format!("no debug probe with serial KILN-NO-SUCH-1 for {board}"),
            ),
        ];
        if none_attached {
            let missing = format!("error: no debug probe is attached for {board}: connect");
            cases.push((vec![], missing));
        }
        for (extra, want) in cases {
            let o = run(&extra);
            assert_eq!(
                o.status.code(),
                Some(2),
                "{board} {extra:?}: {}",
                stderr(&o)
            );
            assert!(
                stderr(&o).contains(&want),
                "{board} {extra:?}: {}",
                stderr(&o)
            );
            assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
            assert!(!outs.exists(), "{board} {extra:?}: outputs written");
        }
    }
}

#[test]
fn explain_shows_a_convolution_split_into_its_interior() {
    let plain = kiln(&["explain", "--example", "conv"]);
    assert!(plain.status.success(), "{plain:?}");
    let split = kiln(&["explain", "--example", "conv", "--opt", "interior"]);
    assert!(split.status.success(), "{split:?}");
    let (plain, split) = (
        String::from_utf8_lossy(&plain.stdout),
        String::from_utf8_lossy(&split.stdout),
    );
    // The interior rows 1..7 become a loop of their own, beside the border rows.
    let interior_rows = |s: &str| {
        s.lines()
            .any(|l| l.contains("= 1; ridx") && l.contains("< 7;"))
    };
    assert!(!interior_rows(&plain), "{plain}");
    assert!(interior_rows(&split), "{split}");
}

/// `kiln compile MODEL --target TARGET [FLAG]` into a folder of `dir` named after both: its
/// output, its stdout and that folder.
fn compile_flagged(
    dir: &std::path::Path,
    model: &std::path::Path,
    target: &str,
    flag: Option<&str>,
) -> (std::process::Output, String, std::path::PathBuf) {
    let out = dir.join(format!("{target}{}", flag.unwrap_or_default()));
    let mut args = vec!["compile", model.to_str().unwrap(), "--target", target];
    args.extend(["-o", out.to_str().unwrap()]);
    args.extend(flag);
    let o = kiln(&args);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    (o, text, out)
}

/// `--wide-weights` widens the int8 weights of the packed dot products where the target has
/// them (the report counts the bytes in flash), and is refused, naming the target, where it
/// has none.
#[test]
fn wide_weights_need_packed_dot_products() {
    let model = root().join("tests/models/mlperf-tiny/tflite/ad01_int8.tflite");
    let dir = tempfile::tempdir().unwrap();
    let weights = |target: &str, wide: bool| {
        compile_flagged(dir.path(), &model, target, wide.then_some("--wide-weights"))
    };
    let (o, narrow, _) = weights("c-dsp", false);
    assert!(o.status.success(), "{}", stderr(&o));
    let (o, wide, out) = weights("c-dsp", true);
    assert!(o.status.success(), "{}", stderr(&o));
    let bytes = |text: &str| -> usize {
        let at = text.find("weights ").expect("a weights figure") + "weights ".len();
        text[at..].split(' ').next().unwrap().parse().unwrap()
    };
    assert!(bytes(&wide) > bytes(&narrow) * 3 / 2, "{narrow}\n{wide}");
    let c = std::fs::read_to_string(out.join("kernels.c")).unwrap();
    assert!(c.contains("kiln_dot4w("), "no widened weight");
    // The target of that name is the same compile.
    let (o, named, _) = weights("c-dsp-wide", false);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(bytes(&named), bytes(&wide));
    let (o, _, out) = weights("c", true);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("--wide-weights") && e.contains("target c "),
        "{e}"
    );
    assert!(!out.exists(), "nothing is written on failure");
}

/// `--wide-activations` stores the int8 activations that the packed dot products read as
/// int16 (the report's arena grows by them), names the target `c-dsp-i16`, and is refused,
/// naming the target, where it has no DSP dot products (`c`; `c-mve`, whose Helium dot
/// products read int8 lanes as they are).
#[test]
fn wide_activations_grow_the_arena_and_need_packed_dot_products() {
    let model = root().join("tests/models/mlperf-tiny/tflite/kws_ref_model.tflite");
    let dir = tempfile::tempdir().unwrap();
    let compile = |target: &str, wide: bool| {
        compile_flagged(
            dir.path(),
            &model,
            target,
            wide.then_some("--wide-activations"),
        )
    };
    let arena = |text: &str| -> usize {
        let at = text.find("arena ").expect("an arena figure") + "arena ".len();
        text[at..].split(' ').next().unwrap().parse().unwrap()
    };
    let (o, narrow, _) = compile("c-dsp", false);
    assert!(o.status.success(), "{}", stderr(&o));
    let (o, wide, out) = compile("c-dsp", true);
    assert!(o.status.success(), "{}", stderr(&o));
    // kws: its 1×1 convolutions' 25×5×64 inputs, twice their bytes.
    assert!(arena(&wide) > arena(&narrow), "{narrow}\n{wide}");
    let c = std::fs::read_to_string(out.join("kernels.c")).unwrap();
    assert!(
        c.contains("(short* restrict data0"),
        "no kernel writes int16"
    );
    let (o, named, _) = compile("c-dsp-i16", false);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(arena(&named), arena(&wide));
    let (o, _, out) = compile("c", true);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("--wide-activations") && e.contains("target c "),
        "{e}"
    );
    assert!(!out.exists(), "nothing is written on failure");
    // Helium's dot products read int8 lanes as they are: nothing to widen.
    let (o, _, out) = compile("c-mve", false);
    assert!(o.status.success(), "{}", stderr(&o));
    let c = std::fs::read_to_string(out.join("kernels.c")).unwrap();
    assert!(c.contains("= kiln_ld16(data"), "no Helium dot product");
    let (o, _, out) = compile("c-mve", true);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("target c-mve ") && e.contains("Helium"), "{e}");
    assert!(!out.exists(), "nothing is written on failure");
}

/// `--memory min` takes vww below its liveness bound; `--arena-limit` plans that way when the
/// default plan is over the limit, and a limit no plan meets exits with 2, saying by how much
/// and at which step, and writes nothing.
#[test]
fn an_arena_limit_plans_for_less_memory_or_says_by_how_much_it_misses() {
    let model = root().join("tests/models/mlperf-tiny/tflite/vww_96_int8.tflite");
    let dir = tempfile::tempdir().unwrap();
    let arena = |text: &str| -> usize {
        let at = text.find("arena ").expect("an arena figure") + "arena ".len();
        text[at..].split(' ').next().unwrap().parse().unwrap()
    };
    let (o, speed, _) = compile_flagged(dir.path(), &model, "c-dsp", None);
    assert!(o.status.success(), "{}", stderr(&o));
    let (o, min, _) = compile_flagged(dir.path(), &model, "c-dsp", Some("--memory=min"));
    assert!(o.status.success(), "{}", stderr(&o));
    let (speed, min) = (arena(&speed), arena(&min));
    assert!(min < speed, "{min} B against {speed} B");
    let limit = format!("--arena-limit={}", min + 1000);
    let (o, fits, _) = compile_flagged(dir.path(), &model, "c-dsp", Some(&limit));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(arena(&fits), min);
    let limit = format!("--arena-limit={}", min - 1000);
    let (o, _, out) = compile_flagged(dir.path(), &model, "c-dsp", Some(&limit));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("smallest arena found is {min} B, 1000 B over")),
        "{e}"
    );
    assert!(e.contains("at step ") && e.contains("(kernel "), "{e}");
    assert!(!out.exists(), "nothing is written on failure");
}
