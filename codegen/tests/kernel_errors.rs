//! Bad opts and shapes that cannot fit a device: typed errors that name the kernel and axis.

use kiln_codegen::dtype::DType;
use kiln_codegen::kernel::{Kernel, KernelError, Opt, OptOp};
use kiln_codegen::linearize::{linearize, GroupedDimsError, LinearizeError};
use kiln_codegen::ops::{AluOp, BinaryOp, ReduceOp};
use kiln_codegen::render::to_program;
use kiln_codegen::schedule::ast::LazyOp;
use kiln_codegen::shape::ShapeTracker;
use kiln_codegen::target::Target;

/// y[i] = sum_j x[i, j] * w[i, j] over a (rows, cols) shape.
fn rowdot(rows: usize, cols: usize) -> Vec<LazyOp> {
    let x = LazyOp::load(1, DType::F32, ShapeTracker::from_shape(&[rows, cols]));
    let w = LazyOp::load(2, DType::F32, ShapeTracker::from_shape(&[rows, cols]));
    let m = LazyOp::alu(AluOp::Binary(BinaryOp::Mul), vec![x, w]);
    let r = LazyOp::reduce(ReduceOp::Sum, vec![1], m);
    vec![LazyOp::store(0, ShapeTracker::from_shape(&[rows, 1]), r)]
}

#[test]
fn an_illegal_opt_is_an_error_naming_kernel_and_opt() {
    let mut k = Kernel::new(rowdot(16, 12), Target::c()).unwrap();
    let cases = [
        (Opt::new(OptOp::Upcast, 0, 5), "does not divide"),
        (Opt::new(OptOp::Upcast, 1, 4), "non-reduce"),
        (Opt::new(OptOp::Local, 0, 4), "no local"),
        (Opt::new(OptOp::Group, 0, 4), "no local memory"),
        (Opt::new(OptOp::Upcast, 0, 16), "more than 8"),
        (Opt::new(OptOp::Unroll, 0, 1), "amount of 1"),
    ];
    for (opt, why) in cases {
        let e = k.apply_opt(opt).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, KernelError::InvalidOpt { .. }), "{msg}");
        assert!(
            msg.contains("r_16_12") && msg.contains(&format!("{:?}", opt.op)),
            "{msg}"
        );
        assert!(msg.contains(why), "{msg} should say {why}");
    }
    assert!(
        k.applied_opts.is_empty(),
        "a refused opt leaves the kernel unchanged"
    );
    assert!(to_program(&k).is_ok());
}

#[test]
fn an_axis_out_of_range_is_an_error() {
    let mut k = Kernel::new(rowdot(16, 12), Target::c()).unwrap();
    let e = k.apply_opt(Opt::new(OptOp::Upcast, 7, 2)).unwrap_err();
    assert!(
        matches!(
            e,
            KernelError::AxisOutOfRange {
                axis: 7,
                dims: 2,
                ..
            }
        ),
        "{e}"
    );
    let e = k.apply_opt(Opt::new(OptOp::Unroll, 3, 2)).unwrap_err();
    assert!(e.to_string().contains("axis 4"), "{e}");
}

#[test]
fn a_shape_that_cannot_fit_the_device_is_an_error_naming_the_dim() {
    // 17 rows: prime and larger than the device's 16 threads per axis.
    let t = Target::threaded(vec![16, 16, 16], vec![8, 8, 8]);
    let k = Kernel::new(rowdot(17, 4), t).unwrap();
    match linearize(&k).unwrap_err() {
        LinearizeError::Dims { kernel, source } => {
            assert_eq!(kernel, "r_17_4");
            assert!(matches!(
                source,
                GroupedDimsError::TooLarge {
                    size: 17,
                    limit: 16,
                    axis: 0,
                    ..
                }
            ));
        }
        e => panic!("unexpected error {e}"),
    }
    // 64 rows split across two axes of 16.
    let t = Target::threaded(vec![16, 16, 16], vec![8, 8, 8]);
    let l = linearize(&Kernel::new(rowdot(64, 4), t).unwrap()).unwrap();
    assert_eq!(l.global_size, Some(vec![16, 4, 1]));
}

#[test]
fn a_malformed_ast_is_an_error() {
    let x = LazyOp::load(1, DType::F32, ShapeTracker::from_shape(&[4, 3]));
    let y = LazyOp::load(2, DType::F32, ShapeTracker::from_shape(&[4, 5]));
    let add = LazyOp::alu(AluOp::Binary(BinaryOp::Add), vec![x, y]);
    let e = Kernel::new(
        vec![LazyOp::store(0, ShapeTracker::from_shape(&[4, 3]), add)],
        Target::c(),
    )
    .unwrap_err();
    assert!(matches!(e, KernelError::BadAst { .. }), "{e}");
    assert!(e.to_string().contains("axis 1"), "{e}");
    assert!(Kernel::new(vec![], Target::c()).is_err());
}

#[test]
fn kernel_names_follow_their_kind() {
    let c = |ast| {
        to_program(&Kernel::new(ast, Target::c()).unwrap())
            .unwrap()
            .name
    };
    assert_eq!(c(rowdot(8, 4)), "r_8_4");
    let x = LazyOp::load(1, DType::F32, ShapeTracker::from_shape(&[6, 5]));
    assert_eq!(
        c(vec![LazyOp::store(
            0,
            ShapeTracker::from_shape(&[6, 5]),
            x.clone()
        )]),
        "C_30"
    );
    let n = LazyOp::alu(AluOp::Unary(kiln_codegen::ops::UnaryOp::Neg), vec![x]);
    assert_eq!(
        c(vec![LazyOp::store(0, ShapeTracker::from_shape(&[6, 5]), n)]),
        "E_30"
    );
}

#[test]
fn the_c_renderer_marks_inputs_const_and_restrict_and_uses_libm() {
    let x = LazyOp::load(1, DType::F32, ShapeTracker::from_shape(&[8]));
    let s = LazyOp::alu(AluOp::Unary(kiln_codegen::ops::UnaryOp::Sqrt), vec![x]);
    let p = to_program(
        &Kernel::new(
            vec![LazyOp::store(0, ShapeTracker::from_shape(&[8]), s)],
            Target::c(),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(p.src.contains("float* restrict data0"), "{}", p.src);
    assert!(p.src.contains("const float* restrict data1"), "{}", p.src);
    assert!(
        p.src.contains("float sqrtf(float);") && p.src.contains("sqrtf("),
        "{}",
        p.src
    );
    assert!(
        !p.src.contains("#include"),
        "no libc headers on a microcontroller"
    );
    let rec = p.replay_record("c");
    assert!(rec.contains("name: E_8") && rec.contains("--- ast") && rec.contains("--- src"));
}

#[test]
fn a_kernel_over_an_empty_dimension_is_an_error_not_a_panic() {
    for (rows, cols) in [(0, 3), (4, 0)] {
        let e = Kernel::new(rowdot(rows, cols), Target::c()).unwrap_err();
        assert!(matches!(e, KernelError::BadAst { .. }), "{e}");
        assert!(e.to_string().contains("size 0"), "{e}");
    }
}
