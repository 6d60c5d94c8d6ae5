//! Shared by the recurrent-layer tests: the layer's specification, its inputs, a plain
//! transcription of the ONNX equations as the reference, and the one-node ONNX model.

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
use kiln_codegen::schedule::{create_schedule, Schedule};
use kiln_codegen::tensor::Tensor;
use prost::Message;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Rnn,
    Gru,
    Lstm,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Rnn => "RNN",
            Op::Gru => "GRU",
            Op::Lstm => "LSTM",
        }
    }
    pub fn gates(self) -> usize {
        match self {
            Op::Rnn => 1,
            Op::Gru => 3,
            Op::Lstm => 4,
        }
    }
    pub fn defaults(self) -> Vec<Act> {
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
pub struct Act {
    pub name: &'static str,
    pub alpha: Option<f64>,
    pub beta: Option<f64>,
}

impl Act {
    pub fn plain(name: &'static str) -> Act {
        Act {
            name,
            alpha: None,
            beta: None,
        }
    }

    pub fn eval(&self, x: f64) -> f64 {
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

    pub fn takes_alpha(&self) -> bool {
        matches!(
            self.name,
            "Affine" | "LeakyRelu" | "ThresholdedRelu" | "ScaledTanh" | "HardSigmoid" | "Elu"
        )
    }

    pub fn takes_beta(&self) -> bool {
        matches!(self.name, "Affine" | "ScaledTanh" | "HardSigmoid")
    }
}

/// One layer to test.
#[derive(Clone, Debug)]
pub struct Spec {
    pub op: Op,
    pub t: usize,
    pub batch: usize,
    pub input: usize,
    pub hidden: usize,
    pub direction: &'static str,
    pub batch_first: bool,
    /// W, R, B and P as initializers (else model inputs).
    pub known: bool,
    /// Every input an initializer: the importer folds the layer on the host.
    pub all_known: bool,
    pub bias: bool,
    pub peepholes: bool,
    pub initial: bool,
    pub seq: Option<Vec<i64>>,
    pub seq_known: bool,
    /// Per direction, when not the defaults.
    pub acts: Option<Vec<Vec<Act>>>,
    pub clip: Option<f64>,
    pub input_forget: bool,
    pub linear_before_reset: bool,
    /// Y, Y_h, Y_c.
    pub outputs: [bool; 3],
    pub opset: i64,
}

impl Spec {
    pub fn new(op: Op) -> Spec {
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

    pub fn directions(&self) -> usize {
        if self.direction == "bidirectional" {
            2
        } else {
            1
        }
    }

    pub fn acts(&self) -> Vec<Vec<Act>> {
        self.acts
            .clone()
            .unwrap_or_else(|| vec![self.op.defaults(); self.directions()])
    }
}

/// The layer's inputs, time-major, with omitted ones `None`.
pub struct Data {
    pub x: Vec<f64>,
    pub w: Vec<f64>,
    pub r: Vec<f64>,
    pub b: Option<Vec<f64>>,
    pub h0: Option<Vec<f64>>,
    pub c0: Option<Vec<f64>>,
    pub p: Option<Vec<f64>>,
}

/// Values in [-scale, scale) from a fixed sequence.
pub fn values(n: usize, seed: &mut u64, scale: f64) -> Vec<f64> {
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

pub fn data(s: &Spec, seed: u64) -> Data {
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
pub fn reference(s: &Spec, v: &Data) -> [Vec<f64>; 3] {
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
pub fn permute(v: &[f64], shape: &[usize], perm: &[usize]) -> Vec<f64> {
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

pub fn dims(d: &[usize]) -> Vec<i64> {
    d.iter().map(|&x| x as i64).collect()
}

pub fn value_info(name: &str, elem: i32, shape: Option<&[usize]>) -> ValueInfoProto {
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

pub fn attr(name: &str, kind: AttributeType) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(kind as i32),
        ..Default::default()
    }
}

pub fn int_attr(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        i: Some(v),
        ..attr(name, AttributeType::Int)
    }
}

pub fn float_attr(name: &str, v: f64) -> AttributeProto {
    AttributeProto {
        f: Some(v as f32),
        ..attr(name, AttributeType::Float)
    }
}

pub fn string_attr(name: &str, v: &str) -> AttributeProto {
    AttributeProto {
        s: Some(v.as_bytes().to_vec()),
        ..attr(name, AttributeType::String)
    }
}

pub fn strings_attr(name: &str, v: &[&str]) -> AttributeProto {
    AttributeProto {
        strings: v.iter().map(|s| s.as_bytes().to_vec()).collect(),
        ..attr(name, AttributeType::Strings)
    }
}

pub fn floats_attr(name: &str, v: &[f64]) -> AttributeProto {
    AttributeProto {
        floats: v.iter().map(|&x| x as f32).collect(),
        ..attr(name, AttributeType::Floats)
    }
}

/// The node's attributes for `s`.
pub fn attributes(s: &Spec) -> Vec<AttributeProto> {
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
pub type Given = (&'static str, Vec<f64>, Vec<usize>, bool, bool);

/// The model of one node for `s` with the values of `v`, and the tensors of its inputs (those
/// that are not initializers), in order.
pub fn model(s: &Spec, v: &Data, attrs: Vec<AttributeProto>) -> (Vec<u8>, Vec<Tensor>) {
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

pub fn imported(bytes: &[u8]) -> Result<Imported, String> {
    let m = onnx::load_bytes(bytes).map_err(|e| chain(&e))?;
    import(&m, &[]).map_err(|e| chain(&e))
}

/// Imports, schedules and interprets the layer of `s`; checks each output wanted against the
/// reference. Returns the schedule.
pub fn check(s: &Spec, seed: u64) -> Schedule {
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
