//! Writes the add-relu test bundle's schedule, weights and test vectors, or checks a board's
//! outputs against the expected ones.
//!
//! ```text
//! cargo run -p kiln-firmware --features std --example testdata -- write boards/testdata/add-relu
//! cargo run -p kiln-firmware --features std --example testdata -- check IO_DIR
//! ```
//!
//! `write` puts `schedule.bin` and `weights.bin` in the bundle folder, and `input_0.bin`,
//! `expected_0.bin`, `expected_1.bin` in its `io/` folder. `check` compares each
//! `output_N.bin` of an I/O folder with `expected_N.bin` there.

use kiln_firmware::testdata::{add_relu, from_le_bytes};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::{env, fs, io};

/// Largest difference accepted between a board's output and the host's: `expf` comes from
/// different libraries on the two.
const TOLERANCE: f32 = 1e-6;

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.as_slice() {
        [command, dir] if command == "write" => write(Path::new(dir)),
        [command, dir] if command == "check" => check(Path::new(dir)),
        _ => Err("usage: testdata write BUNDLE_DIR | testdata check IO_DIR".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("testdata: {message}");
            ExitCode::FAILURE
        }
    }
}

fn write(bundle_dir: &Path) -> Result<(), String> {
    let bundle = add_relu();
    let io_dir = bundle_dir.join("io");
    fs::create_dir_all(&io_dir).map_err(|e| describe(&io_dir, e))?;
    let mut files = vec![
        (bundle_dir.join("schedule.bin"), &bundle.schedule),
        (bundle_dir.join("weights.bin"), &bundle.weights),
    ];
    for (index, input) in bundle.inputs.iter().enumerate() {
        files.push((io_dir.join(format!("input_{index}.bin")), input));
    }
    for (index, output) in bundle.outputs.iter().enumerate() {
        files.push((io_dir.join(format!("expected_{index}.bin")), output));
    }
    for (path, bytes) in files {
        fs::write(&path, bytes).map_err(|e| describe(&path, e))?;
    }
    Ok(())
}

fn check(io_dir: &Path) -> Result<(), String> {
    for index in 0..add_relu().outputs.len() {
        let read = |name: String| -> Result<Vec<f32>, String> {
            let path: PathBuf = io_dir.join(name);
            fs::read(&path)
                .map(|b| from_le_bytes(&b))
                .map_err(|e| describe(&path, e))
        };
        let output = read(format!("output_{index}.bin"))?;
        let expected = read(format!("expected_{index}.bin"))?;
        if output.len() != expected.len() {
            return Err(format!(
                "output {index}: {} values, expected {}",
                output.len(),
                expected.len()
            ));
        }
        let error = output
            .iter()
            .zip(&expected)
            .map(|(o, e)| (o - e).abs())
            .fold(0.0, f32::max);
        if error.is_nan() || error > TOLERANCE {
            return Err(format!("output {index}: {output:?}, expected {expected:?}"));
        }
        println!(
            "output {index}: {} values match (largest difference {error:e})",
            output.len()
        );
    }
    Ok(())
}

fn describe(path: &Path, error: io::Error) -> String {
    format!("{}: {error}", path.display())
}
