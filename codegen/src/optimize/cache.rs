//! The BEAM search's results on disk: one file per searched kernel, keyed by its AST and
//! what its cost depended on, so that a rebuild does not search again.

use super::SearchError;
use crate::kernel::{Opt, OptOp};
use std::path::{Path, PathBuf};

/// A 64-bit FNV-1a hash (stable across builds, unlike the standard library's).
pub fn stable_hash(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The search cache: one file per searched kernel, its opts one per line.
#[derive(Clone, Debug)]
pub struct Cache {
    pub dir: PathBuf,
}

impl Cache {
    /// `$KILN_BEAM_CACHE`, else `kiln/beam` in `$XDG_CACHE_HOME` or `~/.cache`, else
    /// `target/kiln-beam`.
    pub fn default_dir() -> PathBuf {
        if let Some(d) = std::env::var_os("KILN_BEAM_CACHE") {
            return PathBuf::from(d);
        }
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")));
        match base {
            Some(b) => b.join("kiln/beam"),
            None => PathBuf::from("target/kiln-beam"),
        }
    }

    /// The cache file of a kernel (`ast`: its AST listing) searched under `context` (target,
    /// cost, width).
    pub fn path(&self, ast: &str, context: &str) -> PathBuf {
        let key = stable_hash(&format!("{context}\n{ast}"));
        self.dir.join(format!("{key:016x}.opts"))
    }

    /// The cached opts, if this kernel was searched before (an unreadable entry is a miss).
    pub fn get(&self, ast: &str, context: &str) -> Option<Vec<Opt>> {
        let text = std::fs::read_to_string(self.path(ast, context)).ok()?;
        let mut lines = text.lines();
        // The first line repeats the key's text hash, guarding against a stale file.
        if lines.next()? != format!("{:016x}", stable_hash(ast)) {
            return None;
        }
        lines.map(parse_opt).collect()
    }

    pub fn put(&self, ast: &str, context: &str, opts: &[Opt]) -> Result<(), SearchError> {
        let path = self.path(ast, context);
        let err = |source| SearchError::Cache {
            path: path.display().to_string(),
            source,
        };
        std::fs::create_dir_all(&self.dir).map_err(err)?;
        let mut text = format!("{:016x}\n", stable_hash(ast));
        for o in opts {
            text.push_str(&format_opt(o));
            text.push('\n');
        }
        std::fs::write(&path, text).map_err(err)
    }
}

fn format_opt(o: &Opt) -> String {
    let axis = o.axis.map(|a| a.to_string()).unwrap_or_else(|| "-".into());
    format!("{:?} {axis} {}", o.op, o.amt)
}

fn parse_opt(line: &str) -> Option<Opt> {
    let mut parts = line.split_whitespace();
    let op = match parts.next()? {
        "Local" => OptOp::Local,
        "Group" => OptOp::Group,
        "GroupTop" => OptOp::GroupTop,
        "Unroll" => OptOp::Unroll,
        "Dot" => OptOp::Dot,
        "Upcast" => OptOp::Upcast,
        "PadTo" => OptOp::PadTo,
        "NoLocals" => OptOp::NoLocals,
        "Interior" => OptOp::Interior,
        _ => return None,
    };
    let axis = match parts.next()? {
        "-" => None,
        a => Some(a.parse().ok()?),
    };
    let amt = parts.next()?.parse().ok()?;
    Some(Opt { op, axis, amt })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opts_round_trip_through_the_cache_format() {
        for o in [
            Opt::new(OptOp::Upcast, 1, 4),
            Opt::new(OptOp::Unroll, 0, 0),
            Opt {
                op: OptOp::NoLocals,
                axis: None,
                amt: 0,
            },
            Opt::interior(),
        ] {
            assert_eq!(parse_opt(&format_opt(&o)), Some(o));
        }
        assert_eq!(parse_opt("Sideways 1 2"), None);
    }
}
