//! ONNX `RNN`, `GRU` and `LSTM` against a plain transcription of the operator's equations, in
//! the forms the ONNX backend cases leave out: reverse and bidirectional layers, batch-first
//! layout, sequences shorter than the input for some batch elements, peepholes, coupled gates,
//! `linear_before_reset`, clipping, every activation function, weights known or computed at
//! run time, long sequences; and the time loop's shape in the schedule.

use kiln_test_support::rnn;

use kiln_codegen::interpret::run_schedule;
use kiln_codegen::onnx::proto::{AttributeProto, ModelProto};
use kiln_codegen::plan::plan_arena;
use kiln_codegen::schedule::{create_schedule, BufKind};
use prost::Message;
use rnn::*;

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
