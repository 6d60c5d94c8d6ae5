//! GLSL → SPIR-V with the reference compiler `glslc` (from shaderc; `$GLSLC` overrides the
//! program), targeting Vulkan 1.1.

use super::GpuError;
use std::io::Write;
use std::process::{Command, Stdio};

/// The GLSL compiler: `$GLSLC`, else `glslc`.
pub fn glslc() -> String {
    std::env::var("GLSLC").unwrap_or_else(|_| "glslc".to_string())
}

/// Compiles the compute shader `src` of kernel `name` to SPIR-V words.
pub fn compile(name: &str, src: &str) -> Result<Vec<u32>, GpuError> {
    let cc = glslc();
    let io = |source| GpuError::Io {
        path: format!("{cc} (install it with scripts/setup-gpu.sh)"),
        source,
    };
    let mut child = Command::new(&cc)
        .args([
            "--target-env=vulkan1.1",
            "-fshader-stage=compute",
            "-O",
            "-o",
            "-",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(io)?;
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(src.as_bytes())
        .map_err(io)?;
    let out = child.wait_with_output().map_err(io)?;
    if !out.status.success() {
        return Err(GpuError::Build {
            what: format!("the GLSL of kernel {name}"),
            log: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    let words = from_bytes(&out.stdout).ok_or_else(|| GpuError::Build {
        what: format!("the GLSL of kernel {name}"),
        log: format!("{cc} wrote no SPIR-V module"),
    })?;
    Ok(words)
}

/// SPIR-V words from a little-endian module, `None` when it is not one.
pub fn from_bytes(bytes: &[u8]) -> Option<Vec<u32>> {
    const MAGIC: u32 = 0x0723_0203;
    if bytes.len() < 20 || !bytes.len().is_multiple_of(4) {
        return None;
    }
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    (words[0] == MAGIC).then_some(words)
}

/// A SPIR-V module as little-endian bytes (the `.spv` file format).
pub fn to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}
