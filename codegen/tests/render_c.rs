//! Rendered C computes as the graph defines: 8- and 16-bit integer arithmetic wraps in its own
//! type, though C computes it in `int`. Kernels compiled by the system C compiler and run.

use kiln_codegen::dtype::DType;
use kiln_codegen::kernel::Kernel;
use kiln_codegen::ops::{AluOp, BinaryOp, UnaryOp};
use kiln_codegen::render::to_program;
use kiln_codegen::schedule::ast::LazyOp;
use kiln_codegen::shape::ShapeTracker;
use kiln_codegen::target::Target;
use kiln_test_support::cdriver::{run_batch, Call};

/// `out = i32(op(narrow(a), narrow(b)))` over `n` elements of `i32` buffers.
fn narrow_op(op: AluOp, narrow: DType, n: usize) -> Vec<LazyOp> {
    let st = ShapeTracker::from_shape(&[n]);
    let a = LazyOp::cast(narrow, LazyOp::load(1, DType::I32, st.clone()));
    let b = LazyOp::cast(narrow, LazyOp::load(2, DType::I32, st.clone()));
    let src = match op {
        AluOp::Unary(_) => vec![a],
        _ => vec![a, b],
    };
    let y = LazyOp::cast(DType::I32, LazyOp::alu(op, src));
    vec![LazyOp::store(0, st, y)]
}

#[test]
fn narrow_integer_results_wrap_in_their_type() {
    let a = [30000.0, -30000.0, 200.0, -32768.0, 127.0, 100.0];
    let b = [30000.0, 30000.0, 300.0, 1.0, 1.0, 3.0];
    let cases: [(AluOp, DType, [f64; 6]); 5] = [
        (
            AluOp::Binary(BinaryOp::Add),
            DType::I16,
            [-5536.0, 0.0, 500.0, -32767.0, 128.0, 103.0],
        ),
        (
            AluOp::Binary(BinaryOp::Sub),
            DType::I16,
            [0.0, 5536.0, -100.0, 32767.0, 126.0, 97.0],
        ),
        (
            AluOp::Binary(BinaryOp::Mul),
            DType::I16,
            [-5888.0, 5888.0, -5536.0, -32768.0, 127.0, 300.0],
        ),
        (
            AluOp::Unary(UnaryOp::Neg),
            DType::I16,
            [-30000.0, 30000.0, -200.0, -32768.0, -127.0, -100.0],
        ),
        (
            AluOp::Binary(BinaryOp::Add),
            DType::I8,
            [96.0, 0.0, -12.0, 1.0, -128.0, 103.0],
        ),
    ];
    let calls: Vec<Call> = cases
        .iter()
        .map(|(op, narrow, _)| {
            let k = Kernel::new(narrow_op(*op, *narrow, a.len()), Target::c()).expect("kernel");
            let program = to_program(&k).expect("render");
            let mut buffers = vec![(DType::I32, vec![0.0; a.len()]), (DType::I32, a.to_vec())];
            if !matches!(op, AluOp::Unary(_)) {
                buffers.push((DType::I32, b.to_vec()));
            }
            Call { program, buffers }
        })
        .collect();
    let dir = std::env::temp_dir().join(format!("kiln-render-c-{}", std::process::id()));
    let got = run_batch(&dir, &calls);
    let _ = std::fs::remove_dir_all(&dir);
    for ((op, narrow, want), got) in cases.iter().zip(got) {
        assert_eq!(&got[..], &want[..], "{op:?} in {narrow:?}");
    }
}
