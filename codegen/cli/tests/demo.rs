//! `kiln demo`, the README's first command after setup: every part runs on the default
//! emulated board and matches its reference, the streaming part window by window.

use std::process::Command;

#[test]
fn the_demo_runs_every_part_and_matches() {
    let o = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .arg("demo")
        .output()
        .expect("run kiln");
    let t = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("matches onnxruntime"), "{t}");
    assert!(
        t.contains("matches TensorFlow Lite Micro bit for bit"),
        "{t}"
    );
    assert!(t.contains("state: 2848 B of the 5920 B arena"), "{t}");
    assert!(
        t.contains("ms at 120 MHz (a window is 30 ms of audio)"),
        "{t}"
    );
    assert!(
        t.contains("all 24 windows match TensorFlow Lite Micro bit for bit"),
        "{t}"
    );
}
