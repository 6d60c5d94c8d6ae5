use super::*;
use crate::error::{BundleError, CapacityError, Place, Region};
use crate::testdata::{add_relu, calls, manifest, steps};
use std::vec::Vec;

const ARENA: usize = 128;
const KERNELS: usize = 3;

fn parse(schedule: &[u8]) -> Result<ScheduleView<'_>, BundleError> {
    ScheduleView::parse(schedule, ARENA, KERNELS)
}

/// Re-encodes the test bundle after `edit` changes its manifest or steps.
fn edited(edit: impl FnOnce(&mut Manifest, &mut Vec<Step>)) -> Vec<u8> {
    let bundle = add_relu();
    let (mut manifest, mut steps) = (manifest(&bundle.weights), steps());
    edit(&mut manifest, &mut steps);
    encode(&manifest, &calls(steps))
}

/// Recomputes the header's length and checksum, so a damaged body reaches the decoder.
fn resealed(mut schedule: Vec<u8>) -> Vec<u8> {
    let body_start = header_len(&schedule);
    let body = schedule.split_off(body_start);
    let header = Header {
        magic: MAGIC,
        version: FORMAT_VERSION,
        body_bytes: body.len() as u32,
        body_crc: checksum(&body),
    };
    let mut out = postcard::to_extend(&header, Vec::new()).unwrap();
    out.extend(body);
    out
}

fn header_len(schedule: &[u8]) -> usize {
    let (_, rest) = postcard::take_from_bytes::<Header>(schedule).unwrap();
    schedule.len() - rest.len()
}

#[test]
fn round_trip() {
    let bundle = add_relu();
    let parsed = parse(&bundle.schedule).unwrap();
    assert_eq!(parsed.manifest(), &manifest(&bundle.weights));
    assert_eq!(parsed.entries().collect::<Vec<_>>(), calls(steps()));
    assert_eq!(parsed.step_count(), 3);
    assert_eq!(
        read_manifest(&bundle.schedule).unwrap().arena_bytes,
        ARENA as u32
    );
}

#[test]
fn flipped_body_byte_is_a_checksum_mismatch() {
    let mut schedule = add_relu().schedule;
    let last = schedule.len() - 1;
    schedule[last] ^= 0x01;
    assert!(matches!(
        parse(&schedule),
        Err(BundleError::ChecksumMismatch { .. })
    ));
}

#[test]
fn bad_magic_wrong_version_truncated_and_trailing_are_refused() {
    let schedule = add_relu().schedule;
    let mut magic = schedule.clone();
    magic[0] = b'X';
    assert_eq!(
        parse(&magic).unwrap_err(),
        BundleError::BadMagic { found: *b"XILN" }
    );
    let mut version = schedule.clone();
    version[4] = 1;
    let expected = BundleError::VersionMismatch {
        found: 1,
        expected: FORMAT_VERSION,
    };
    assert_eq!(parse(&version).unwrap_err(), expected);
    assert_eq!(parse(&schedule[..3]).unwrap_err(), BundleError::Truncated);
    assert_eq!(
        parse(&schedule[..schedule.len() - 1]).unwrap_err(),
        BundleError::Truncated
    );
    let mut trailing = schedule.clone();
    trailing.push(0);
    assert_eq!(
        parse(&trailing).unwrap_err(),
        BundleError::TrailingBytes { count: 1 }
    );
}

#[test]
fn runtime_mismatches_are_refused() {
    let schedule = add_relu().schedule;
    let small = ScheduleView::parse(&schedule, 64, KERNELS).unwrap_err();
    assert_eq!(
        small,
        BundleError::ArenaTooSmall {
            needed: ARENA,
            available: 64
        }
    );
    let kernels = ScheduleView::parse(&schedule, ARENA, 2).unwrap_err();
    assert_eq!(
        kernels,
        BundleError::KernelCountMismatch {
            bundle: 3,
            runtime: 2
        }
    );
}

#[test]
fn kernel_index_out_of_range_is_refused() {
    let schedule = edited(|_, steps| steps[1].kernel = KernelIndex(3));
    let expected = BundleError::KernelOutOfRange {
        step: 1,
        kernel: 3,
        kernel_count: 3,
    };
    assert_eq!(parse(&schedule).unwrap_err(), expected);
}

#[test]
fn argument_out_of_range_is_refused() {
    let schedule = edited(|_, steps| steps[2].args[0] = Arg::Arena(Span::new(112, 32)));
    let expected = BundleError::SliceOutOfRange {
        place: Place::StepArg { step: 2, arg: 0 },
        region: Region::Arena,
        offset: 112,
        bytes: 32,
        region_bytes: 128,
    };
    assert_eq!(parse(&schedule).unwrap_err(), expected);
    let weights = edited(|_, steps| steps[0].args[2] = Arg::Weights(Span::new(4, 32)));
    let error = parse(&weights).unwrap_err();
    assert!(matches!(
        error,
        BundleError::SliceOutOfRange {
            region: Region::Weights,
            ..
        }
    ));
    let wrapping = edited(|_, steps| steps[0].args[0] = Arg::Arena(Span::new(u32::MAX, 2)));
    assert!(matches!(
        parse(&wrapping),
        Err(BundleError::SliceOutOfRange { .. })
    ));
}

#[test]
fn model_tensors_are_checked() {
    let outside = edited(|manifest, _| manifest.outputs[1].span = Span::new(128, 32));
    let error = parse(&outside).unwrap_err();
    let place = Place::Output { index: 1 };
    assert!(matches!(error, BundleError::SliceOutOfRange { place: p, .. } if p == place));
    let shape = edited(|manifest, _| manifest.inputs[0].shape[1] = 7);
    let expected = BundleError::ShapeMismatch {
        place: Place::Input { index: 0 },
        bytes: 32,
        shape_bytes: 28,
    };
    assert_eq!(parse(&shape).unwrap_err(), expected);
}

#[test]
fn every_single_bit_flip_is_refused() {
    let schedule = add_relu().schedule;
    for index in 0..schedule.len() {
        for bit in 0..8 {
            let mut damaged = schedule.clone();
            damaged[index] ^= 1 << bit;
            assert!(
                parse(&damaged).is_err(),
                "flip of bit {bit} of byte {index} accepted"
            );
        }
    }
}

#[test]
fn resealed_damage_never_panics() {
    let schedule = add_relu().schedule;
    let body_start = header_len(&schedule);
    for index in body_start..schedule.len() {
        for value in [0x00, 0x01, 0x7f, 0x80, 0xff, schedule[index] ^ 0x55] {
            let mut damaged = schedule.clone();
            damaged[index] = value;
            let _ = parse(&resealed(damaged));
        }
        let mut cut = schedule.clone();
        cut.remove(index);
        let _ = parse(&resealed(cut));
    }
    for len in 0..schedule.len() {
        let _ = parse(&schedule[..len]);
    }
}

proptest::proptest! {
    /// Whatever a resealed (checksum-passing) schedule holds, parsing never panics, and what
    /// it accepts names only kernels and slices within range.
    #[test]
    fn accepted_schedules_stay_in_range(
        edits in proptest::collection::vec((0usize..256, proptest::num::u8::ANY), 1..8),
    ) {
        let mut schedule = add_relu().schedule;
        let body_start = header_len(&schedule);
        for (index, value) in edits {
            let index = body_start + index % (schedule.len() - body_start);
            schedule[index] = value;
        }
        let schedule = resealed(schedule);
        if let Ok(bundle) = parse(&schedule) {
            let manifest = bundle.manifest();
            for call in bundle.calls() {
                proptest::prop_assert!(usize::from(call.kernel.0) < KERNELS);
                for (region, span) in call.args {
                    let region_bytes = match region {
                        Region::Arena => manifest.arena_bytes,
                        Region::Weights => manifest.weights.bytes,
                    };
                    proptest::prop_assert!(span.within(region_bytes).is_some());
                }
            }
            for tensor in bundle.inputs().iter().chain(bundle.outputs()) {
                proptest::prop_assert!(tensor.span.within(manifest.arena_bytes).is_some());
            }
            proptest::prop_assert!(manifest.arena_bytes as usize <= ARENA);
        }
    }
}

#[test]
fn capacities_are_errors_when_building() {
    let args = [Arg::Arena(Span::new(0, 4)); MAX_STEP_ARGS + 1];
    let error = Step::new(KernelIndex(0), &args).unwrap_err();
    assert_eq!(
        error,
        CapacityError::StepArgs {
            len: MAX_STEP_ARGS + 1
        }
    );
    let error = TensorDesc::new(Span::new(0, 4), Scalar::F32, &[1; MAX_RANK + 1]).unwrap_err();
    assert_eq!(error, CapacityError::Rank { len: MAX_RANK + 1 });
    let tensor = TensorDesc::new(Span::new(0, 4), Scalar::F32, &[1]).unwrap();
    let many = std::vec![tensor; MAX_MODEL_TENSORS + 1];
    let digest = WeightsDigest::of(&[]);
    let error = Manifest::new(4, digest, 1, &many, &[]).unwrap_err();
    assert_eq!(
        error,
        CapacityError::ModelTensors {
            len: MAX_MODEL_TENSORS + 1
        }
    );
}

#[test]
fn errors_say_what_is_wrong() {
    use std::string::ToString;
    let version = BundleError::VersionMismatch {
        found: 2,
        expected: 1,
    };
    assert_eq!(
        version.to_string(),
        "schedule format version 2, this runtime reads version 1"
    );
    let slice = BundleError::SliceOutOfRange {
        place: Place::StepArg { step: 3, arg: 1 },
        region: Region::Weights,
        offset: 8,
        bytes: 32,
        region_bytes: 16,
    };
    let expected = "step 3 argument 1: 32 bytes at weights offset 8 reach past its 16 bytes";
    assert_eq!(slice.to_string(), expected);
}

#[test]
fn a_rank_seven_output_round_trips() {
    let shape = [1, 2, 1, 2, 1, 1, 2];
    let schedule = edited(|manifest, _| {
        manifest.outputs[0] =
            TensorDesc::new(manifest.outputs[0].span, Scalar::F32, &shape).unwrap();
    });
    let parsed = parse(&schedule).unwrap();
    assert_eq!(parsed.manifest().outputs[0].shape.as_slice(), &shape);
}

/// The test bundle's steps with the last two in a loop of `count`, whose first argument is a
/// window moving `stride` bytes.
fn looped(count: u32, stride: i32) -> Vec<Entry> {
    let mut steps = steps();
    steps[2].args[0] = Arg::ArenaWindow {
        span: steps[2].args[0].at(0).unwrap().1,
        stride,
    };
    let mut entries = calls(steps);
    entries.insert(1, Entry::Loop { count, steps: 2 });
    entries
}

#[test]
fn loops_repeat_their_body_and_move_their_windows() {
    let bundle = add_relu();
    let schedule = encode(&manifest(&bundle.weights), &looped(3, -16));
    let parsed = parse(&schedule).unwrap();
    assert_eq!((parsed.entry_count(), parsed.step_count()), (4, 3));
    assert_eq!(parsed.call_count(), 7);
    let calls: Vec<Call> = parsed.calls().collect();
    let steps: Vec<u32> = calls.iter().map(|c| c.step).collect();
    assert_eq!(steps, [0, 1, 2, 1, 2, 1, 2]);
    let moved: Vec<u32> = calls
        .iter()
        .filter(|c| c.step == 2)
        .map(|c| c.args[0].1.offset)
        .collect();
    assert_eq!(moved, [96, 80, 64]);
    let empty = encode(&manifest(&bundle.weights), &looped(0, 16));
    let parsed = parse(&empty).unwrap();
    assert_eq!(parsed.calls().map(|c| c.step).collect::<Vec<_>>(), [0]);
}

#[test]
fn malformed_loops_are_refused() {
    let weights = add_relu().weights;
    let refused = |entries: Vec<Entry>| parse(&encode(&manifest(&weights), &entries)).unwrap_err();
    // The window's last iteration lies past the arena.
    let past = refused(looped(3, 16));
    assert!(
        matches!(
            past,
            BundleError::SliceOutOfRange {
                place: Place::StepArg { step: 3, arg: 0 },
                offset: 128,
                ..
            }
        ),
        "{past:?}"
    );
    // A window outside any loop.
    let mut outside = looped(1, 0);
    outside.remove(1);
    assert_eq!(refused(outside), BundleError::MalformedLoop { step: 2 });
    // A loop reaching past the last entry, and a loop in a loop.
    let mut long = looped(1, 0);
    long[1] = Entry::Loop { count: 1, steps: 3 };
    assert_eq!(refused(long), BundleError::MalformedLoop { step: 1 });
    let mut nested = looped(1, 0);
    nested.insert(2, Entry::Loop { count: 2, steps: 1 });
    nested[1] = Entry::Loop { count: 1, steps: 3 };
    assert_eq!(refused(nested), BundleError::MalformedLoop { step: 2 });
}
