//! How a runner runs, where its place has a choice, and the check of those choices against
//! the place ([`RunnerOptions::for_place`]).

use super::RunError;
use crate::board::{BoardInfo, Io};
use std::time::Duration;

/// How a runner runs, where the place has a choice.
#[derive(Clone, Debug)]
pub struct RunnerOptions {
    /// How tensors travel to an emulated board (a real one speaks RTT).
    pub io: Io,
    /// The debug probes a real board is wired to, by serial number (none: the only one
    /// attached). A suite's cases are shared between several.
    pub probes: Vec<String>,
    /// On the host and the GPUs, each step's time is the best of this many runs (at least one).
    pub runs: usize,
    /// How long a board may take.
    pub timeout: Duration,
    /// The host compiles kernels at `-O1` rather than for speed: for many small models, where
    /// the C compiler's time is most of the run.
    pub quick: bool,
}

impl Default for RunnerOptions {
    fn default() -> Self {
        RunnerOptions {
            io: Io::default(),
            probes: Vec::new(),
            runs: 1,
            timeout: Duration::from_secs(600),
            quick: false,
        }
    }
}

impl RunnerOptions {
    /// The options of a run on `place` (a name [`super::by_name`] knows) with the tensor path
    /// `io` (`files`, `channel`, `rtt`; none: the place's own) and the debug probes `probes`,
    /// checked against it: a real board speaks RTT only, only a real board has a probe.
    pub fn for_place(
        place: &str,
        io: Option<&str>,
        probes: &[String],
    ) -> Result<RunnerOptions, RunError> {
        let refuse = RunError::Options;
        let real = match crate::board::info(place) {
            Ok(info) => Some(!info.emulated),
            Err(_) => None,
        };
        if real.is_none() && (io.is_some() || !probes.is_empty()) {
            let why = format!("--io and --probe are a board's options, and {place} is no board");
            return Err(refuse(why));
        }
        let io = match io {
            None if real == Some(true) => Io::Rtt,
            None => Io::Files,
            Some(name) => {
                let io = Io::from_name(name).ok_or_else(|| {
                    refuse(format!("unknown --io `{name}` (files, channel or rtt)"))
                })?;
                if real == Some(true) && io != Io::Rtt {
                    let why =
                        format!("{place} is a real board: it speaks RTT only, not --io {name}");
                    return Err(refuse(why));
                }
                io
            }
        };
        if !probes.is_empty() && real == Some(false) {
            let why = format!("--probe names a debug probe, and {place} is not a real board");
            return Err(refuse(why));
        }
        Ok(RunnerOptions {
            io,
            probes: probes.to_vec(),
            ..RunnerOptions::default()
        })
    }

    /// The probe of a single run: the first named, else the only one attached.
    pub fn probe(&self) -> Option<&str> {
        self.probes.first().map(String::as_str)
    }

    /// Checks that a real board's probes are attached.
    pub(super) fn check_probes(&self, info: &BoardInfo) -> Result<(), RunError> {
        if info.emulated {
            return Ok(());
        }
        if self.probes.is_empty() {
            super::places::find_probe(info, None)?;
        }
        for serial in &self.probes {
            super::places::find_probe(info, Some(serial))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(place: &str, io: Option<&str>, probes: &[&str]) -> String {
        let probes: Vec<String> = probes.iter().map(|p| p.to_string()).collect();
        match RunnerOptions::for_place(place, io, &probes) {
            Ok(o) => panic!("{place} {io:?} {probes:?} taken: {o:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_real_board_speaks_rtt_and_an_emulated_one_has_no_probe() {
        let real = RunnerOptions::for_place("nrf52840-dk", None, &["A".into()]).unwrap();
        assert_eq!((real.io, real.probe()), (Io::Rtt, Some("A")));
        let emulated = RunnerOptions::for_place("qemu-an386", Some("channel"), &[]).unwrap();
        assert_eq!((emulated.io, emulated.probe()), (Io::Channel, None));
        assert_eq!(
            refused("nrf52840-dk", Some("files"), &[]),
            "nrf52840-dk is a real board: it speaks RTT only, not --io files"
        );
        assert_eq!(
            refused("qemu-an386", None, &["A"]),
            "--probe names a debug probe, and qemu-an386 is not a real board"
        );
        assert!(refused("qemu-an386", Some("pigeon"), &[]).contains("unknown --io `pigeon`"));
        assert!(refused("host", Some("rtt"), &[]).contains("host is no board"));
    }

    #[test]
    fn a_board_runner_refuses_options_its_board_cannot_take() {
        let info = crate::board::info("nrf52840-dk").unwrap();
        let files = RunnerOptions::default();
        let err = super::super::BoardRunner::new(info, &files)
            .err()
            .expect("refused");
        assert!(err.to_string().contains("speaks RTT only"), "{err}");
    }
}
