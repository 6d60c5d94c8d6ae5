//! BEAM search over a kernel's opts: from the fresh kernel and the hand-coded opts (measured
//! first, so the search never returns something slower than they are), each round applies every
//! legal action (upcast an output axis, unroll a reduce axis) to each kernel of the beam,
//! measures all the new kernels with a cost function (wall time on the host, or instructions on
//! an emulated board), keeps the `width` cheapest and stops when a round finds nothing cheaper. The kernels of a model are searched in
//! lockstep ([`beam_search_many`]), so that one measurement (one board image) serves a round of
//! every kernel. Results are cached on disk, keyed by the kernel's AST, the target and the
//! cost's name, so a rebuild does not search again.

use super::heuristic::hand_coded_optimizations;
use super::{Kernel, Opt, OptOp};
use crate::linearize::{to_program, Program};
use std::path::{Path, PathBuf};

/// The most values one iteration computes (the product of the upcast and unrolled axes): the
/// hand-coded opts' own limit, so that the beam can grow from them.
const MAX_UPCAST: usize = 256;
/// Rounds of search (opts added to the fresh kernel), at most.
const MAX_ROUNDS: usize = 5;
/// A candidate must be this much cheaper to count as progress.
const MIN_GAIN: f64 = 0.01;
/// Part of every cache key: bumped when the actions, the search or the hand-coded opts it
/// starts from change, so that older results are searched again.
const SEARCH_VERSION: u32 = 4;

/// Errors of the search.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("measuring kernel {kernel}: {reason}")]
    Measure { kernel: String, reason: String },
    /// The host could not compile or run a kernel's candidates.
    #[cfg(feature = "host")]
    #[error("measuring kernel {kernel}")]
    Host {
        kernel: String,
        #[source]
        source: crate::host::HostError,
    },
    #[error("measuring kernels on {board}")]
    Board {
        board: String,
        #[source]
        source: Box<crate::board::BoardError>,
    },
    #[error("the search cache {path}")]
    Cache {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// Measures a batch of programs of one kernel: a cost per program (lower is better), `None`
/// for one that could not be measured.
pub type CostFn<'a> = dyn FnMut(&[Program]) -> Result<Vec<Option<f64>>, SearchError> + 'a;

/// Whether the search may run `k`: candidates run on zero-filled buffers, which is safe when
/// every buffer holds floats and no integer division or remainder could meet a zero.
pub fn searchable(k: &Kernel) -> bool {
    use super::ast::Op;
    use super::KernelBuffer;
    use crate::ops::{AluOp, BinaryOp};
    let float_buffers = k.bufs.iter().all(|b| match b {
        KernelBuffer::Mem(m) => m.dtype.is_float(),
        _ => true,
    });
    let int_division = k.ast.iter().flat_map(|s| s.lazyops()).any(|n| {
        matches!(
            n.op(),
            Op::Alu(AluOp::Binary(BinaryOp::Div | BinaryOp::Mod))
        ) && !n.dtype().is_float()
    });
    float_buffers && !int_division
}

/// The actions tried on every kernel of the beam.
pub fn actions(k: &Kernel) -> Vec<Opt> {
    let mut out = Vec::new();
    // Vector lanes wider than 8 where the target has them (16 floats in 512 bits).
    let wide = (k.target.simd_lanes > 8).then_some(k.target.simd_lanes as usize);
    for axis in 0..k.first_reduce() {
        for amt in [2, 3, 4, 5, 8].into_iter().chain(wide) {
            out.push(Opt::new(OptOp::Upcast, axis, amt));
        }
    }
    let reduces = k.shape_len() - k.upcasted - k.first_reduce();
    for axis in 0..reduces {
        for amt in [0, 2, 3, 4] {
            out.push(Opt::new(OptOp::Unroll, axis, amt));
        }
    }
    out
}

fn upcast_size(k: &Kernel) -> usize {
    let n = k.shape_len();
    k.full_shape()[n - k.upcasted..].iter().product()
}

/// `fresh` with `opts` applied, or `None` when one does not apply.
pub fn apply_all(fresh: &Kernel, opts: &[Opt]) -> Option<Kernel> {
    let mut k = fresh.clone();
    for o in opts {
        k.apply_opt(*o).ok()?;
    }
    Some(k)
}

/// The opts the search finds cheapest for `fresh` (which has no opts applied).
pub fn beam_search(
    fresh: &Kernel,
    width: usize,
    cost: &mut CostFn<'_>,
) -> Result<Vec<Opt>, SearchError> {
    let mut batched = |groups: &[Candidates]| groups.iter().map(|g| cost(&g.programs)).collect();
    let mut found = beam_search_many(std::slice::from_ref(fresh), width, &mut batched)?;
    Ok(found.pop().unwrap_or_else(|| fresh.applied_opts.clone()))
}

/// The candidates of one kernel in a batched measurement: the kernel's index in the slice
/// the search was given, and its programs.
#[derive(Clone, Debug)]
pub struct Candidates {
    pub kernel: usize,
    pub programs: Vec<Program>,
}

/// Measures the candidates of many kernels at once (one image on a board for all of them): a
/// cost per program of each group, in order, `None` for one that could not be measured.
pub type BatchCostFn<'a> =
    dyn FnMut(&[Candidates]) -> Result<Vec<Vec<Option<f64>>>, SearchError> + 'a;

/// [`beam_search`] of every kernel of `fresh`, in lockstep: each round measures the candidates
/// of every kernel still searching with one call of `cost`. Returns the opts of each kernel.
pub fn beam_search_many(
    fresh: &[Kernel],
    width: usize,
    cost: &mut BatchCostFn<'_>,
) -> Result<Vec<Vec<Opt>>, SearchError> {
    let mut searches: Vec<Search> = fresh.iter().map(Search::new).collect();
    loop {
        let open: Vec<usize> = (0..searches.len()).filter(|&i| !searches[i].done).collect();
        if open.is_empty() {
            break;
        }
        let groups: Vec<Candidates> = open
            .iter()
            .map(|&i| Candidates {
                kernel: i,
                programs: searches[i].pending.iter().map(|(_, p)| p.clone()).collect(),
            })
            .collect();
        let costs = cost(&groups)?;
        if costs.len() != groups.len() {
            return Err(SearchError::Measure {
                kernel: fresh[open[0]].label(),
                reason: format!("{} cost lists for {} kernels", costs.len(), groups.len()),
            });
        }
        for (i, c) in open.into_iter().zip(costs) {
            searches[i].feed(c, width);
        }
    }
    Ok(searches.into_iter().map(Search::result).collect())
}

/// The state of one kernel's search between rounds.
struct Search {
    /// The hand-coded opts: the result when no candidate could be measured.
    hand: Vec<Opt>,
    /// The cheapest cost so far and its opts.
    best: Option<(f64, Vec<Opt>)>,
    beam: Vec<Kernel>,
    /// The candidates of the round to measure next.
    pending: Vec<(Kernel, Program)>,
    /// Rounds measured after the first (the fresh and hand-coded kernels).
    rounds: usize,
    done: bool,
}

impl Search {
    /// The first round: the fresh kernel and the hand-coded opts.
    fn new(fresh: &Kernel) -> Search {
        let mut hand = fresh.clone();
        hand_coded_optimizations(&mut hand);
        let hand_opts = hand.applied_opts.clone();
        let mut start = vec![fresh.clone()];
        if hand.applied_opts != fresh.applied_opts {
            start.push(hand);
        }
        let pending: Vec<(Kernel, Program)> = start
            .into_iter()
            .filter_map(|k| to_program(&k).ok().map(|p| (k, p)))
            .collect();
        Search {
            hand: hand_opts,
            best: None,
            beam: Vec::new(),
            done: pending.is_empty(),
            pending,
            rounds: 0,
        }
    }

    /// Takes the costs of the pending candidates and prepares the next round, or ends.
    fn feed(&mut self, costs: Vec<Option<f64>>, width: usize) {
        let pending = std::mem::take(&mut self.pending);
        let mut round: Vec<(f64, Kernel)> = pending
            .into_iter()
            .zip(costs)
            .filter_map(|((k, _), c)| c.map(|c| (c, k)))
            .collect();
        round.sort_by(|a, b| a.0.total_cmp(&b.0));
        let Some((c, k)) = round.first() else {
            self.done = true;
            return;
        };
        if let Some((best, _)) = &self.best {
            if *c >= best * (1.0 - MIN_GAIN) {
                self.done = true;
                return;
            }
            self.rounds += 1;
        }
        // The first round's beam grows from the fresh kernel and from the hand-coded one:
        // actions on top of good hand-coded opts are often what beats them.
        self.best = Some((*c, k.applied_opts.clone()));
        self.beam = round
            .into_iter()
            .take(width.max(1))
            .map(|(_, k)| k)
            .collect();
        if self.rounds >= MAX_ROUNDS {
            self.done = true;
            return;
        }
        self.expand();
    }

    /// Every legal action on every kernel of the beam, each distinct program once.
    fn expand(&mut self) {
        let mut seen = std::collections::HashSet::new();
        for k in &self.beam {
            for a in actions(k) {
                let mut k2 = k.clone();
                if k2.apply_opt(a).is_err() || upcast_size(&k2) > MAX_UPCAST {
                    continue;
                }
                let Ok(p) = to_program(&k2) else { continue };
                if seen.insert(p.src.clone()) {
                    self.pending.push((k2, p));
                }
            }
        }
        self.done = self.pending.is_empty();
    }

    fn result(self) -> Vec<Opt> {
        match self.best {
            Some((_, opts)) => opts,
            None => self.hand,
        }
    }
}

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
        "Upcast" => OptOp::Upcast,
        "PadTo" => OptOp::PadTo,
        "NoLocals" => OptOp::NoLocals,
        _ => return None,
    };
    let axis = match parts.next()? {
        "-" => None,
        a => Some(a.parse().ok()?),
    };
    let amt = parts.next()?.parse().ok()?;
    Some(Opt { op, axis, amt })
}

/// The opts for `fresh`: from `cache` when it has them, else searched with `cost` and stored.
/// Returns the opts and whether they came from the cache.
pub fn cached_beam_search(
    fresh: &Kernel,
    width: usize,
    cache: &Cache,
    context: &str,
    cost: &mut CostFn<'_>,
) -> Result<(Vec<Opt>, bool), SearchError> {
    let mut batched = |groups: &[Candidates]| groups.iter().map(|g| cost(&g.programs)).collect();
    let mut found = cached_beam_search_many(
        std::slice::from_ref(fresh),
        width,
        cache,
        context,
        &mut batched,
    )?;
    Ok(found
        .pop()
        .unwrap_or_else(|| (fresh.applied_opts.clone(), false)))
}

/// [`cached_beam_search`] of every kernel of `fresh`: the kernels the cache lacks are searched
/// together ([`beam_search_many`]), kernels with the same AST once; `cost` gets their indices
/// in `fresh`. Returns each kernel's opts and whether they came from the cache.
pub fn cached_beam_search_many(
    fresh: &[Kernel],
    width: usize,
    cache: &Cache,
    context: &str,
    cost: &mut BatchCostFn<'_>,
) -> Result<Vec<(Vec<Opt>, bool)>, SearchError> {
    let keys: Vec<(String, String)> = fresh
        .iter()
        .map(|k| {
            let ast: String = k.ast.iter().map(|s| s.to_string()).collect();
            let context = format!(
                "{context} width={width} target={} search=v{SEARCH_VERSION}",
                k.target.name
            );
            (ast, context)
        })
        .collect();
    let mut found: Vec<Option<(Vec<Opt>, bool)>> = fresh
        .iter()
        .zip(&keys)
        .map(|(k, (ast, context))| {
            let opts = cache.get(ast, context)?;
            apply_all(k, &opts).is_some().then_some((opts, true))
        })
        .collect();
    // The kernels to search: the first of each distinct key the cache lacks.
    let mut first_of: std::collections::HashMap<&(String, String), usize> = Default::default();
    let mut misses: Vec<usize> = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        if found[i].is_none() && !first_of.contains_key(key) {
            first_of.insert(key, i);
            misses.push(i);
        }
    }
    if !misses.is_empty() {
        let kernels: Vec<Kernel> = misses.iter().map(|&i| fresh[i].clone()).collect();
        let mut renumbered = |groups: &[Candidates]| {
            let groups: Vec<Candidates> = groups
                .iter()
                .map(|g| Candidates {
                    kernel: misses[g.kernel],
                    programs: g.programs.clone(),
                })
                .collect();
            cost(&groups)
        };
        let searched = beam_search_many(&kernels, width, &mut renumbered)?;
        for (&i, opts) in misses.iter().zip(searched) {
            let (ast, context) = &keys[i];
            cache.put(ast, context, &opts)?;
            found[i] = Some((opts, false));
        }
    }
    Ok(keys
        .iter()
        .enumerate()
        .map(|(i, key)| match &found[i] {
            Some(f) => f.clone(),
            None => {
                let (opts, _) = found[first_of[key]].clone().unwrap_or_default();
                (opts, false)
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::kernel::ast::LazyOp;
    use crate::ops::{AluOp, BinaryOp};
    use crate::render::Target;
    use crate::shape::ShapeTracker;

    /// out[i] = sum_j a[i, j] * b[j]: a 16×8 matrix times a vector.
    fn matvec() -> Kernel {
        crate::kernel::examples::matvec(16, 8, Target::c())
    }

    #[test]
    fn the_search_follows_the_cost() {
        // A cost that rewards upcasting the output axis and nothing else.
        let mut calls = 0;
        let mut cost = |ps: &[Program]| {
            calls += 1;
            Ok(ps
                .iter()
                .map(|p| {
                    let up = p
                        .applied_opts
                        .iter()
                        .filter(|o| o.op == OptOp::Upcast)
                        .map(|o| o.amt.max(1))
                        .product::<usize>();
                    Some(100.0 / up as f64 + p.applied_opts.len() as f64 * 0.01)
                })
                .collect())
        };
        let opts = beam_search(&matvec(), 2, &mut cost).unwrap();
        assert!(calls >= 2);
        let up: usize = opts
            .iter()
            .filter(|o| o.op == OptOp::Upcast)
            .map(|o| o.amt)
            .product();
        assert_eq!(up, 16, "{opts:?}");
        assert!(apply_all(&matvec(), &opts).is_some());
    }

    #[test]
    fn nothing_measured_keeps_the_hand_coded_opts() {
        // A board that cannot run any candidate (buffers too large for its RAM, say).
        let mut cost = |ps: &[Program]| Ok(vec![None; ps.len()]);
        let opts = beam_search(&matvec(), 2, &mut cost).unwrap();
        let mut hand = matvec();
        hand_coded_optimizations(&mut hand);
        assert!(!hand.applied_opts.is_empty());
        assert_eq!(opts, hand.applied_opts);
    }

    #[test]
    fn a_cached_search_is_not_repeated() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache {
            dir: dir.path().to_path_buf(),
        };
        let calls = std::cell::Cell::new(0);
        let mut cost = |ps: &[Program]| {
            calls.set(calls.get() + 1);
            Ok(ps
                .iter()
                .map(|p| Some(10.0 - p.applied_opts.len() as f64))
                .collect())
        };
        let (first, hit) = cached_beam_search(&matvec(), 2, &cache, "test", &mut cost).unwrap();
        assert!(!hit);
        let searched = calls.get();
        assert!(searched > 0);
        let (again, hit) = cached_beam_search(&matvec(), 2, &cache, "test", &mut cost).unwrap();
        assert!(hit);
        assert_eq!(again, first);
        assert_eq!(calls.get(), searched, "a cache hit measures nothing");
        // Another cost context is another entry.
        let (_, hit) = cached_beam_search(&matvec(), 2, &cache, "other", &mut cost).unwrap();
        assert!(!hit);
    }

    #[test]
    fn the_host_timer_measures_every_candidate() {
        let fresh = matvec();
        let up = apply_all(&fresh, &[Opt::new(OptOp::Upcast, 0, 4)]).unwrap();
        let programs = [to_program(&fresh).unwrap(), to_program(&up).unwrap()];
        let t = crate::host::time_kernels(&programs, &[16 * 4, 128 * 4, 8 * 4]).unwrap();
        assert_eq!(t.len(), 2);
        assert!(
            t.iter().all(|c| c.is_some_and(|c| c > 0.0 && c < 1e-2)),
            "{t:?}"
        );
    }

    #[test]
    fn only_float_kernels_are_searched() {
        assert!(searchable(&matvec()));
        let st = ShapeTracker::from_shape(&[8]);
        let div = LazyOp::alu(
            AluOp::Binary(BinaryOp::Div),
            vec![
                LazyOp::load(1, DType::I32, st.clone()),
                LazyOp::load(2, DType::I32, st.clone()),
            ],
        );
        let k = Kernel::new(vec![LazyOp::store(0, st, div)], Target::c()).unwrap();
        assert!(!searchable(&k));
    }

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
        ] {
            assert_eq!(parse_opt(&format_opt(&o)), Some(o));
        }
        assert_eq!(parse_opt("Sideways 1 2"), None);
    }
}
