//! GLSL → SPIR-V with the reference compiler `glslc` (from shaderc; `$GLSLC` overrides the
//! program), targeting Vulkan 1.1. Many shaders are compiled by one run of the compiler.

use super::GpuError;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The GLSL compiler: `$GLSLC`, else `glslc`.
pub fn glslc() -> String {
    std::env::var("GLSLC").unwrap_or_else(|_| "glslc".to_string())
}

/// Compiles many compute shaders (name, GLSL) with one run of the compiler, in a temporary
/// folder; returns their SPIR-V in order. A failure's log names the kernels.
pub fn compile_all(shaders: &[(&str, &str)]) -> Result<Vec<Vec<u32>>, GpuError> {
    static RUN: AtomicUsize = AtomicUsize::new(0);
    let n = RUN.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("kiln-glslc-{}-{n}", std::process::id()));
    let result = compile_in(&dir, shaders);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn compile_in(dir: &Path, shaders: &[(&str, &str)]) -> Result<Vec<Vec<u32>>, GpuError> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| GpuError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let mut files = Vec::with_capacity(shaders.len());
    for (i, (_, src)) in shaders.iter().enumerate() {
        let f = format!("k{i}.comp");
        std::fs::write(dir.join(&f), src).map_err(io(&dir.join(&f)))?;
        files.push(f);
    }
    if files.is_empty() {
        return Ok(Vec::new());
    }
    let cc = glslc();
    let out = Command::new(&cc)
        .current_dir(dir)
        .args(["-c", "--target-env=vulkan1.1", "-O"])
        .args(&files)
        .output()
        .map_err(|source| GpuError::Io {
            path: format!("{cc} (install it with scripts/setup-gpu.sh)"),
            source,
        })?;
    if !out.status.success() {
        let mut log = String::from_utf8_lossy(&out.stderr).into_owned();
        for (f, (name, _)) in files.iter().zip(shaders).rev() {
            log = log.replace(&format!("{f}:"), &format!("{name}.comp:"));
        }
        return Err(GpuError::Build {
            what: "the GLSL of the kernels".into(),
            log,
        });
    }
    files
        .iter()
        .zip(shaders)
        .map(|(f, (name, _))| {
            let p = dir.join(format!("{f}.spv"));
            let bytes = std::fs::read(&p).map_err(io(&p))?;
            from_bytes(&bytes).ok_or_else(|| GpuError::Build {
                what: format!("the GLSL of kernel {name}"),
                log: format!("{cc} wrote no SPIR-V module"),
            })
        })
        .collect()
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
