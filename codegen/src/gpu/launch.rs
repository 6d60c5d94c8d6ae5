//! The launch table of a GPU bundle (`launch.txt`): what a runtime needs besides the sources,
//! one line per kernel in kernel-table order (the order of the schedule's kernel indices):
//!
//! ```text
//! # kiln gpu launch table v1 api=opencl
//! r_4_16_4 groups=4,1,1 local=16,1,1 shared=256 buffers=3 features=-
//! ```
//!
//! `groups` are work-groups per axis (an OpenCL global size is `groups × local`; a Vulkan
//! dispatch is `groups`), `local` threads per work-group, `shared` bytes of local memory,
//! `buffers` the number of buffer arguments (bindings 0…n-1), `features` what the device must
//! support (`half`, `double`, or `-`).

use super::{Api, GpuKernel};
use std::fmt::Write;

/// The launch table's file name in a bundle folder.
pub const LAUNCH_FILE: &str = "launch.txt";

const HEADER: &str = "# kiln gpu launch table v1 api=";

fn triple(v: [usize; 3]) -> String {
    format!("{},{},{}", v[0], v[1], v[2])
}

/// The launch table of `kernels` as text.
pub fn render(api: Api, kernels: &[GpuKernel]) -> String {
    let mut s = format!("{HEADER}{}\n", api.name());
    for k in kernels {
        let mut features: Vec<&str> = Vec::new();
        if k.uses_half {
            features.push("half");
        }
        if k.uses_double {
            features.push("double");
        }
        let features = if features.is_empty() {
            "-".to_string()
        } else {
            features.join(",")
        };
        let _ = writeln!(
            s,
            "{} groups={} local={} shared={} buffers={} features={features}",
            k.name,
            triple(k.groups),
            triple(k.local),
            k.shared_bytes,
            k.buffers
        );
    }
    s
}

/// Reads a launch table: the interface and the kernels (with empty sources). The error names
/// the line that is malformed.
pub fn parse(text: &str) -> Result<(Api, Vec<GpuKernel>), String> {
    let mut lines = text.lines().enumerate();
    let api = match lines.next().and_then(|(_, l)| l.strip_prefix(HEADER)) {
        Some("opencl") => Api::OpenCl,
        Some("vulkan") => Api::Vulkan,
        _ => return Err(format!("line 1: expected `{HEADER}opencl|vulkan`")),
    };
    let mut kernels = Vec::new();
    for (n, line) in lines {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        kernels.push(parse_line(line).map_err(|e| format!("line {}: {e}", n + 1))?);
    }
    Ok((api, kernels))
}

fn parse_line(line: &str) -> Result<GpuKernel, String> {
    let mut words = line.split_whitespace();
    let name = words.next().ok_or("no kernel name")?.to_string();
    let mut k = GpuKernel {
        name,
        src: String::new(),
        groups: [1; 3],
        local: [1; 3],
        shared_bytes: 0,
        buffers: 0,
        uses_half: false,
        uses_double: false,
    };
    let number = |v: &str| {
        v.parse::<usize>()
            .map_err(|_| format!("`{v}` is not a number"))
    };
    let three = |v: &str| -> Result<[usize; 3], String> {
        let parts: Vec<usize> = v.split(',').map(number).collect::<Result<_, _>>()?;
        parts
            .try_into()
            .map_err(|_| format!("`{v}` is not three sizes"))
    };
    for w in words {
        let (key, v) = w.split_once('=').ok_or(format!("`{w}` is not key=value"))?;
        match key {
            "groups" => k.groups = three(v)?,
            "local" => k.local = three(v)?,
            "shared" => k.shared_bytes = number(v)?,
            "buffers" => k.buffers = number(v)?,
            "features" => {
                k.uses_half = v.split(',').any(|f| f == "half");
                k.uses_double = v.split(',').any(|f| f == "double");
            }
            _ => return Err(format!("unknown key `{key}`")),
        }
    }
    Ok(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_reads_back() {
        let k = GpuKernel {
            name: "r_4_16".into(),
            src: String::new(),
            groups: [4, 2, 1],
            local: [16, 1, 1],
            shared_bytes: 64,
            buffers: 3,
            uses_half: false,
            uses_double: true,
        };
        let text = render(Api::Vulkan, std::slice::from_ref(&k));
        assert_eq!(parse(&text).unwrap(), (Api::Vulkan, vec![k]));
        assert!(parse("r_1 groups=1,1,1").unwrap_err().starts_with("line 1"));
        let bad = format!("{HEADER}opencl\nE_1 groups=1,x,1\n");
        assert_eq!(parse(&bad).unwrap_err(), "line 2: `x` is not a number");
    }
}
