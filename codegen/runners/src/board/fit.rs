//! Does a bundle fit a board? Checked before building, from the bundle and the board's memory
//! map: RAM holds the arena, the stack and the runtime's statics; flash holds the weights, the
//! schedule, the runtime's code and the kernels' code. The code sizes are estimates (the
//! linker has the last word); arena, weights and schedule are exact.

use super::{BoardError, BoardInfo};
use kiln_codegen::bundle::Bundle;
use std::fmt;

/// Stack left free beside the statics: the boards' linker assertion demands as much
/// (`MIN_STACK_BYTES` in `boards/build/src/lib.rs`).
pub const STACK_BYTES: usize = 4096;
/// The runtime's own statics beside the arena (the marker word, alignment padding, the RISC-V
/// runtime's few words), rounded up.
pub const RUNTIME_RAM_BYTES: usize = 256;
/// The runtime's code and constants: executor, schedule checks, semihosting, startup, `libm`
/// and, on cores without an FPU, soft-float routines. Measured at 16–21 KB on the emulated
/// boards; rounded up.
pub const RUNTIME_CODE_BYTES: usize = 32 * 1024;

/// The memory a need is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    Ram,
    Flash,
    /// One memory for code and data (QEMU's RISC-V `virt`).
    Unified,
}

impl fmt::Display for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Memory::Ram => "RAM",
            Memory::Flash => "flash",
            Memory::Unified => "memory (code and data share it)",
        })
    }
}

/// What a bundle needs of one memory, part by part, and what the board has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Need {
    pub memory: Memory,
    /// (what, bytes); names starting with `~` are estimates.
    pub parts: Vec<(&'static str, usize)>,
    pub needed: usize,
    pub available: usize,
}

impl Need {
    fn new(memory: Memory, parts: Vec<(&'static str, usize)>, available: usize) -> Need {
        let needed = parts.iter().map(|(_, bytes)| bytes).sum();
        Need {
            memory,
            parts,
            needed,
            available,
        }
    }

    pub fn fits(&self) -> bool {
        self.needed <= self.available
    }

    fn parts(&self) -> String {
        let parts: Vec<String> = self
            .parts
            .iter()
            .map(|(what, bytes)| match what.strip_prefix('~') {
                Some(what) => format!("{what} ~{}", bytes_text(*bytes)),
                None => format!("{what} {}", bytes_text(*bytes)),
            })
            .collect();
        parts.join(" + ")
    }
}

/// A bundle that fits a board, and by how much.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fit {
    pub board: String,
    /// RAM and flash, or the one memory of a board whose code runs from RAM.
    pub needs: Vec<Need>,
}

impl fmt::Display for Fit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, need) in self.needs.iter().enumerate() {
            let sep = if i == 0 { "" } else { "; " };
            write!(
                f,
                "{sep}{} of {} {} ({})",
                bytes_text(need.needed),
                bytes_text(need.available),
                need.memory,
                need.parts()
            )?;
        }
        Ok(())
    }
}

/// Checks, before building, that `bundle` fits `board`: RAM for the arena, the stack and the
/// runtime's statics; flash for the weights, schedule and code (estimated). The error names
/// each memory that is short, with what needs it and what the board has.
pub fn check_fits(board: &BoardInfo, bundle: &Bundle) -> Result<Fit, BoardError> {
    let arena = match kiln_firmware::schedule::read_manifest(&bundle.schedule) {
        Ok(plan) => plan.arena_bytes as usize,
        Err(_) => bundle.report.arena_bytes,
    };
    let ram = vec![
        ("its arena", arena),
        ("stack", STACK_BYTES),
        ("~runtime statics", RUNTIME_RAM_BYTES),
    ];
    let flash = vec![
        ("weights", bundle.weights.len()),
        ("schedule", bundle.schedule.len()),
        ("~runtime code", RUNTIME_CODE_BYTES),
        ("~kernel code", kernel_code_estimate(&bundle.kernels_c)),
    ];
    let needs = if board.code_in_ram {
        let all = ram.into_iter().chain(flash).collect();
        vec![Need::new(Memory::Unified, all, board.ram_bytes)]
    } else {
        vec![
            Need::new(Memory::Ram, ram, board.ram_bytes),
            Need::new(Memory::Flash, flash, board.flash_bytes),
        ]
    };
    let short: Vec<Need> = needs.iter().filter(|n| !n.fits()).cloned().collect();
    if !short.is_empty() {
        return Err(BoardError::TooBig {
            board: board.name.clone(),
            needs: short,
        });
    }
    Ok(Fit {
        board: board.name.clone(),
        needs,
    })
}

/// Machine code of the kernels, from their C source: about one byte of Thumb or RV32C code
/// per two bytes of the generated C.
fn kernel_code_estimate(kernels_c: &str) -> usize {
    kernels_c.len() / 2
}

/// The message of [`BoardError::TooBig`].
pub(super) fn describe_too_big(board: &str, needs: &[Need]) -> String {
    let lines: Vec<String> = needs
        .iter()
        .map(|n| {
            format!(
                "the model needs {} of {} for {}; {board} has {}",
                bytes_text(n.needed),
                n.memory,
                n.parts(),
                bytes_text(n.available)
            )
        })
        .collect();
    lines.join("\n")
}

/// `203,376 B`.
pub fn bytes_text(bytes: usize) -> String {
    let digits = bytes.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out + " B"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_have_thousands_separators() {
        assert_eq!(bytes_text(0), "0 B");
        assert_eq!(bytes_text(999), "999 B");
        assert_eq!(bytes_text(16384), "16,384 B");
        assert_eq!(bytes_text(1234567), "1,234,567 B");
    }

    #[test]
    fn stack_matches_the_boards_linker_assertion() {
        let source = super::super::boards_dir().join("build/src/lib.rs");
        let text = std::fs::read_to_string(&source).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("const MIN_STACK_BYTES"))
            .expect("boards/build defines MIN_STACK_BYTES");
        assert!(line.ends_with(&format!("= {STACK_BYTES};")), "{line}");
    }

    #[test]
    fn too_big_names_each_part_and_the_board() {
        let need = Need::new(
            Memory::Ram,
            vec![("its arena", 203376), ("stack", 4096)],
            16384,
        );
        let text = describe_too_big("qemu-microbit", &[need]);
        assert_eq!(
            text,
            "the model needs 207,472 B of RAM for its arena 203,376 B + stack 4,096 B; \
             qemu-microbit has 16,384 B"
        );
    }
}
