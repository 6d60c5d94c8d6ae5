//! The optimize stage: each kernel's opts, from the target's hand-coded heuristics ([`heuristic`]
//! for targets without threads, [`gpu_heuristic`] for GPUs) or from a BEAM search ([`search`])
//! whose candidates a [`CostModel`] measures. The cost models are the runners' (the host's wall
//! time, an emulated board's instructions); this stage only chooses. Whether a kernel still
//! builds is the pipeline's to say ([`Lowers`]), so no later stage is called from here.

pub mod cache;
pub mod gpu_heuristic;
pub mod heuristic;
pub mod search;

pub use cache::Cache;
pub use search::{Candidates, CostModel, SearchError};

use crate::kernel::Kernel;
use heuristic::hand_coded_optimizations;
use search::{apply_all, cached_beam_search_many, searchable};

/// Whether a kernel with its opts still builds for its target (it linearizes).
pub type Lowers<'a> = &'a dyn Fn(&Kernel) -> bool;

/// A BEAM search: its width, where its results are cached and what measures a candidate.
pub struct Beam<'a> {
    pub width: usize,
    pub cache: Cache,
    pub cost: &'a mut dyn CostModel,
}

/// How the kernels' opts are chosen.
pub enum Optimize<'a> {
    /// None: every kernel as the scheduler made it.
    Off,
    /// The target's hand-coded heuristics.
    Heuristics,
    /// A BEAM search for the kernels it can measure (on targets without threads); the others
    /// get the heuristics.
    Beam(Beam<'a>),
}

impl Optimize<'_> {
    /// The same choice, borrowed again: for a second set of kernels of the same model.
    pub fn again(&mut self) -> Optimize<'_> {
        match self {
            Optimize::Off => Optimize::Off,
            Optimize::Heuristics => Optimize::Heuristics,
            Optimize::Beam(b) => Optimize::Beam(Beam {
                width: b.width,
                cache: b.cache.clone(),
                cost: &mut *b.cost,
            }),
        }
    }
}

/// What a BEAM search did across a model's kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchStats {
    pub searched: usize,
    pub cached: usize,
}

/// The target's hand-coded heuristics on `k` (fresh: no opts applied).
pub fn heuristics(k: &mut Kernel, lowers: Lowers<'_>) {
    if k.target.has_local {
        gpu_heuristic::optimize(k, lowers);
    } else {
        hand_coded_optimizations(k);
    }
}

/// Chooses the opts of every kernel as `how` says (`buffer_bytes`: the bytes of each kernel's
/// buffers, for measuring candidates): the kernels with their opts, and what a search did.
pub fn optimize(
    mut kernels: Vec<Kernel>,
    buffer_bytes: &[Vec<usize>],
    how: Optimize<'_>,
    lowers: Lowers<'_>,
) -> Result<(Vec<Kernel>, SearchStats), SearchError> {
    let beam = match how {
        Optimize::Off => return Ok((kernels, SearchStats::default())),
        Optimize::Heuristics => None,
        Optimize::Beam(b) => Some(b),
    };
    let searched: Vec<usize> = match &beam {
        Some(_) => (0..kernels.len())
            .filter(|&i| !kernels[i].target.has_local && searchable(&kernels[i]))
            .collect(),
        None => Vec::new(),
    };
    let mut stats = SearchStats::default();
    if let (Some(b), false) = (beam, searched.is_empty()) {
        let fresh: Vec<Kernel> = searched.iter().map(|&i| kernels[i].clone()).collect();
        let sizes: Vec<Vec<usize>> = searched.iter().map(|&i| buffer_bytes[i].clone()).collect();
        let found = cached_beam_search_many(&fresh, &sizes, b.width, &b.cache, b.cost)?;
        for (&i, (opts, hit)) in searched.iter().zip(found) {
            match apply_all(&kernels[i], &opts) {
                Some(k) => kernels[i] = k,
                None => heuristics(&mut kernels[i], lowers),
            }
            if hit {
                stats.cached += 1;
            } else {
                stats.searched += 1;
            }
        }
    }
    for (i, k) in kernels.iter_mut().enumerate() {
        if !searched.contains(&i) {
            heuristics(k, lowers);
        }
    }
    Ok((kernels, stats))
}
