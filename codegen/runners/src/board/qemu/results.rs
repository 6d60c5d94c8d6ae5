//! What a run leaves: the steps it ran, the plugin's counts and marks, the output files, and
//! the I/O folder they lie in.

use super::*;

/// `kiln: ran N steps`, the firmware's last word on success.
pub(in crate::board) fn ran_steps(output: &str) -> Option<usize> {
    output.lines().find_map(|l| {
        let rest = l.split_once("kiln: ran ")?.1;
        rest.strip_suffix(" steps")?.trim().parse().ok()
    })
}

/// What the plugin's log says: each step's instructions and the total, and the estimated
/// cycles of each when the plugin had a core.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(in crate::board) struct Counts {
    pub(in crate::board) step_instructions: Vec<u64>,
    pub(in crate::board) total_instructions: u64,
    /// Empty without a cycle estimate.
    pub(in crate::board) step_cycles: Vec<u64>,
    pub(in crate::board) total_cycles: Option<u64>,
}

impl Counts {
    /// The run these counts are of, with its `outputs`.
    pub(in crate::board) fn into_run(self, outputs: Vec<Vec<u8>>, wall_time: Duration) -> BoardRun {
        BoardRun {
            outputs,
            step_instructions: self.step_instructions,
            total_instructions: self.total_instructions,
            step_cycles: self.step_cycles,
            total_cycles: self.total_cycles,
            wall_time,
        }
    }
}

/// The plugin's log: the running count at each marker store (before and after each step), then
/// the total; each line `kiln-insn <instructions>` or, with a cycle estimate,
/// `kiln-insn <instructions> <cycles>`.
pub(in crate::board) fn read_counts(log: &Path, board: &str) -> Result<Counts, BoardError> {
    let text = std::fs::read_to_string(log).map_err(io_error(log))?;
    let bad = |why: &str| BoardError::Qemu {
        board: board.to_string(),
        status: format!("the instruction-count log {why}"),
        output: text.clone(),
    };
    let mut marks = Vec::new();
    let mut total = None;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(label @ ("kiln-insn" | "kiln-insn-total")), Some(count)) =
            (words.next(), words.next())
        else {
            continue;
        };
        let number = |word: &str| {
            word.parse::<u64>()
                .map_err(|_| bad("has a count that is no number"))
        };
        let count = number(count)?;
        let cycles = words.next().map(number).transpose()?;
        match label {
            "kiln-insn" => marks.push((count, cycles)),
            _ => total = Some((count, cycles)),
        }
    }
    if !marks.len().is_multiple_of(2) {
        return Err(bad("has a step that began and did not end"));
    }
    let (total_instructions, total_cycles) = total.ok_or_else(|| bad("has no total"))?;
    let step_instructions = marks.chunks_exact(2).map(|m| m[1].0 - m[0].0).collect();
    let step_cycles = match total_cycles {
        Some(_) => marks
            .chunks_exact(2)
            .map(|m| match (m[0].1, m[1].1) {
                (Some(a), Some(b)) => Ok(b - a),
                _ => Err(bad("has marks without cycles and a total with them")),
            })
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    Ok(Counts {
        step_instructions,
        total_instructions,
        step_cycles,
        total_cycles,
    })
}

/// The running counts of a plugin log at each marker store, in order: the instructions, and
/// the estimated cycles where the line has them; lines that are not whole marks (the end of a
/// log cut short, without its newline) are left out.
pub(in crate::board) fn read_marks(text: &str) -> Vec<(u64, Option<u64>)> {
    text.split_inclusive('\n')
        .filter_map(|line| {
            let mut words = line.strip_suffix('\n')?.split_whitespace();
            match (words.next(), words.next()) {
                (Some("kiln-insn"), Some(count)) => {
                    let cycles = words.next().map(|c| c.parse().ok());
                    Some((count.parse().ok()?, cycles.flatten()))
                }
                _ => None,
            }
        })
        .collect()
}

/// `output_0.bin`, `output_1.bin`, … as the firmware wrote them.
pub(in crate::board) fn read_outputs(
    dir: &Path,
    name: impl Fn(usize) -> String,
) -> Result<Vec<Vec<u8>>, BoardError> {
    let mut outputs = Vec::new();
    loop {
        let path = dir.join(name(outputs.len()));
        if !path.exists() {
            return Ok(outputs);
        }
        outputs.push(std::fs::read(&path).map_err(io_error(&path))?);
    }
}

/// A fresh folder under the system's temporary folder, removed when dropped.
pub(in crate::board) struct IoDir {
    pub(in crate::board) path: PathBuf,
}

impl IoDir {
    pub(in crate::board) fn new() -> Result<IoDir, BoardError> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("kiln-run-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).map_err(io_error(&path))?;
        Ok(IoDir { path })
    }
}

impl Drop for IoDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
