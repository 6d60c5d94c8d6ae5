//! ONNX `RNN`, `GRU` and `LSTM` against a plain transcription of the operator's equations, in
//! the forms the ONNX backend cases leave out: reverse and bidirectional layers, batch-first
//! layout, sequences shorter than the input for some batch elements, peepholes, coupled gates,
//! `linear_before_reset`, clipping, every activation function, weights known or computed at
//! run time, long sequences; and the time loop's shape in the schedule.

use kiln_codegen::dtype::Scalar;
use kiln_codegen::error::chain;
use kiln_codegen::interpret::run_schedule;
use kiln_codegen::onnx::proto::attribute_proto::AttributeType;
use kiln_codegen::onnx::proto::tensor_shape_proto::{dimension, Dimension};
use kiln_codegen::onnx::proto::{
    type_proto, AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};
use kiln_codegen::onnx::{self, import, Imported};
use kiln_codegen::plan::plan_arena;
use kiln_codegen::schedule::{create_schedule, BufKind, Schedule};
use kiln_codegen::tensor::Tensor;
use prost::Message;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Rnn,
    Gru,
    Lstm,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Rnn => "RNN",
            Op::Gru => "GRU",
            Op::Lstm => "LSTM",
        }
    }
    fn gates(self) -> usize {
        match self {
            Op::Rnn => 1,
            Op::Gru => 3,
            Op::Lstm => 4,
        }
    }
    fn defaults(self) -> Vec<Act> {
        let (s, t) = (Act::plain("Sigmoid"), Act::plain("Tanh"));
        match self {
            Op::Rnn => vec![t],
            Op::Gru => vec![s, t],
            Op::Lstm => vec![s, t, t],
        }
    }
}

/// An activation function with its alpha and beta (as the model gives them, when it does).
#[derive(Clone, Copy, Debug)]
struct Act {
    name: &'static str,
    alpha: Option<f64>,
    beta: Option<f64>,
}

impl Act {
    fn plain(name: &'static str) -> Act {
        Act {
            name,
            alpha: None,
            beta: None,
        }
    }

    fn eval(&self, x: f64) -> f64 {
        let a = |d: f64| self.alpha.unwrap_or(d);
        let b = |d: f64| self.beta.unwrap_or(d);
        let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
        match self.name {
            "Relu" => x.max(0.0),
            "Tanh" => x.tanh(),
            "Sigmoid" => sigmoid(x),
            "Affine" => a(1.0) * x + b(0.0),
            "LeakyRelu" if x < 0.0 => a(0.01) * x,
            "LeakyRelu" => x,
            "ThresholdedRelu" if x >= a(1.0) => x,
            "ThresholdedRelu" => 0.0,
            "ScaledTanh" => a(1.0) * (b(1.0) * x).tanh(),
            "HardSigmoid" => (a(0.2) * x + b(0.5)).clamp(0.0, 1.0),
            "Elu" if x < 0.0 => a(1.0) * (x.exp() - 1.0),
            "Elu" => x,
            "Softsign" => x / (1.0 + x.abs()),
            "Softplus" => (1.0 + x.exp()).ln(),
            other => panic!("no activation {other}"),
        }
    }

    fn takes_alpha(&self) -> bool {
        matches!(
            self.name,
            "Affine" | "LeakyRelu" | "ThresholdedRelu" | "ScaledTanh" | "HardSigmoid" | "Elu"
        )
    }

    fn takes_beta(&self) -> bool {
        matches!(self.name, "Affine" | "ScaledTanh" | "HardSigmoid")
    }
}

/// One layer to test.
#[derive(Clone, Debug)]
struct Spec {
    op: Op,
    t: usize,
    batch: usize,
    input: usize,
    hidden: usize,
    direction: &'static str,
    batch_first: bool,
    /// W, R, B and P as initializers (else model inputs).
    known: bool,
    /// Every input an initializer: the importer folds the layer on the host.
    all_known: bool,
    bias: bool,
    peepholes: bool,
    initial: bool,
    seq: Option<Vec<i64>>,
    seq_known: bool,
    /// Per direction, when not the defaults.
    acts: Option<Vec<Vec<Act>>>,
    clip: Option<f64>,
    input_forget: bool,
    linear_before_reset: bool,
    /// Y, Y_h, Y_c.
    outputs: [bool; 3],
    opset: i64,
}

impl Spec {
    fn new(op: Op) -> Spec {
        Spec {
            op,
            t: 6,
            batch: 3,
            input: 4,
            hidden: 3,
            direction: "forward",
            batch_first: false,
            known: true,
            all_known: false,
            bias: true,
            peepholes: false,
            initial: false,
            seq: None,
            seq_known: false,
            acts: None,
            clip: None,
            input_forget: false,
            linear_before_reset: false,
            outputs: [true, true, op == Op::Lstm],
            opset: 22,
        }
    }

    fn directions(&self) -> usize {
        if self.direction == "bidirectional" {
            2
        } else {
            1
        }
    }

    fn acts(&self) -> Vec<Vec<Act>> {
        self.acts
            .clone()
            .unwrap_or_else(|| vec![self.op.defaults(); self.directions()])
    }
}

/// The layer's inputs, time-major, with omitted ones `None`.
struct Data {
    x: Vec<f64>,
    w: Vec<f64>,
    r: Vec<f64>,
    b: Option<Vec<f64>>,
    h0: Option<Vec<f64>>,
    c0: Option<Vec<f64>>,
    p: Option<Vec<f64>>,
}

/// Values in [-scale, scale) from a fixed sequence.
fn values(n: usize, seed: &mut u64, scale: f64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            *seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let u = (*seed >> 40) as f64 / (1u64 << 24) as f64;
            // Rounded to f32, so that the model holds exactly these values.
            f64::from(((2.0 * u - 1.0) * scale) as f32)
        })
        .collect()
}

fn data(s: &Spec, seed: u64) -> Data {
    let mut seed = seed;
    let (d, gh, h) = (s.directions(), s.op.gates() * s.hidden, s.hidden);
    let state = d * s.batch * h;
    Data {
        x: values(s.t * s.batch * s.input, &mut seed, 1.0),
        w: values(d * gh * s.input, &mut seed, 0.7),
        r: values(d * gh * h, &mut seed, 0.7),
        b: s.bias.then(|| values(d * 2 * gh, &mut seed, 0.5)),
        h0: s.initial.then(|| values(state, &mut seed, 1.0)),
        c0: (s.initial && s.op == Op::Lstm).then(|| values(state, &mut seed, 1.0)),
        p: s.peepholes.then(|| values(d * 3 * h, &mut seed, 0.5)),
    }
}

/// The layer's outputs by the operator's equations, time-major: Y (T, D, B, H), Y_h and Y_c
/// (D, B, H).
fn reference(s: &Spec, v: &Data) -> [Vec<f64>; 3] {
    let (t_len, nb, ni, nh, nd) = (s.t, s.batch, s.input, s.hidden, s.directions());
    let gh = s.op.gates() * nh;
    let mut y = vec![0.0; t_len * nd * nb * nh];
    let mut yh = vec![0.0; nd * nb * nh];
    let mut yc = vec![0.0; nd * nb * nh];
    let clip = |x: f64| s.clip.map_or(x, |c| x.clamp(-c, c));
    let acts = s.acts();
    for d in 0..nd {
        let reverse = s.direction == "reverse" || d == 1;
        let act = |k: usize, x: f64| acts[d][k].eval(clip(x));
        let w = |g: usize, i: usize| v.w[(d * gh + g) * ni + i];
        let r = |g: usize, k: usize| v.r[(d * gh + g) * nh + k];
        let wb = |g: usize| v.b.as_ref().map_or(0.0, |b| b[d * 2 * gh + g]);
        let rb = |g: usize| v.b.as_ref().map_or(0.0, |b| b[d * 2 * gh + gh + g]);
        let p = |k: usize, j: usize| v.p.as_ref().map_or(0.0, |p| p[d * 3 * nh + k * nh + j]);
        for b in 0..nb {
            let len = s
                .seq
                .as_ref()
                .map_or(t_len, |l| l[b].clamp(0, t_len as i64) as usize);
            let at = |k: usize| (d * nb + b) * nh + k;
            let mut h: Vec<f64> = (0..nh)
                .map(|k| v.h0.as_ref().map_or(0.0, |h0| h0[at(k)]))
                .collect();
            let mut c: Vec<f64> = (0..nh)
                .map(|k| v.c0.as_ref().map_or(0.0, |c0| c0[at(k)]))
                .collect();
            let steps: Vec<usize> = match reverse {
                true => (0..len).rev().collect(),
                false => (0..len).collect(),
            };
            for t in steps {
                let xw: Vec<f64> = (0..gh)
                    .map(|g| {
                        (0..ni)
                            .map(|i| v.x[(t * nb + b) * ni + i] * w(g, i))
                            .sum::<f64>()
                            + wb(g)
                    })
                    .collect();
                let hr = |g: usize, h: &[f64]| (0..nh).map(|k| h[k] * r(g, k)).sum::<f64>();
                let (hn, cn): (Vec<f64>, Vec<f64>) = match s.op {
                    Op::Rnn => (
                        (0..nh).map(|j| act(0, xw[j] + hr(j, &h) + rb(j))).collect(),
                        c.clone(),
                    ),
                    Op::Gru => {
                        let z: Vec<f64> =
                            (0..nh).map(|j| act(0, xw[j] + hr(j, &h) + rb(j))).collect();
                        let rr: Vec<f64> = (0..nh)
                            .map(|j| act(0, xw[nh + j] + hr(nh + j, &h) + rb(nh + j)))
                            .collect();
                        let reset: Vec<f64> = (0..nh).map(|k| rr[k] * h[k]).collect();
                        let hh: Vec<f64> = (0..nh)
                            .map(|j| {
                                let g = 2 * nh + j;
                                let inner = match s.linear_before_reset {
                                    true => rr[j] * (hr(g, &h) + rb(g)),
                                    false => hr(g, &reset) + rb(g),
                                };
                                act(1, xw[g] + inner)
                            })
                            .collect();
                        (
                            (0..nh)
                                .map(|j| (1.0 - z[j]) * hh[j] + z[j] * h[j])
                                .collect(),
                            c.clone(),
                        )
                    }
                    Op::Lstm => {
                        let gate = |k: usize, j: usize| {
                            xw[k * nh + j] + hr(k * nh + j, &h) + rb(k * nh + j)
                        };
                        let mut hn = vec![0.0; nh];
                        let mut cn = vec![0.0; nh];
                        for j in 0..nh {
                            let i = act(0, gate(0, j) + p(0, j) * c[j]);
                            let f = match s.input_forget {
                                true => 1.0 - i,
                                false => act(0, gate(2, j) + p(2, j) * c[j]),
                            };
                            let cc = act(1, gate(3, j));
                            cn[j] = f * c[j] + i * cc;
                            let o = act(0, gate(1, j) + p(1, j) * cn[j]);
                            hn[j] = o * act(2, cn[j]);
                        }
                        (hn, cn)
                    }
                };
                h = hn;
                c = cn;
                for k in 0..nh {
                    y[((t * nd + d) * nb + b) * nh + k] = h[k];
                }
            }
            for k in 0..nh {
                // A sequence of no steps ends in zeros, as onnxruntime's does.
                yh[at(k)] = if len == 0 { 0.0 } else { h[k] };
                yc[at(k)] = if len == 0 { 0.0 } else { c[k] };
            }
        }
    }
    [y, yh, yc]
}

/// `v` of `shape` with its axes permuted: axis `k` of the result is axis `perm[k]` of `v`.
fn permute(v: &[f64], shape: &[usize], perm: &[usize]) -> Vec<f64> {
    let out: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let strides: Vec<usize> = (0..shape.len())
        .map(|a| shape[a + 1..].iter().product())
        .collect();
    let n: usize = shape.iter().product();
    (0..n)
        .map(|mut flat| {
            let mut src = 0;
            for k in (0..out.len()).rev() {
                src += (flat % out[k]) * strides[perm[k]];
                flat /= out[k];
            }
            v[src]
        })
        .collect()
}

fn dims(d: &[usize]) -> Vec<i64> {
    d.iter().map(|&x| x as i64).collect()
}

fn value_info(name: &str, elem: i32, shape: Option<&[usize]>) -> ValueInfoProto {
    let tensor = type_proto::Tensor {
        elem_type: Some(elem),
        shape: shape.map(|s| TensorShapeProto {
            dim: s
                .iter()
                .map(|&d| Dimension {
                    value: Some(dimension::Value::DimValue(d as i64)),
                    ..Default::default()
                })
                .collect(),
        }),
    };
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(tensor)),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn attr(name: &str, kind: AttributeType) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(kind as i32),
        ..Default::default()
    }
}

fn int_attr(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        i: Some(v),
        ..attr(name, AttributeType::Int)
    }
}

fn float_attr(name: &str, v: f64) -> AttributeProto {
    AttributeProto {
        f: Some(v as f32),
        ..attr(name, AttributeType::Float)
    }
}

fn string_attr(name: &str, v: &str) -> AttributeProto {
    AttributeProto {
        s: Some(v.as_bytes().to_vec()),
        ..attr(name, AttributeType::String)
    }
}

fn strings_attr(name: &str, v: &[&str]) -> AttributeProto {
    AttributeProto {
        strings: v.iter().map(|s| s.as_bytes().to_vec()).collect(),
        ..attr(name, AttributeType::Strings)
    }
}

fn floats_attr(name: &str, v: &[f64]) -> AttributeProto {
    AttributeProto {
        floats: v.iter().map(|&x| x as f32).collect(),
        ..attr(name, AttributeType::Floats)
    }
}

/// The node's attributes for `s`.
fn attributes(s: &Spec) -> Vec<AttributeProto> {
    let mut a = vec![
        int_attr("hidden_size", s.hidden as i64),
        string_attr("direction", s.direction),
    ];
    if s.opset >= 14 {
        a.push(int_attr("layout", i64::from(s.batch_first)));
    }
    if let Some(acts) = &s.acts {
        let all: Vec<Act> = acts.iter().flatten().copied().collect();
        let names: Vec<&str> = all.iter().map(|a| a.name).collect();
        a.push(strings_attr("activations", &names));
        let alphas: Vec<f64> = all
            .iter()
            .filter(|a| a.takes_alpha())
            .filter_map(|a| a.alpha)
            .collect();
        let betas: Vec<f64> = all
            .iter()
            .filter(|a| a.takes_beta())
            .filter_map(|a| a.beta)
            .collect();
        if !alphas.is_empty() {
            a.push(floats_attr("activation_alpha", &alphas));
        }
        if !betas.is_empty() {
            a.push(floats_attr("activation_beta", &betas));
        }
    }
    if let Some(c) = s.clip {
        a.push(float_attr("clip", c));
    }
    if s.input_forget {
        a.push(int_attr("input_forget", 1));
    }
    if s.linear_before_reset {
        a.push(int_attr("linear_before_reset", 1));
    }
    a
}

/// One input of the node: its name, values, shape, whether it is an int32 tensor (else
/// float) and whether it is an initializer (else a model input).
type Given = (&'static str, Vec<f64>, Vec<usize>, bool, bool);

/// The model of one node for `s` with the values of `v`, and the tensors of its inputs (those
/// that are not initializers), in order.
fn model(s: &Spec, v: &Data, attrs: Vec<AttributeProto>) -> (Vec<u8>, Vec<Tensor>) {
    let (t, nb, ni, nh, nd) = (s.t, s.batch, s.input, s.hidden, s.directions());
    let gh = s.op.gates() * nh;
    let (x, x_shape) = match s.batch_first {
        true => (permute(&v.x, &[t, nb, ni], &[1, 0, 2]), vec![nb, t, ni]),
        false => (v.x.clone(), vec![t, nb, ni]),
    };
    let state = |sv: &[f64]| match s.batch_first {
        true => (permute(sv, &[nd, nb, nh], &[1, 0, 2]), vec![nb, nd, nh]),
        false => (sv.to_vec(), vec![nd, nb, nh]),
    };
    let seq = s
        .seq
        .as_ref()
        .map(|l| l.iter().map(|&n| n as f64).collect::<Vec<f64>>());
    let mut given: Vec<Option<Given>> = vec![
        Some(("X", x, x_shape, false, s.all_known)),
        Some(("W", v.w.clone(), vec![nd, gh, ni], false, s.known)),
        Some(("R", v.r.clone(), vec![nd, gh, nh], false, s.known)),
        v.b.clone()
            .map(|b| ("B", b, vec![nd, 2 * gh], false, s.known)),
        seq.map(|l| {
            (
                "sequence_lens",
                l,
                vec![nb],
                true,
                s.seq_known || s.all_known,
            )
        }),
        v.h0.as_ref().map(|h| {
            let (h, shape) = state(h);
            ("initial_h", h, shape, false, s.all_known)
        }),
    ];
    if s.op == Op::Lstm {
        given.push(v.c0.as_ref().map(|c| {
            let (c, shape) = state(c);
            ("initial_c", c, shape, false, s.all_known)
        }));
        given.push(
            v.p.clone()
                .map(|p| ("P", p, vec![nd, 3 * nh], false, s.known)),
        );
    }
    while matches!(given.last(), Some(None)) {
        given.pop();
    }
    let mut graph = GraphProto {
        name: Some("rnn".into()),
        ..Default::default()
    };
    let mut tensors = Vec::new();
    let mut names = Vec::new();
    for g in &given {
        let Some((name, vals, shape, int, init)) = g else {
            names.push(String::new());
            continue;
        };
        names.push(name.to_string());
        let elem = if *int { 6 } else { 1 };
        if *init {
            let raw = vals
                .iter()
                .flat_map(|&x| match int {
                    true => (x as i32).to_le_bytes(),
                    false => (x as f32).to_le_bytes(),
                })
                .collect();
            graph.initializer.push(TensorProto {
                name: Some(name.to_string()),
                data_type: Some(elem),
                dims: dims(shape),
                raw_data: Some(raw),
                ..Default::default()
            });
        } else {
            graph.input.push(value_info(name, elem, Some(shape)));
            tensors.push(match int {
                true => {
                    let ints: Vec<i64> = vals.iter().map(|&x| x as i64).collect();
                    Tensor::from_i64(Scalar::I32, shape.clone(), &ints).unwrap()
                }
                false => {
                    let f: Vec<f32> = vals.iter().map(|&x| x as f32).collect();
                    Tensor::from_f32(shape.clone(), &f).unwrap()
                }
            });
        }
    }
    let count = if s.op == Op::Lstm { 3 } else { 2 };
    let mut outputs: Vec<String> = (0..count)
        .map(|k| match s.outputs[k] {
            true => ["Y", "Y_h", "Y_c"][k].to_string(),
            false => String::new(),
        })
        .collect();
    while outputs.last().is_some_and(String::is_empty) {
        outputs.pop();
    }
    for o in outputs.iter().filter(|o| !o.is_empty()) {
        graph.output.push(value_info(o, 1, None));
    }
    graph.node.push(NodeProto {
        op_type: Some(s.op.name().into()),
        name: Some("layer".into()),
        input: names,
        output: outputs,
        attribute: attrs,
        ..Default::default()
    });
    let m = ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(s.opset),
        }],
        graph: Some(graph),
        ..Default::default()
    };
    (m.encode_to_vec(), tensors)
}

fn imported(bytes: &[u8]) -> Result<Imported, String> {
    let m = onnx::load_bytes(bytes).map_err(|e| chain(&e))?;
    import(&m, &[]).map_err(|e| chain(&e))
}

/// Imports, schedules and interprets the layer of `s`; checks each output wanted against the
/// reference. Returns the schedule.
fn check(s: &Spec, seed: u64) -> Schedule {
    let v = data(s, seed);
    let (bytes, inputs) = model(s, &v, attributes(s));
    let imp = imported(&bytes).unwrap_or_else(|e| panic!("{s:?}: {e}"));
    let sched = create_schedule(&imp.graph, &imp.outputs).unwrap();
    let got = run_schedule(&sched, &inputs).unwrap();
    let want = reference(s, &v);
    let (t, nb, nh, nd) = (s.t, s.batch, s.hidden, s.directions());
    let mut got = got.iter();
    for k in 0..3 {
        if !s.outputs[k] || (k == 2 && s.op != Op::Lstm) {
            continue;
        }
        let g = got.next().expect("an output").to_f64();
        let w = match (k, s.batch_first) {
            (0, true) => permute(&want[0], &[t, nd, nb, nh], &[2, 0, 1, 3]),
            (_, true) if k > 0 => permute(&want[k], &[nd, nb, nh], &[1, 0, 2]),
            _ => want[k].clone(),
        };
        assert_eq!(g.len(), w.len(), "{s:?}: output {k}");
        for (i, (a, b)) in g.iter().zip(&w).enumerate() {
            assert!(
                (a - b).abs() <= 1e-4 + 1e-4 * b.abs(),
                "{s:?}: output {k}[{i}] is {a}, expected {b}\n got {g:?}\nwant {w:?}"
            );
        }
    }
    sched
}

#[test]
fn a_long_bidirectional_lstm_with_peepholes_and_short_sequences_matches_the_equations() {
    let s = Spec {
        t: 37,
        batch: 4,
        input: 5,
        hidden: 6,
        direction: "bidirectional",
        peepholes: true,
        initial: true,
        seq: Some(vec![37, 12, 1, 0]),
        ..Spec::new(Op::Lstm)
    };
    let sched = check(&s, 1);
    // One loop per direction, each over every step.
    assert_eq!(sched.loops.len(), 2);
    assert!(sched.loops.iter().all(|l| l.count == 37));
    // The same, with the lengths computed at run time, and with them known.
    check(
        &Spec {
            seq_known: true,
            ..s.clone()
        },
        2,
    );
    check(&Spec { known: false, ..s }, 3);
}

#[test]
fn the_time_loop_is_one_loop_whatever_the_sequence_length() {
    for op in [Op::Rnn, Op::Gru, Op::Lstm] {
        let items = |t: usize| {
            let s = Spec {
                t,
                direction: "bidirectional",
                seq: Some(vec![t as i64, 1, 2]),
                ..Spec::new(op)
            };
            let sched = check(&s, 4);
            (sched.items.len(), sched.loops.clone())
        };
        let (short, loops) = items(2);
        let (long, long_loops) = items(40);
        assert_eq!(short, long, "{op:?}: the schedule grows with the sequence");
        assert_eq!(loops.len(), 2);
        assert!(long_loops.iter().all(|l| l.count == 40));
    }
}

#[test]
fn every_cell_direction_layout_and_source_of_weights_matches_the_equations() {
    let mut seed = 10;
    for op in [Op::Rnn, Op::Gru, Op::Lstm] {
        for direction in ["forward", "reverse", "bidirectional"] {
            for batch_first in [false, true] {
                for known in [false, true] {
                    for seq in [None, Some(vec![6, 2, 4])] {
                        let s = Spec {
                            direction,
                            batch_first,
                            known,
                            seq,
                            initial: seed % 2 == 0,
                            peepholes: op == Op::Lstm && seed % 3 != 0,
                            ..Spec::new(op)
                        };
                        seed += 1;
                        check(&s, seed);
                    }
                }
            }
        }
    }
}

#[test]
fn gate_variants_and_missing_inputs_and_outputs_match_the_equations() {
    let bidi = "bidirectional";
    let cases = [
        Spec {
            linear_before_reset: true,
            direction: bidi,
            initial: true,
            seq: Some(vec![3, 6, 0]),
            ..Spec::new(Op::Gru)
        },
        Spec {
            linear_before_reset: true,
            bias: false,
            known: false,
            direction: "reverse",
            ..Spec::new(Op::Gru)
        },
        Spec {
            input_forget: true,
            peepholes: true,
            direction: bidi,
            seq: Some(vec![5, 6, 1]),
            ..Spec::new(Op::Lstm)
        },
        Spec {
            outputs: [false, false, true],
            peepholes: true,
            known: false,
            ..Spec::new(Op::Lstm)
        },
        Spec {
            outputs: [true, false, false],
            direction: bidi,
            seq: Some(vec![1, 6, 3]),
            ..Spec::new(Op::Lstm)
        },
        Spec {
            outputs: [false, true, false],
            bias: false,
            direction: "reverse",
            ..Spec::new(Op::Rnn)
        },
        Spec {
            clip: Some(0.25),
            direction: bidi,
            peepholes: true,
            seq: Some(vec![2, 6, 4]),
            ..Spec::new(Op::Lstm)
        },
        Spec {
            clip: Some(0.4),
            direction: bidi,
            ..Spec::new(Op::Gru)
        },
        Spec {
            opset: 7,
            direction: bidi,
            initial: true,
            ..Spec::new(Op::Gru)
        },
        Spec {
            t: 1,
            batch: 1,
            direction: bidi,
            ..Spec::new(Op::Rnn)
        },
    ];
    for (k, s) in cases.iter().enumerate() {
        check(s, 100 + k as u64);
    }
}

#[test]
fn every_activation_function_with_its_alpha_and_beta_matches_the_equations() {
    let names = [
        "Relu",
        "Tanh",
        "Sigmoid",
        "Affine",
        "LeakyRelu",
        "ThresholdedRelu",
        "ScaledTanh",
        "HardSigmoid",
        "Elu",
        "Softsign",
        "Softplus",
    ];
    for (k, name) in names.into_iter().enumerate() {
        // The defaults of the functions that take alpha and beta, then given values (in
        // another layer: the values go to the first functions that take them).
        let plain = Act::plain(name);
        let given = Act {
            name,
            alpha: plain.takes_alpha().then_some(0.35),
            beta: plain.takes_beta().then_some(0.6),
        };
        for (j, (act, direction)) in [(plain, "forward"), (given, "reverse")]
            .into_iter()
            .enumerate()
        {
            let s = Spec {
                acts: Some(vec![vec![act]]),
                direction,
                ..Spec::new(Op::Rnn)
            };
            check(&s, 200 + 2 * k as u64 + j as u64);
        }
    }
    // Alphas and betas go, in order, to the functions that take them.
    let lstm = Spec {
        acts: Some(vec![
            vec![
                Act {
                    name: "HardSigmoid",
                    alpha: Some(0.3),
                    beta: Some(0.45),
                },
                Act::plain("Softsign"),
                Act {
                    name: "ScaledTanh",
                    alpha: Some(0.9),
                    beta: Some(1.3),
                },
            ],
            vec![
                Act::plain("Sigmoid"),
                Act {
                    name: "LeakyRelu",
                    alpha: Some(0.2),
                    beta: None,
                },
                Act {
                    name: "Elu",
                    alpha: Some(0.7),
                    beta: None,
                },
            ],
        ]),
        direction: "bidirectional",
        peepholes: true,
        seq: Some(vec![6, 3, 5]),
        ..Spec::new(Op::Lstm)
    };
    check(&lstm, 300);
    let gru = Spec {
        acts: Some(vec![vec![
            Act {
                name: "HardSigmoid",
                alpha: Some(0.25),
                beta: Some(0.55),
            },
            Act {
                name: "Affine",
                alpha: Some(0.8),
                beta: Some(-0.1),
            },
        ]]),
        // One direction's functions serve both.
        direction: "bidirectional",
        ..Spec::new(Op::Gru)
    };
    let v = data(&gru, 301);
    let mut attrs = attributes(&Spec {
        direction: "forward",
        ..gru.clone()
    });
    attrs.retain(|a| a.name.as_deref() != Some("direction"));
    attrs.push(string_attr("direction", "bidirectional"));
    let (bytes, inputs) = model(&gru, &v, attrs);
    let imp = imported(&bytes).unwrap();
    let sched = create_schedule(&imp.graph, &imp.outputs).unwrap();
    let got = run_schedule(&sched, &inputs).unwrap();
    let acts = gru.acts.clone().unwrap()[0].clone();
    let want = reference(
        &Spec {
            acts: Some(vec![acts.clone(), acts]),
            ..gru
        },
        &v,
    );
    for (g, w) in got[0].to_f64().iter().zip(&want[0]) {
        assert!((g - w).abs() < 1e-4, "{g} {w}");
    }
}

#[test]
fn a_layer_of_known_inputs_is_folded_on_the_host() {
    for op in [Op::Rnn, Op::Gru, Op::Lstm] {
        let s = Spec {
            all_known: true,
            direction: "bidirectional",
            initial: true,
            peepholes: op == Op::Lstm,
            seq: Some(vec![6, 2, 5]),
            ..Spec::new(op)
        };
        let sched = check(&s, 400);
        assert!(sched.loops.is_empty(), "{op:?}: a loop left at run time");
    }
}

#[test]
fn every_buffer_a_loop_reads_lives_through_it() {
    // Weights given at run time, read by the loop straight from the model's inputs unless
    // copied: each buffer the loop reads that is not its own must keep its place for all of
    // the loop's steps.
    for op in [Op::Rnn, Op::Gru, Op::Lstm] {
        for linear_before_reset in [false, true] {
            let s = Spec {
                known: false,
                peepholes: op == Op::Lstm,
                linear_before_reset: op == Op::Gru && linear_before_reset,
                ..Spec::new(op)
            };
            let sched = check(&s, 500);
            let plan = plan_arena(&sched);
            for l in &sched.loops {
                for b in l.items.clone().flat_map(|k| sched.items[k].bufs.clone()) {
                    let b = sched.storage(b);
                    let outside = (0..sched.items.len())
                        .filter(|k| !l.items.contains(k))
                        .any(|k| sched.items[k].bufs.iter().any(|&x| sched.storage(x) == b));
                    let input = matches!(sched.buffers[b.0 as usize].kind, BufKind::Input(_));
                    if let (true, Some(p)) = (outside || input, plan.placement(b)) {
                        assert!(
                            p.first <= l.items.start && p.last + 1 >= l.items.end,
                            "{op:?}: {b:?} lives {}..={}, the loop is {:?}",
                            p.first,
                            p.last,
                            l.items
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn invalid_attributes_are_errors_that_name_them() {
    let s = Spec::new(Op::Lstm);
    let v = data(&s, 600);
    let error = |change: &dyn Fn(&mut Vec<AttributeProto>)| {
        let mut attrs = attributes(&s);
        change(&mut attrs);
        let (bytes, _) = model(&s, &v, attrs);
        match imported(&bytes) {
            Ok(_) => panic!("imported"),
            Err(e) => e,
        }
    };
    let set = |a: AttributeProto| {
        move |attrs: &mut Vec<AttributeProto>| {
            attrs.retain(|x| x.name != a.name);
            attrs.push(a.clone());
        }
    };
    type Change = Box<dyn Fn(&mut Vec<AttributeProto>)>;
    let cases: Vec<(Change, &[&str])> = vec![
        (
            Box::new(set(strings_attr(
                "activations",
                &["Sigmoid", "Swish", "Tanh"],
            ))),
            &["activations", "Swish"],
        ),
        (
            Box::new(set(strings_attr("activations", &["Sigmoid", "Tanh"]))),
            &["activations", "2 functions"],
        ),
        (
            Box::new(set(string_attr("direction", "sideways"))),
            &["direction", "sideways"],
        ),
        (Box::new(set(int_attr("layout", 2))), &["layout", "2"]),
        (
            Box::new(set(int_attr("hidden_size", 5))),
            &["hidden_size", "5"],
        ),
        (Box::new(set(float_attr("clip", -1.0))), &["clip", "-1"]),
    ];
    for (change, words) in cases {
        let e = error(&*change);
        assert!(e.contains("layer (LSTM)"), "{e}");
        for w in words {
            assert!(e.contains(w), "{e:?} does not name {w:?}");
        }
    }
    // A Y_c asked of a GRU is an output it does not have.
    let gru = Spec::new(Op::Gru);
    let v = data(&gru, 601);
    let (bytes, _) = model(&gru, &v, attributes(&gru));
    let mut m = ModelProto::decode(bytes.as_slice()).unwrap();
    let g = m.graph.as_mut().unwrap();
    g.node[0].output.push("Y_c".into());
    g.output.push(value_info("Y_c", 1, None));
    let e = imported(&m.encode_to_vec()).expect_err("an error");
    assert!(e.contains("Y_c"), "{e}");
}
