//! Tensor-level ops, scheduled and run through the kernels in the UOp interpreter, against
//! naive loops; and the graph's own evaluator (constant folding's), which must agree with the
//! kernels bit for bit.

use kiln_codegen::dtype::{DType, Scalar};
use kiln_codegen::graph::eval::evaluate;
use kiln_codegen::graph::{Graph, Lazy};
use kiln_codegen::interpret::run_schedule;
use kiln_codegen::schedule::create_schedule;
use kiln_codegen::tensor::Tensor;

fn data(n: usize, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .map(|v| v as f32 as f64)
        .collect()
}

fn weight(g: &mut Graph, name: &str, shape: &[usize], v: &[f64]) -> Lazy {
    let t = Tensor::from_f64(Scalar::F32, shape.to_vec(), v).expect("values fill the shape");
    g.weight(name, t)
}

fn run(g: &Graph, outs: &[Lazy], inputs: &[Vec<f64>]) -> (Vec<Vec<f64>>, usize) {
    let s = create_schedule(g, outs).expect("schedule");
    let ins: Vec<Tensor> = inputs
        .iter()
        .map(|v| Tensor::vector(Scalar::F32, v))
        .collect();
    let r = run_schedule(&s, &ins).expect("run");
    let by_graph = evaluate(g, outs, &ins).expect("evaluate");
    for (k, (kernels, graph)) in r.iter().zip(&by_graph).enumerate() {
        assert_eq!(
            kernels.bytes(),
            graph.bytes(),
            "output {k}: kernels and graph evaluator"
        );
    }
    (r.iter().map(|b| b.to_f64()).collect(), s.items.len())
}

fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
            "element {i}: got {a}, want {b}"
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn naive_conv(
    x: &[f64],
    w: &[f64],
    b: &[f64],
    (n, c, h, wd): (usize, usize, usize, usize),
    (o, kh, kw): (usize, usize, usize),
    stride: usize,
    dil: usize,
    pad: (usize, usize, usize, usize),
    groups: usize,
) -> (Vec<f64>, usize, usize) {
    let (pt, pl, pb, pr) = pad;
    let oh = (h + pt + pb - dil * (kh - 1) - 1) / stride + 1;
    let ow = (wd + pl + pr - dil * (kw - 1) - 1) / stride + 1;
    let cg = c / groups;
    let og = o / groups;
    let mut out = vec![0.0; n * o * oh * ow];
    for ni in 0..n {
        for oc in 0..o {
            let gidx = oc / og;
            for y in 0..oh {
                for xx in 0..ow {
                    let mut acc = b[oc];
                    for ci in 0..cg {
                        for ky in 0..kh {
                            for kx in 0..kw {
                                let iy = (y * stride + ky * dil) as i64 - pt as i64;
                                let ix = (xx * stride + kx * dil) as i64 - pl as i64;
                                if iy < 0 || ix < 0 || iy >= h as i64 || ix >= wd as i64 {
                                    continue;
                                }
                                let cin = gidx * cg + ci;
                                let xv = x[((ni * c + cin) * h + iy as usize) * wd + ix as usize];
                                let wv = w[((oc * cg + ci) * kh + ky) * kw + kx];
                                acc += xv * wv;
                            }
                        }
                    }
                    out[((ni * o + oc) * oh + y) * ow + xx] = acc;
                }
            }
        }
    }
    (out, oh, ow)
}

#[test]
fn conv_relu_matches_naive_and_fuses_into_one_kernel() {
    for &(c, o, groups, stride, dil, pad) in &[
        (4, 6, 1, 1, 1, (1, 1, 1, 1)),
        (4, 4, 4, 2, 1, (0, 0, 1, 1)),
        (6, 4, 2, 1, 2, (2, 1, 0, 2)),
    ] {
        let (n, h, wd, kh, kw) = (1, 7, 6, 3, 2);
        let mut g = Graph::new();
        let x = g.input("x", DType::F32, &[n, c, h, wd]);
        let wv = data(o * (c / groups) * kh * kw, 2);
        let bv = data(o, 3);
        let w = weight(&mut g, "w", &[o, c / groups, kh, kw], &wv);
        let b = weight(&mut g, "b", &[o], &bv);
        let y = g
            .conv(
                &x,
                &w,
                Some(&b),
                &[stride, stride],
                &[dil, dil],
                &[(pad.0, pad.2), (pad.1, pad.3)],
                groups,
            )
            .unwrap();
        let y = g.relu(&y).unwrap();
        let xv = data(n * c * h * wd, 1);
        let (got, kernels) = run(&g, &[y], std::slice::from_ref(&xv));
        let (want, _, _) = naive_conv(
            &xv,
            &wv,
            &bv,
            (n, c, h, wd),
            (o, kh, kw),
            stride,
            dil,
            pad,
            groups,
        );
        let want: Vec<f64> = want.iter().map(|v| v.max(0.0)).collect();
        assert_close(&got[0], &want);
        assert_eq!(kernels, 1, "conv + bias + relu is one kernel");
    }
}

#[test]
fn matmul_and_softmax_match_naive() {
    let (m, k, n) = (3, 5, 4);
    let mut g = Graph::new();
    let a = g.input("a", DType::F32, &[m, k]);
    let bv = data(k * n, 5);
    let b = weight(&mut g, "b", &[k, n], &bv);
    let y = g.matmul(&a, &b).unwrap();
    let s = g.softmax(&y, 1).unwrap();
    let av = data(m * k, 4);
    let (got, kernels) = run(&g, &[y, s], std::slice::from_ref(&av));
    let mut want = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            want[i * n + j] = (0..k).map(|t| av[i * k + t] * bv[t * n + j]).sum();
        }
    }
    assert_close(&got[0], &want);
    let mut sm = want.clone();
    for i in 0..m {
        let row = &mut sm[i * n..(i + 1) * n];
        let mx = row.iter().cloned().fold(f64::MIN, f64::max);
        let e: Vec<f64> = row.iter().map(|v| (v - mx).exp()).collect();
        let t: f64 = e.iter().sum();
        for (r, ev) in row.iter_mut().zip(e) {
            *r = ev / t;
        }
    }
    assert_close(&got[1], &sm);
    assert!(kernels <= 5, "matmul + softmax in {kernels} kernels");
}

#[test]
fn weight_only_subgraphs_fold_at_compile_time() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[4]);
    let v = weight(&mut g, "var", &[4], &[1.0, 4.0, 9.0, 16.0]);
    let e = g.add_scalar(&v, 0.0).unwrap();
    let s = g.unary(kiln_codegen::ops::UnaryOp::Sqrt, &e).unwrap();
    let r = g.unary(kiln_codegen::ops::UnaryOp::Recip, &s).unwrap();
    let y = g.binary(kiln_codegen::ops::BinaryOp::Mul, &x, &r).unwrap();
    let (got, kernels) = run(&g, &[y], &[vec![1.0, 2.0, 3.0, 4.0]]);
    assert_close(&got[0], &[1.0, 1.0, 1.0, 1.0]);
    assert_eq!(kernels, 1, "the scale is folded into a weight");
}

#[test]
fn reducing_an_empty_axis_gives_the_identity() {
    use kiln_codegen::ops::{BinaryOp, ReduceOp};
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[2, 0, 3]);
    let s = g.reduce(ReduceOp::Sum, &x, &[1]).unwrap();
    let m = g.reduce(ReduceOp::Max, &x, &[1]).unwrap();
    let p = g.reduce_prod(&x, &[1]).unwrap();
    let one = g.constant(1.0, DType::F32, &[2, 1, 3]);
    let s1 = g.binary(BinaryOp::Add, &s, &one).unwrap();
    let (r, _) = run(&g, &[s1, m, p], &[vec![]]);
    assert_eq!(r[0], vec![1.0; 6]);
    assert_eq!(r[1], vec![f64::NEG_INFINITY; 6]);
    assert_eq!(r[2], vec![1.0; 6]);
}

#[test]
fn an_empty_output_schedules_no_kernel() {
    let mut g = Graph::new();
    let x = g.input("x", DType::F32, &[0, 4]);
    let y = g.add_scalar(&x, 1.0).unwrap();
    let (r, kernels) = run(&g, &[y], &[vec![]]);
    assert_eq!(kernels, 0);
    assert!(r[0].is_empty());
}

#[test]
fn reduce_min_of_bools_and_unsigned_integers() {
    let mut g = Graph::new();
    let bools = Tensor::new(Scalar::Bool, vec![2, 3], vec![1, 0, 1, 1, 1, 1]).unwrap();
    let bytes = Tensor::new(Scalar::U8, vec![2, 3], vec![0, 200, 7, 255, 9, 3]).unwrap();
    let b = g.weight("b", bools);
    let u = g.weight("u", bytes);
    let mb = g.reduce_min(&b, &[1]).unwrap();
    let mu = g.reduce_min(&u, &[1]).unwrap();
    let outs = [mb, mu];
    let s = create_schedule(&g, &outs).expect("schedule");
    let r = run_schedule(&s, &[]).expect("run");
    let by_graph = evaluate(&g, &outs, &[]).expect("evaluate");
    assert_eq!(r, by_graph);
    assert_eq!(r[0].to_f64(), vec![0.0, 1.0]);
    assert_eq!(r[1].to_f64(), vec![0.0, 3.0]);
}

/// The elementwise minimum of signed integers holds at the type's minimum, whose negation
/// wraps.
#[test]
fn elementwise_min_of_int8_at_the_minimum() {
    let mut g = Graph::new();
    let b = Tensor::from_i64(Scalar::I8, vec![4], &[115, -7, -128, -128]).unwrap();
    let a = g.input("a", DType::I8, &[4]);
    let w = g.weight("b", b);
    let m = g.min(&a, &w).unwrap();
    let outs = [m];
    let s = create_schedule(&g, &outs).expect("schedule");
    let inputs = [Tensor::from_i64(Scalar::I8, vec![4], &[-128, 5, -128, 127]).unwrap()];
    let r = run_schedule(&s, &inputs).expect("run");
    let by_graph = evaluate(&g, &outs, &inputs).expect("evaluate");
    assert_eq!(r, by_graph);
    assert_eq!(r[0].to_i64().unwrap(), vec![-128, -7, -128, -128]);
}

/// Integer powers with exponents known only at run time, against `i32::wrapping_pow`:
/// negative exponents (0, except for bases ±1), float exponents truncated and taken as ±2^30
/// past it, products wrapping in `i32`.
#[test]
fn integer_powers_with_runtime_exponents() {
    let bases: Vec<i64> = vec![2, -3, 0, 1, -1, -1, 7, 5, 1, -1, 2];
    let exps: Vec<f64> = vec![
        10.0,
        3.0,
        0.0,
        -4.0,
        -3.0,
        2_147_483_647.0,
        2.9,
        13.0,
        40.0,
        31.0,
        -2.0,
    ];
    let mut g = Graph::new();
    let x = g.input("x", DType::I32, &[bases.len()]);
    let y = g.input("y", DType::F64, &[exps.len()]);
    let p = g.int_pow(&x, &y).unwrap();
    let xs = Tensor::from_i64(Scalar::I32, vec![bases.len()], &bases).unwrap();
    let ys = Tensor::from_f64(Scalar::F64, vec![exps.len()], &exps).unwrap();
    let s = create_schedule(&g, std::slice::from_ref(&p)).expect("schedule");
    let by_kernels = run_schedule(&s, &[xs.clone(), ys.clone()]).expect("run");
    let by_graph = evaluate(&g, &[p], &[xs, ys]).expect("evaluate");
    let want: Vec<i64> = bases
        .iter()
        .zip(&exps)
        .map(|(&b, &e)| {
            let e = e.clamp(-1073741824.0, 1073741824.0) as i64;
            match e < 0 {
                true if b == 1 => 1,
                true if b == -1 => 1 - 2 * (e.abs() % 2),
                true => 0,
                false => i64::from((b as i32).wrapping_pow(e as u32)),
            }
        })
        .collect();
    assert_eq!(by_graph[0].to_i64(), Some(want.clone()));
    assert_eq!(by_kernels[0].to_i64(), Some(want));
}

/// A kernel reads at most `MAX_KERNEL_INPUTS` buffers (a step passes the runtime 16 pointers):
/// a concatenation of 40 inputs is split into kernels that fit, and computes the same.
#[test]
fn a_wide_concatenation_is_split_into_kernels_that_fit_a_step() {
    use kiln_codegen::schedule::MAX_KERNEL_INPUTS;
    let mut g = Graph::new();
    let parts: Vec<Lazy> = (0..40)
        .map(|k| g.input(&format!("x{k}"), DType::F32, &[2, 3]))
        .collect();
    let y = g.concat(&parts, 1).unwrap();
    let y = g.add_scalar(&y, 1.0).unwrap();
    let s = create_schedule(&g, std::slice::from_ref(&y)).expect("schedule");
    let widest = s.items.iter().map(|i| i.bufs.len() - 1).max().unwrap();
    assert!(
        widest <= MAX_KERNEL_INPUTS,
        "a kernel reads {widest} buffers"
    );
    let inputs: Vec<Vec<f64>> = (0..40).map(|k| data(6, k)).collect();
    let (r, _) = run(&g, &[y], &inputs);
    for (k, x) in inputs.iter().enumerate() {
        for row in 0..2 {
            for c in 0..3 {
                let want = (x[row * 3 + c] + 1.0) as f32 as f64;
                assert_eq!(r[0][row * 120 + k * 3 + c], want);
            }
        }
    }
}
