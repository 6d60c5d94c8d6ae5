use super::*;
use crate::schedule::{Scalar, ScheduleView, WeightsDigest};
use crate::testdata::{add_relu, from_le_bytes, ELEMENTS};
use std::vec::Vec;

/// `add(out, a, b)` over 8 floats, as the C wrapper would call it.
unsafe extern "C" fn add(args: *const *mut c_void) {
    let (out, a, b) = unsafe { (arg(args, 0), arg(args, 1), arg(args, 2)) };
    for i in 0..ELEMENTS {
        out[i] = a[i] + b[i];
    }
}

unsafe extern "C" fn relu(args: *const *mut c_void) {
    let (out, x) = unsafe { (arg(args, 0), arg(args, 1)) };
    for i in 0..ELEMENTS {
        out[i] = x[i].max(0.0);
    }
}

unsafe extern "C" fn sigmoid(args: *const *mut c_void) {
    let (out, x) = unsafe { (arg(args, 0), arg(args, 1)) };
    for i in 0..ELEMENTS {
        out[i] = 1.0 / (1.0 + (-x[i]).exp());
    }
}

/// Argument `index` as 8 floats.
unsafe fn arg<'a>(args: *const *mut c_void, index: usize) -> &'a mut [f32; ELEMENTS] {
    unsafe { &mut *(*args.add(index)).cast::<[f32; ELEMENTS]>() }
}

pub(crate) static KERNELS: [KernelFn; 3] = [add, relu, sigmoid];

/// 16-byte aligned bytes, as a board's statics are.
pub(crate) struct AlignedBytes(Vec<Aligned<[u8; 16]>>);

impl AlignedBytes {
    pub(crate) fn new(bytes: &[u8]) -> Self {
        let block = |chunk: &[u8]| {
            let mut block = [0; 16];
            block[..chunk.len()].copy_from_slice(chunk);
            Aligned(block)
        };
        AlignedBytes(bytes.chunks(16).map(block).collect())
    }

    /// The first `len` bytes.
    pub(crate) fn get(&mut self, len: usize) -> &mut [u8] {
        let blocks = self.0.as_mut_ptr().cast();
        // SAFETY: the blocks are contiguous plain bytes.
        let all = unsafe { core::slice::from_raw_parts_mut(blocks, self.0.len() * 16) };
        &mut all[..len]
    }
}

#[test]
fn runs_the_test_bundle() {
    let test = add_relu();
    let bundle = ScheduleView::parse(&test.schedule, 128, 3).unwrap();
    let mut arena = AlignedBytes::new(&[0; 128]);
    let mut weights = AlignedBytes::new(&test.weights);
    let weights = weights.get(test.weights.len());
    let mut executor = Executor::new(bundle, &KERNELS, arena.get(128), weights).unwrap();
    executor
        .input_mut(0)
        .unwrap()
        .copy_from_slice(&test.inputs[0]);
    let mut events = Vec::new();
    executor.run(&mut |event| events.push(event)).unwrap();
    for (index, expected) in test.outputs.iter().enumerate() {
        let output = from_le_bytes(executor.output(index).unwrap());
        assert_eq!(output, from_le_bytes(expected), "output {index}");
    }
    let kernels = [0, 1, 2].map(KernelIndex);
    let expected: Vec<_> = (0..3)
        .flat_map(|step| {
            let kernel = kernels[step as usize];
            [
                KernelEvent::Before { step, kernel },
                KernelEvent::After { step, kernel },
            ]
        })
        .collect();
    assert_eq!(events, expected);
    assert!(executor.input_mut(1).is_none());
    assert!(executor.output(2).is_none());
}

#[test]
fn mismatched_runtime_is_refused() {
    let test = add_relu();
    let new = |kernels: &[KernelFn], arena: &mut [u8], weights: &[u8]| {
        let bundle = ScheduleView::parse(&test.schedule, 256, 3).unwrap();
        Executor::new(bundle, kernels, arena, weights).err()
    };
    let mut arena = AlignedBytes::new(&[0; 256]);
    let mut weights = AlignedBytes::new(&test.weights);
    let weights = &*weights.get(32);

    let error = new(&KERNELS[..2], arena.get(128), weights);
    assert_eq!(
        error,
        Some(BundleError::KernelCountMismatch {
            bundle: 3,
            runtime: 2
        })
    );
    let error = new(&KERNELS, arena.get(96), weights);
    assert_eq!(
        error,
        Some(BundleError::ArenaTooSmall {
            needed: 128,
            available: 96
        })
    );
    let error = new(&KERNELS, &mut arena.get(200)[4..], weights);
    assert!(matches!(
        error,
        Some(BundleError::Misaligned {
            region: Region::Arena,
            ..
        })
    ));
    let error = new(&KERNELS, arena.get(128), &weights[..16]);
    assert_eq!(
        error,
        Some(BundleError::WeightsSizeMismatch {
            found: 16,
            expected: 32
        })
    );
    let mut other = AlignedBytes::new(&[7; 32]);
    let error = new(&KERNELS, arena.get(128), other.get(32));
    assert!(matches!(
        error,
        Some(BundleError::WeightsChecksumMismatch { .. })
    ));
}

/// Runs `f` on an executor of the test bundle over a 128-byte arena.
fn with_test_executor(f: impl FnOnce(&mut Executor<'_>, &crate::testdata::TestBundle)) {
    let test = add_relu();
    let bundle = ScheduleView::parse(&test.schedule, 128, 3).unwrap();
    let mut arena = Aligned::<[u8; 128]>::zeroed();
    let mut weights = AlignedBytes::new(&test.weights);
    let weights = weights.get(test.weights.len());
    let mut executor = Executor::new(bundle, &KERNELS, &mut arena.0, weights).unwrap();
    f(&mut executor, &test);
}

#[test]
fn typed_views_run_the_test_bundle() {
    with_test_executor(|executor, test| {
        let x: [f32; ELEMENTS] = core::array::from_fn(|i| from_le_bytes(&test.inputs[0])[i]);
        *executor.input_array_mut::<f32, ELEMENTS>(0).unwrap() = x;
        executor.run(&mut |_| {}).unwrap();
        for (index, expected) in test.outputs.iter().enumerate() {
            let output = executor.output_array::<f32, ELEMENTS>(index).unwrap();
            assert_eq!(output.as_slice(), from_le_bytes(expected), "output {index}");
        }
    });
}

#[test]
fn typed_views_refuse_other_types_and_lengths() {
    with_test_executor(|executor, _| {
        let input = Place::Input { index: 0 };
        let wrong_type = BundleError::TensorTypeMismatch {
            place: input,
            dtype: Scalar::F32,
            elements: ELEMENTS as u64,
            asked_dtype: Scalar::I32,
            asked_elements: ELEMENTS,
        };
        assert_eq!(
            executor.input_array_mut::<i32, ELEMENTS>(0).unwrap_err(),
            wrong_type
        );
        let wrong_len = executor.output_array::<f32, 4>(1).unwrap_err();
        assert!(matches!(
            wrong_len,
            BundleError::TensorTypeMismatch {
                asked_elements: 4,
                ..
            }
        ));
        assert_eq!(
            executor.output_array::<f32, ELEMENTS>(2).unwrap_err(),
            BundleError::NoSuchTensor {
                place: Place::Output { index: 2 }
            }
        );
    });
}

#[test]
fn a_loop_runs_its_body_over_moving_windows() {
    use crate::schedule::{encode, Arg, Entry, Span, Step};
    use crate::testdata::{le_bytes, manifest};
    // out[t] = x + out[t - 1] for t = 1, 2, 3 (slot t of the arena), three times one kernel.
    let test = add_relu();
    let slot = |s: u32| Span::new(s * 32, 32);
    let add = Step::new(
        KernelIndex(0),
        &[
            Arg::ArenaWindow {
                span: slot(1),
                stride: 32,
            },
            Arg::Arena(slot(0)),
            Arg::ArenaWindow {
                span: slot(0),
                stride: 32,
            },
        ],
    )
    .unwrap();
    let schedule = encode(
        &manifest(&test.weights),
        &[Entry::Loop { count: 3, steps: 1 }, Entry::Call(add)],
    );
    let bundle = ScheduleView::parse(&schedule, 128, 3).unwrap();
    let mut arena = AlignedBytes::new(&[0; 128]);
    let mut weights = AlignedBytes::new(&test.weights);
    let weights = weights.get(test.weights.len());
    let mut executor = Executor::new(bundle, &KERNELS, arena.get(128), weights).unwrap();
    let x = [1.5f32; ELEMENTS];
    executor
        .input_mut(0)
        .unwrap()
        .copy_from_slice(&le_bytes(&x));
    let mut steps = Vec::new();
    executor
        .run(&mut |event| {
            if let KernelEvent::Before { step, .. } = event {
                steps.push(step)
            }
        })
        .unwrap();
    assert_eq!(steps, [0, 0, 0]);
    // The outputs are slots 2 and 3.
    assert_eq!(from_le_bytes(executor.output(0).unwrap()), [4.5; ELEMENTS]);
    assert_eq!(from_le_bytes(executor.output(1).unwrap()), [6.0; ELEMENTS]);
}

/// `out = state + x`, then `state = out + 0`: a running sum kept between runs, starting from
/// `init` (in the weights, before 8 zeros) or from zeros.
pub(crate) fn accumulator(init: Option<&[f32]>) -> (Vec<u8>, Vec<u8>) {
    use crate::schedule::{encode, Arg, Manifest, StateDesc, StateInit, Step, TensorDesc};
    use crate::testdata::le_bytes;
    let slot = |k: u32| Span::new(k * 32, 32);
    let mut weights = le_bytes(&[0.0; ELEMENTS]);
    let init = match init {
        Some(values) => {
            weights.extend(le_bytes(values));
            StateInit::Weights(slot(1))
        }
        None => StateInit::Zeros,
    };
    let tensor = |k| TensorDesc::new(slot(k), Scalar::F32, &[ELEMENTS as u32]).unwrap();
    let state = StateDesc {
        span: slot(0),
        init,
    };
    let manifest = Manifest::new(
        96,
        WeightsDigest::of(&weights),
        3,
        &[tensor(1)],
        &[tensor(2)],
    )
    .unwrap()
    .with_state(state);
    let arena = |k| Arg::Arena(slot(k));
    let steps = [
        Step::new(KernelIndex(0), &[arena(2), arena(0), arena(1)]).unwrap(),
        Step::new(KernelIndex(0), &[arena(0), arena(2), Arg::Weights(slot(0))]).unwrap(),
    ];
    let entries: Vec<_> = steps
        .into_iter()
        .map(crate::schedule::Entry::Call)
        .collect();
    (encode(&manifest, &entries), weights)
}

/// Runs the accumulator on ones `runs` times: the last output.
fn accumulate(executor: &mut Executor<'_>, runs: usize) -> Vec<f32> {
    for _ in 0..runs {
        let ones = crate::testdata::le_bytes(&[1.0; ELEMENTS]);
        executor.input_mut(0).unwrap().copy_from_slice(&ones);
        executor.run(&mut |_| {}).unwrap();
    }
    from_le_bytes(executor.output(0).unwrap())
}

#[test]
fn state_persists_between_runs_until_a_reset() {
    let init: Vec<f32> = (0..ELEMENTS).map(|i| i as f32 * 10.0).collect();
    let (schedule, weights) = accumulator(Some(&init));
    let bundle = ScheduleView::parse(&schedule, 96, 3).unwrap();
    // The arena holds garbage where the state lives: `new` starts it from its initial values.
    let mut arena = AlignedBytes::new(&[0xAB; 96]);
    let mut aligned = AlignedBytes::new(&weights);
    let weights = aligned.get(weights.len());
    let mut executor = Executor::new(bundle, &KERNELS, arena.get(96), weights).unwrap();
    let plus = |k: f32| init.iter().map(|v| v + k).collect::<Vec<_>>();
    assert_eq!(accumulate(&mut executor, 1), plus(1.0));
    assert_eq!(accumulate(&mut executor, 2), plus(3.0));
    assert_eq!(from_le_bytes(executor.state()), plus(3.0));
    executor.reset();
    assert_eq!(from_le_bytes(executor.state()), init);
    assert_eq!(accumulate(&mut executor, 1), plus(1.0));
}

#[test]
fn zero_initialized_state_starts_from_zeros() {
    let (schedule, weights) = accumulator(None);
    let bundle = ScheduleView::parse(&schedule, 96, 3).unwrap();
    let mut arena = AlignedBytes::new(&[0xAB; 96]);
    let mut aligned = AlignedBytes::new(&weights);
    let weights = aligned.get(weights.len());
    let mut executor = Executor::new(bundle, &KERNELS, arena.get(96), weights).unwrap();
    assert_eq!(accumulate(&mut executor, 4), [4.0; ELEMENTS]);
}

#[test]
fn state_outside_its_regions_is_refused() {
    use crate::schedule::{encode, Manifest, StateDesc, StateInit};
    let weights = [0u8; 32];
    let base = Manifest::new(64, WeightsDigest::of(&weights), 3, &[], &[]).unwrap();
    let parse = |state: StateDesc| {
        let schedule = encode(&base.clone().with_state(state), &[]);
        ScheduleView::parse(&schedule, 64, 3).err()
    };
    let past_arena = StateDesc {
        span: Span::new(48, 32),
        init: StateInit::Zeros,
    };
    assert!(matches!(
        parse(past_arena),
        Some(BundleError::SliceOutOfRange {
            place: Place::State,
            ..
        })
    ));
    let short_init = StateDesc {
        span: Span::new(0, 32),
        init: StateInit::Weights(Span::new(0, 16)),
    };
    let error = parse(short_init).unwrap();
    assert_eq!(
        error,
        BundleError::StateInitMismatch {
            state_bytes: 32,
            init_bytes: 16
        }
    );
    assert_eq!(
        std::format!("{error}"),
        "the state is 32 bytes, its initial values 16"
    );
}
