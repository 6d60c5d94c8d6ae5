use super::*;
use std::process::Command;

/// Whether `board` can run a peer image here: it is emulated and its QEMU is installed (the
/// plugin is built on first use).
fn ready(board: &str) -> Result<()> {
    let info = kiln_runners::board::info(board)?;
    let Some(qemu) = info.qemu.filter(|q| !q.is_empty()) else {
        bail!("{board} is not an emulated board");
    };
    let version = Command::new(&qemu[0]).arg("--version").output();
    if !version.is_ok_and(|o| o.status.success()) {
        bail!("QEMU (`{}`), which runs {board}, is missing", qemu[0]);
    }
    Ok(())
}

/// The first marks of the ad01_int8 image on qemu-an386 (5 vectors, one `Invoke()` each).
const AD_MARKS: [(u64, u64); 4] = [
    (543_023, 720_996),
    (1_125_967, 1_436_035),
    (1_139_452, 1_453_484),
    (1_722_420, 2_168_607),
];

#[test]
fn vector_zero_is_the_first_pair_of_marks() {
    assert_eq!(pairs(&AD_MARKS), [(582_944, 715_039), (582_968, 715_123)]);
}

#[test]
fn a_per_operator_image_gives_the_first_vectors_operators() {
    // Two operators, two vectors: the first two spans are vector 0's.
    let spans = [(10, 15), (20, 30), (11, 16), (21, 31)];
    assert_eq!(first_run(&spans, 2).unwrap(), [15, 30]);
    let err = first_run(&spans, 3).unwrap_err().to_string();
    assert!(err.contains("4 marked kernels"), "{err}");
    assert!(first_run(&[], 2).is_err());
}

#[test]
fn the_images_lie_under_the_peer_folder_by_the_tflite_name() {
    let elf = image("an386", Path::new("x/vww_96_int8.tflite"), "-perop");
    assert_eq!(
        shown(&elf),
        "tests/peers/tflm-cmsis-nn/an386/vww_96_int8-perop.elf"
    );
    let cores: Vec<Option<&str>> = CORES.iter().map(|c| c.peer).collect();
    assert_eq!(cores, [Some("an386"), Some("an505"), None, None]);
}

/// The smallest image, ad01_int8 on the emulated M4, runs under the board's QEMU command line
/// with the plugin, passes its own check of its outputs (exit status 0), and its first
/// `Invoke()` has the instructions it always has and an estimate of more cycles than that.
#[test]
fn the_ad_image_runs_on_qemu_an386() {
    let ready = ready("qemu-an386");
    let what = "QEMU and the instruction-count plugin for the TFLM + CMSIS-NN images";
    if !kiln_tests::available(what, ready) {
        return;
    }
    let elf = image("an386", Path::new("ad01_int8.tflite"), "");
    let n = invoke("qemu-an386", &elf).unwrap();
    assert_eq!(n.instructions, 582_944, "{n:?}");
    assert!(n.cycles > n.instructions, "{n:?}");
    // The model (277,488 B) and the kernels, not the 6,400 B of vectors.
    assert!((277_488..400_000).contains(&n.flash), "{n:?}");
}
