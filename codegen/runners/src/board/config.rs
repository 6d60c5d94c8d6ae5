//! Reading a board's own files: the `key = "value"` settings of its `.cargo/config.toml` (the
//! target, target dir, runner and linker) and the `MEMORY` regions of its `memory.x`.
//!
//! Only what the board folders use is understood: string settings under `[section]` headers,
//! and regions whose `ORIGIN`/`LENGTH` are sums and differences of numbers with an optional
//! `K` or `M` suffix. Anything else is skipped, or an error naming the line.

use kiln_codegen::Cpu;
use std::collections::HashMap;

/// The string settings of a cargo config, keyed by `section.key` (`build.target`,
/// `target.thumbv6m-none-eabi.runner`).
#[derive(Debug, Default)]
pub struct CargoConfig {
    values: HashMap<String, String>,
}

impl CargoConfig {
    pub fn parse(text: &str) -> Self {
        let mut values = HashMap::new();
        let mut section = String::new();
        for line in text.lines().map(str::trim).filter(|l| !l.starts_with('#')) {
            if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = header.trim().to_string();
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let value = value.trim();
            if let Some(string) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
                values.insert(format!("{section}.{}", key.trim()), string.to_string());
            }
        }
        CargoConfig { values }
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }
}

/// The CPU a board's config names (`[env] KILN_CPU`), which must build for its `target`.
pub fn cpu_of(config: &CargoConfig, target: &str) -> Result<Cpu, String> {
    let var = kiln_codegen::CPU_VAR;
    let name = config
        .get(&format!("env.{var}"))
        .ok_or_else(|| format!("no {var} under [env]: the board's CPU is not named"))?;
    let cpu = Cpu::by_name(name)
        .ok_or_else(|| format!("{var} = {name:?} is not one of {}", Cpu::names().join(", ")))?;
    match cpu.info().triple == Some(target) {
        true => Ok(cpu),
        false => Err(format!(
            "{var} = {name:?} does not build for target {target}"
        )),
    }
}

/// The memory a board's linker script gives the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryMap {
    /// Bytes of the region the code and read-only data go to.
    pub flash_bytes: usize,
    /// Bytes of the region the statics and the stack go to.
    pub ram_bytes: usize,
    /// Both are the same region: code, weights, arena and stack share it.
    pub code_in_ram: bool,
}

/// Reads `memory.x`: the region named `FLASH`, or the one `REGION_TEXT` is an alias of, holds
/// the code; the region named `RAM`, or the one `REGION_BSS` is an alias of, the statics.
pub fn memory_map(text: &str) -> Result<MemoryMap, String> {
    let text = strip_comments(text);
    let regions = regions(&text)?;
    let aliases = aliases(&text);
    let pick = |alias: &str, default: &str| -> Result<(String, usize), String> {
        let name = aliases.get(alias).map_or(default, String::as_str);
        match regions.get(name) {
            Some(&bytes) => Ok((name.to_string(), bytes)),
            None => Err(format!("no MEMORY region {name} (for {alias})")),
        }
    };
    let (flash, flash_bytes) = pick("REGION_TEXT", "FLASH")?;
    let (ram, ram_bytes) = pick("REGION_BSS", "RAM")?;
    Ok(MemoryMap {
        flash_bytes,
        ram_bytes,
        code_in_ram: flash == ram,
    })
}

fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        rest = rest[start..]
            .find("*/")
            .map_or("", |end| &rest[start + end + 2..]);
    }
    out.push_str(rest);
    out
}

/// `NAME (attributes) : ORIGIN = expr, LENGTH = expr` lines of the `MEMORY { … }` block.
fn regions(text: &str) -> Result<HashMap<String, usize>, String> {
    let start = text.find("MEMORY").ok_or("no MEMORY block")?;
    let block = &text[start..];
    let open = block.find('{').ok_or("MEMORY block without `{`")?;
    let close = block.find('}').ok_or("MEMORY block without `}`")?;
    let mut regions = HashMap::new();
    for line in block[open + 1..close].lines().map(str::trim) {
        if line.is_empty() {
            continue;
        }
        let (name, spec) = line
            .split_once(':')
            .ok_or_else(|| format!("cannot read the region `{line}`"))?;
        let name = name.split('(').next().unwrap_or(name).trim();
        let length = spec
            .split(',')
            .find_map(|part| part.trim().strip_prefix("LENGTH"))
            .and_then(|l| l.trim().strip_prefix('='))
            .ok_or_else(|| format!("region {name} has no LENGTH"))?;
        let bytes = expression(length).ok_or_else(|| format!("cannot read LENGTH of {name}"))?;
        regions.insert(name.to_string(), bytes);
    }
    Ok(regions)
}

/// `REGION_ALIAS("ALIAS", REGION);` statements.
fn aliases(text: &str) -> HashMap<String, String> {
    text.split("REGION_ALIAS")
        .skip(1)
        .filter_map(|rest| {
            let inner = rest.trim_start().strip_prefix('(')?.split(')').next()?;
            let (alias, region) = inner.split_once(',')?;
            Some((
                alias.trim().trim_matches('"').to_string(),
                region.trim().to_string(),
            ))
        })
        .collect()
}

/// `2048K - 0x100`, `16M`, `0x4000`: sums and differences of sizes.
fn expression(text: &str) -> Option<usize> {
    let mut total: i64 = 0;
    let mut sign = 1;
    let spaced = text.replace('+', " + ").replace('-', " - ");
    for token in spaced.split_whitespace() {
        match token {
            "+" => sign = 1,
            "-" => sign = -1,
            term => total += sign * size(term)?,
        }
    }
    usize::try_from(total).ok()
}

fn size(term: &str) -> Option<i64> {
    let (digits, scale) = match term.as_bytes().last()? {
        b'K' | b'k' => (&term[..term.len() - 1], 1024),
        b'M' | b'm' => (&term[..term.len() - 1], 1024 * 1024),
        _ => (term, 1),
    };
    let value = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => i64::from_str_radix(hex, 16).ok()?,
        None => digits.parse().ok()?,
    };
    Some(value * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_board_names_a_cpu_of_the_table_that_builds_for_its_target() {
        let config = |cpu: &str| CargoConfig::parse(&format!("[env]\nKILN_CPU = \"{cpu}\"\n"));
        let m4f = config("cortex-m4f");
        assert_eq!(cpu_of(&m4f, "thumbv7em-none-eabihf"), Ok(Cpu::CortexM4F));
        let wrong = cpu_of(&m4f, "thumbv6m-none-eabi").unwrap_err();
        assert!(
            wrong.contains("does not build for target thumbv6m-none-eabi"),
            "{wrong}"
        );
        let unknown = cpu_of(&config("cortex-m99"), "thumbv6m-none-eabi").unwrap_err();
        assert!(
            unknown.contains("\"cortex-m99\" is not one of host, cortex-m0,"),
            "{unknown}"
        );
        let none = cpu_of(&CargoConfig::parse("[build]\n"), "thumbv6m-none-eabi").unwrap_err();
        assert!(none.contains("no KILN_CPU under [env]"), "{none}");
    }

    #[test]
    fn reads_flash_and_ram() {
        let text = "/* 256 KiB */\nMEMORY\n{\n  FLASH : ORIGIN = 0x00000000, LENGTH = 256K\n  \
                    RAM   : ORIGIN = 0x20000000, LENGTH = 16K\n}\n";
        let map = memory_map(text).unwrap();
        assert_eq!((map.flash_bytes, map.ram_bytes), (256 * 1024, 16 * 1024));
        assert!(!map.code_in_ram);
    }

    #[test]
    fn reads_aliases_and_differences() {
        let text = "MEMORY\n{\n  BOOT2 : ORIGIN = 0x10000000, LENGTH = 0x100\n  \
                    FLASH : ORIGIN = 0x10000100, LENGTH = 2048K - 0x100\n  \
                    RAM : ORIGIN = 0x20000000, LENGTH = 256K\n}\n";
        assert_eq!(memory_map(text).unwrap().flash_bytes, 2048 * 1024 - 256);
        let text = "MEMORY\n{\n  RAM : ORIGIN = 0x80000000, LENGTH = 16M\n}\n\
                    REGION_ALIAS(\"REGION_TEXT\", RAM);\nREGION_ALIAS(\"REGION_BSS\", RAM);\n";
        let map = memory_map(text).unwrap();
        assert_eq!(map.ram_bytes, 16 << 20);
        assert!(map.code_in_ram);
    }

    #[test]
    fn reads_sections_of_the_cargo_config() {
        let config = CargoConfig::parse(
            "# runner = \"no\"\n[build]\ntarget = \"thumbv8m.main-none-eabihf\"\n\n\
             [target.thumbv8m.main-none-eabihf]\nrunner = \"qemu-system-arm -kernel\"\n\
             rustflags = [\"-C\", \"link-arg=-Tlink.x\"]\n",
        );
        assert_eq!(
            config.get("build.target"),
            Some("thumbv8m.main-none-eabihf")
        );
        let runner = config.get("target.thumbv8m.main-none-eabihf.runner");
        assert_eq!(runner, Some("qemu-system-arm -kernel"));
    }
}
