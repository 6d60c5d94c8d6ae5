//! BEAM search over a kernel's opts: from the fresh kernel and the hand-coded opts (measured
//! first, so the search never returns something slower than they are), each round applies every
//! legal action (upcast an output axis, unroll a reduce axis) to each kernel of the beam,
//! measures all the new kernels with a [`CostModel`] (wall time on the host, or instructions on
//! an emulated board: the runners implement it), keeps the `width` cheapest and stops when a
//! round finds nothing cheaper. The kernels of a model are searched in lockstep
//! ([`beam_search_many`]), so that one measurement (one board image) serves a round of every
//! kernel. Results are cached on disk ([`Cache`]), keyed by the kernel's AST, the target and the
//! cost model's context, so a rebuild does not search again.

use super::cache::Cache;
use super::heuristic::hand_coded_optimizations;
use crate::error::Cause;
use crate::kernel::{Kernel, Opt, OptOp};

/// The most values one iteration computes (the product of the upcast and unrolled axes): the
/// hand-coded opts' own limit, so that the beam can grow from them.
const MAX_UPCAST: usize = 256;
/// Rounds of search (opts added to the fresh kernel), at most.
const MAX_ROUNDS: usize = 5;
/// A candidate must be this much cheaper to count as progress.
const MIN_GAIN: f64 = 0.01;
/// Part of every cache key: bumped when the actions, the search or the hand-coded opts it
/// starts from change, so that older results are searched again.
const SEARCH_VERSION: u32 = 6;

/// Errors of the search.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// A kernel's candidates could not be built or measured.
    #[error("measuring kernel {kernel}")]
    Measure {
        kernel: String,
        #[source]
        source: Cause,
    },
    /// The cost model could not measure a round of candidates (its runner's error as the cause).
    #[error("measuring kernels on {place}")]
    CostModel {
        place: String,
        #[source]
        source: Cause,
    },
    /// A cost model answered a round with the wrong number of cost lists.
    #[error("the cost model gave {lists} cost lists for {kernels} kernels")]
    CostCount { lists: usize, kernels: usize },
    #[error("the search cache {path}")]
    Cache {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// What a BEAM search measures its candidates with: implemented by the runners (the host's
/// wall time, an emulated board's instruction count), so that this stage never runs a later
/// one itself.
pub trait CostModel {
    /// What the costs depend on besides the kernel (the device, its compiler and flags): part
    /// of every cache key.
    fn context(&self) -> Result<String, SearchError>;
    /// The candidate as it would be measured (its source): candidates with equal keys are
    /// measured once. `None` when the candidate cannot be built, so it is left out.
    fn key(&mut self, candidate: &Kernel) -> Option<String>;
    /// The cost of each candidate of each group, in order (lower is better), `None` for one
    /// that could not be measured.
    fn measure(&mut self, groups: &[Candidates]) -> Result<Vec<Vec<Option<f64>>>, SearchError>;
}

/// Whether the search may run `k`: candidates run on zero-filled buffers, which is safe when
/// no integer division or remainder could meet a zero (an index read from a buffer is then 0,
/// in bounds; an integer kernel's branch-free arithmetic takes the same steps on any values).
pub fn searchable(k: &Kernel) -> bool {
    use crate::ops::{AluOp, BinaryOp};
    use crate::schedule::ast::Op;
    !k.ast.iter().flat_map(|s| s.lazyops()).any(|n| {
        matches!(
            n.op(),
            Op::Alu(AluOp::Binary(BinaryOp::Div | BinaryOp::Mod))
        ) && !n.dtype().is_float()
    })
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
        for &width in k.target.dot_widths() {
            out.push(Opt::new(OptOp::Dot, axis, width));
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

/// The opts the search finds cheapest for `fresh` (which has no opts applied; its buffers hold
/// `buffer_bytes`).
pub fn beam_search(
    fresh: &Kernel,
    buffer_bytes: &[usize],
    width: usize,
    cost: &mut dyn CostModel,
) -> Result<Vec<Opt>, SearchError> {
    let sizes = [buffer_bytes.to_vec()];
    let mut found = beam_search_many(std::slice::from_ref(fresh), &sizes, width, cost)?;
    Ok(found.pop().unwrap_or_else(|| fresh.applied_opts.clone()))
}

/// The candidates of one kernel in a batched measurement: the kernel's index in the slice
/// the search was given and its label (for errors), the candidate kernels (its opts applied),
/// and the bytes of each of the kernel's buffers.
#[derive(Clone, Debug)]
pub struct Candidates {
    pub kernel: usize,
    pub label: String,
    pub kernels: Vec<Kernel>,
    pub buffer_bytes: Vec<usize>,
}

/// [`beam_search`] of every kernel of `fresh` (the bytes of its buffers in `sizes`), in
/// lockstep: each round measures the candidates of every kernel still searching with one call
/// of `cost`. Returns the opts of each kernel.
pub fn beam_search_many(
    fresh: &[Kernel],
    sizes: &[Vec<usize>],
    width: usize,
    cost: &mut dyn CostModel,
) -> Result<Vec<Vec<Opt>>, SearchError> {
    let mut searches: Vec<Search> = fresh.iter().map(|k| Search::new(k, cost)).collect();
    loop {
        let open: Vec<usize> = (0..searches.len()).filter(|&i| !searches[i].done).collect();
        if open.is_empty() {
            break;
        }
        let groups: Vec<Candidates> = open
            .iter()
            .map(|&i| Candidates {
                kernel: i,
                label: fresh[i].label(),
                kernels: searches[i].pending.clone(),
                buffer_bytes: sizes.get(i).cloned().unwrap_or_default(),
            })
            .collect();
        let costs = cost.measure(&groups)?;
        if costs.len() != groups.len() {
            return Err(SearchError::CostCount {
                lists: costs.len(),
                kernels: groups.len(),
            });
        }
        for (i, c) in open.into_iter().zip(costs) {
            searches[i].feed(c, width, cost);
        }
    }
    Ok(searches.into_iter().map(Search::result).collect())
}

/// The state of one kernel's search between rounds.
///
/// INTERIOR is not a step of the beam but a choice made for every candidate: each one is
/// measured as it is and, where the opt applies, with it too. The beam moves by the plain
/// candidates' costs, as it would without the choice, and the result is the cheapest of all
/// that were measured, so a kernel never comes out slower than its search without INTERIOR.
struct Search {
    /// The hand-coded opts: the result when no candidate could be measured.
    hand: Vec<Opt>,
    /// The cheapest plain cost so far (which decides when the search stops).
    best_plain: Option<f64>,
    /// The cheapest cost of any candidate so far and its opts.
    best: Option<(f64, Vec<Opt>)>,
    beam: Vec<Kernel>,
    /// The candidates of the round to measure next, each with whether it is the INTERIOR
    /// twin of the one before it.
    pending: Vec<Kernel>,
    twin: Vec<bool>,
    /// Rounds measured after the first (the fresh and hand-coded kernels).
    rounds: usize,
    done: bool,
}

impl Search {
    /// The first round: the fresh kernel and the hand-coded opts (without INTERIOR, which
    /// every candidate is measured with as well).
    fn new(fresh: &Kernel, cost: &mut dyn CostModel) -> Search {
        let mut hand = fresh.clone();
        hand_coded_optimizations(&mut hand);
        let hand_opts = hand.applied_opts.clone();
        let plain: Vec<Opt> = (hand_opts.iter())
            .filter(|o| o.op != OptOp::Interior)
            .copied()
            .collect();
        let mut start = vec![fresh.clone()];
        if let Some(h) = apply_all(fresh, &plain).filter(|h| h.applied_opts != fresh.applied_opts) {
            start.push(h);
        }
        let mut s = Search {
            hand: hand_opts,
            best_plain: None,
            best: None,
            beam: Vec::new(),
            pending: Vec::new(),
            twin: Vec::new(),
            done: false,
            rounds: 0,
        };
        let mut seen = std::collections::HashSet::new();
        for k in start {
            s.push(k, cost, &mut seen);
        }
        s.done = s.pending.is_empty();
        s
    }

    /// Queues `k` (once, by the cost model's key) and its INTERIOR twin.
    fn push(
        &mut self,
        k: Kernel,
        cost: &mut dyn CostModel,
        seen: &mut std::collections::HashSet<String>,
    ) {
        let Some(key) = cost.key(&k) else { return };
        if !seen.insert(key) {
            return;
        }
        let mut twin = k.clone();
        let twin = twin
            .apply_opt(Opt::interior())
            .ok()
            .and_then(|()| cost.key(&twin).map(|_| twin));
        self.pending.push(k);
        self.twin.push(false);
        if let Some(t) = twin {
            self.pending.push(t);
            self.twin.push(true);
        }
    }

    /// Takes the costs of the pending candidates and prepares the next round, or ends.
    fn feed(&mut self, costs: Vec<Option<f64>>, width: usize, cost: &mut dyn CostModel) {
        let pending = std::mem::take(&mut self.pending);
        let twins = std::mem::take(&mut self.twin);
        let mut round: Vec<(f64, Kernel)> = Vec::new();
        for ((k, c), twin) in pending.into_iter().zip(costs).zip(twins) {
            let Some(c) = c else { continue };
            if self.best.as_ref().is_none_or(|(b, _)| c < *b) {
                self.best = Some((c, k.applied_opts.clone()));
            }
            if !twin {
                round.push((c, k));
            }
        }
        round.sort_by(|a, b| a.0.total_cmp(&b.0));
        let Some((c, _)) = round.first() else {
            self.done = true;
            return;
        };
        if let Some(best) = self.best_plain {
            if *c >= best * (1.0 - MIN_GAIN) {
                self.done = true;
                return;
            }
            self.rounds += 1;
        }
        // The first round's beam grows from the fresh kernel and from the hand-coded one:
        // actions on top of good hand-coded opts are often what beats them.
        self.best_plain = Some(*c);
        self.beam = round
            .into_iter()
            .take(width.max(1))
            .map(|(_, k)| k)
            .collect();
        if self.rounds >= MAX_ROUNDS {
            self.done = true;
            return;
        }
        self.expand(cost);
    }

    /// Every legal action on every kernel of the beam, each distinct candidate (by the cost
    /// model's key) once, each with its INTERIOR twin.
    fn expand(&mut self, cost: &mut dyn CostModel) {
        let mut seen = std::collections::HashSet::new();
        for k in self.beam.clone() {
            for a in actions(&k) {
                let mut k2 = k.clone();
                if k2.apply_opt(a).is_err() || upcast_size(&k2) > MAX_UPCAST {
                    continue;
                }
                self.push(k2, cost, &mut seen);
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

/// The opts for `fresh`: from `cache` when it has them, else searched with `cost` and stored.
/// Returns the opts and whether they came from the cache.
pub fn cached_beam_search(
    fresh: &Kernel,
    buffer_bytes: &[usize],
    width: usize,
    cache: &Cache,
    cost: &mut dyn CostModel,
) -> Result<(Vec<Opt>, bool), SearchError> {
    let sizes = [buffer_bytes.to_vec()];
    let one = std::slice::from_ref(fresh);
    let mut found = cached_beam_search_many(one, &sizes, width, cache, cost)?;
    Ok(found
        .pop()
        .unwrap_or_else(|| (fresh.applied_opts.clone(), false)))
}

/// [`cached_beam_search`] of every kernel of `fresh`: the kernels the cache lacks are searched
/// together ([`beam_search_many`]), kernels with the same AST once; `cost` gets their indices
/// in `fresh`. Returns each kernel's opts and whether they came from the cache.
pub fn cached_beam_search_many(
    fresh: &[Kernel],
    sizes: &[Vec<usize>],
    width: usize,
    cache: &Cache,
    cost: &mut dyn CostModel,
) -> Result<Vec<(Vec<Opt>, bool)>, SearchError> {
    let context = cost.context()?;
    let keys: Vec<(String, String)> = fresh
        .iter()
        .map(|k| {
            // The listing names buffers and shapes only: the views (a layout, a transpose)
            // and the buffers the kernel may lay out again tell apart kernels it shows alike.
            let mut ast: String = k.ast.iter().map(|s| s.to_string()).collect();
            ast.push_str(&format!("views {:?}\nfree {:?}\n", k.sts, k.free_layout));
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
        let miss_sizes: Vec<Vec<usize>> = misses
            .iter()
            .map(|&i| sizes.get(i).cloned().unwrap_or_default())
            .collect();
        let mut renumbered = Renumbered {
            inner: cost,
            index: &misses,
        };
        let searched = beam_search_many(&kernels, &miss_sizes, width, &mut renumbered)?;
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

/// A cost model that hands on groups under the kernel indices of the slice its caller
/// searches (the search itself numbers only the kernels it searches).
struct Renumbered<'a> {
    inner: &'a mut dyn CostModel,
    index: &'a [usize],
}

impl CostModel for Renumbered<'_> {
    fn context(&self) -> Result<String, SearchError> {
        self.inner.context()
    }

    fn key(&mut self, candidate: &Kernel) -> Option<String> {
        self.inner.key(candidate)
    }

    fn measure(&mut self, groups: &[Candidates]) -> Result<Vec<Vec<Option<f64>>>, SearchError> {
        let groups: Vec<Candidates> = groups
            .iter()
            .map(|g| Candidates {
                kernel: self.index[g.kernel],
                label: g.label.clone(),
                kernels: g.kernels.clone(),
                buffer_bytes: g.buffer_bytes.clone(),
            })
            .collect();
        self.inner.measure(&groups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::ops::{AluOp, BinaryOp};
    use crate::schedule::ast::LazyOp;
    use crate::shape::ShapeTracker;
    use crate::target::Target;

    /// out[i] = sum_j a[i, j] * b[j]: a 16×8 matrix times a vector.
    fn matvec() -> Kernel {
        crate::kernel::examples::matvec(16, 8, Target::c())
    }

    /// A cost model of plain arithmetic on the opts: each candidate is keyed by its opts and
    /// costs what `cost` says of them.
    struct ByOpts<F: FnMut(&[Opt]) -> Option<f64>> {
        context: &'static str,
        cost: F,
        calls: usize,
    }

    impl<F: FnMut(&[Opt]) -> Option<f64>> CostModel for ByOpts<F> {
        fn context(&self) -> Result<String, SearchError> {
            Ok(self.context.to_string())
        }

        fn key(&mut self, candidate: &Kernel) -> Option<String> {
            Some(format!("{:?}", candidate.applied_opts))
        }

        fn measure(&mut self, groups: &[Candidates]) -> Result<Vec<Vec<Option<f64>>>, SearchError> {
            self.calls += 1;
            let cost = &mut self.cost;
            Ok(groups
                .iter()
                .map(|g| g.kernels.iter().map(|k| cost(&k.applied_opts)).collect())
                .collect())
        }
    }

    fn by_opts<F: FnMut(&[Opt]) -> Option<f64>>(context: &'static str, cost: F) -> ByOpts<F> {
        ByOpts {
            context,
            cost,
            calls: 0,
        }
    }

    #[test]
    fn the_search_follows_the_cost() {
        // A cost that rewards upcasting the output axis and nothing else.
        let mut cost = by_opts("test", |opts| {
            let up = opts
                .iter()
                .filter(|o| o.op == OptOp::Upcast)
                .map(|o| o.amt.max(1))
                .product::<usize>();
            Some(100.0 / up as f64 + opts.len() as f64 * 0.01)
        });
        let opts = beam_search(&matvec(), &[], 2, &mut cost).unwrap();
        assert!(cost.calls >= 2);
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
        let mut cost = by_opts("test", |_| None);
        let opts = beam_search(&matvec(), &[], 2, &mut cost).unwrap();
        let mut hand = matvec();
        hand_coded_optimizations(&mut hand);
        assert!(!hand.applied_opts.is_empty());
        assert_eq!(opts, hand.applied_opts);
    }

    #[test]
    fn candidates_the_cost_model_cannot_build_are_left_out() {
        struct NoUnroll(usize);
        impl CostModel for NoUnroll {
            fn context(&self) -> Result<String, SearchError> {
                Ok("no-unroll".into())
            }
            fn key(&mut self, k: &Kernel) -> Option<String> {
                let unrolled = k.applied_opts.iter().any(|o| o.op == OptOp::Unroll);
                (!unrolled).then(|| format!("{:?}", k.applied_opts))
            }
            fn measure(
                &mut self,
                groups: &[Candidates],
            ) -> Result<Vec<Vec<Option<f64>>>, SearchError> {
                self.0 += groups.iter().map(|g| g.kernels.len()).sum::<usize>();
                let unrolled = groups
                    .iter()
                    .flat_map(|g| &g.kernels)
                    .any(|k| k.applied_opts.iter().any(|o| o.op == OptOp::Unroll));
                assert!(!unrolled, "an unbuildable candidate was measured");
                Ok(groups
                    .iter()
                    .map(|g| {
                        g.kernels
                            .iter()
                            .map(|k| Some(k.applied_opts.len() as f64))
                            .collect()
                    })
                    .collect())
            }
        }
        let mut cost = NoUnroll(0);
        let opts = beam_search(&matvec(), &[], 2, &mut cost).unwrap();
        assert!(cost.0 > 0);
        assert!(opts.iter().all(|o| o.op != OptOp::Unroll), "{opts:?}");
    }

    #[test]
    fn a_cached_search_is_not_repeated() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache {
            dir: dir.path().to_path_buf(),
        };
        let mut cost = by_opts("test", |opts| Some(10.0 - opts.len() as f64));
        let (first, hit) = cached_beam_search(&matvec(), &[], 2, &cache, &mut cost).unwrap();
        assert!(!hit);
        let searched = cost.calls;
        assert!(searched > 0);
        let (again, hit) = cached_beam_search(&matvec(), &[], 2, &cache, &mut cost).unwrap();
        assert!(hit);
        assert_eq!(again, first);
        assert_eq!(cost.calls, searched, "a cache hit measures nothing");
        // Another cost context is another entry.
        let mut other = by_opts("other", |opts| Some(10.0 - opts.len() as f64));
        let (_, hit) = cached_beam_search(&matvec(), &[], 2, &cache, &mut other).unwrap();
        assert!(!hit);
    }

    #[test]
    fn every_candidate_is_measured_with_interior_as_well() {
        let conv = crate::kernel::examples::conv2d(2, 4, [8, 8], 3, 1, Target::c());
        let has = |opts: &[Opt]| opts.iter().any(|o| o.op == OptOp::Interior);
        // INTERIOR halves any candidate's cost: the cheapest has it, on top of upcasts.
        let mut measured_with = 0;
        let mut cost = by_opts("test", |opts| {
            measured_with += has(opts) as usize;
            let up = opts.iter().filter(|o| o.op == OptOp::Upcast).count() as f64;
            Some((10.0 - up) / if has(opts) { 2.0 } else { 1.0 })
        });
        let opts = beam_search(&conv, &[], 2, &mut cost).unwrap();
        assert!(has(&opts), "{opts:?}");
        assert!(opts.iter().any(|o| o.op == OptOp::Upcast), "{opts:?}");
        assert!(measured_with > 2, "the twins of several rounds");
        // A kernel without masks has no twins.
        let mut plain = by_opts("test", |opts| Some(10.0 - opts.len() as f64));
        assert!(!has(&beam_search(&matvec(), &[], 2, &mut plain).unwrap()));
    }

    #[test]
    fn kernels_that_list_alike_but_read_other_views_are_cached_apart() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache {
            dir: dir.path().to_path_buf(),
        };
        // The same listing (buffers and shapes), the matrix read transposed.
        let mut transposed = matvec();
        let st = ShapeTracker::from_shape(&[8, 16]).permute(&[1, 0]).unwrap();
        transposed.ast = vec![transposed.ast[0].map_views(&|m| (m.idx.0 == 1).then(|| st.clone()))];
        transposed.sts[1] = st.clone();
        assert_eq!(
            transposed.ast[0].to_string(),
            matvec().ast[0].to_string(),
            "the listing shows no view"
        );
        let mut cost = by_opts("test", |opts| Some(10.0 - opts.len() as f64));
        cached_beam_search(&matvec(), &[], 2, &cache, &mut cost).unwrap();
        let (_, hit) = cached_beam_search(&transposed, &[], 2, &cache, &mut cost).unwrap();
        assert!(!hit, "a transposed read is another kernel");
    }

    #[test]
    fn kernels_that_could_divide_by_zero_are_not_searched() {
        assert!(searchable(&matvec()));
        let st = ShapeTracker::from_shape(&[8]);
        let int = |op| {
            let alu = LazyOp::alu(
                AluOp::Binary(op),
                vec![
                    LazyOp::load(1, DType::I32, st.clone()),
                    LazyOp::load(2, DType::I32, st.clone()),
                ],
            );
            Kernel::new(vec![LazyOp::store(0, st.clone(), alu)], Target::c()).unwrap()
        };
        assert!(!searchable(&int(BinaryOp::Div)));
        assert!(!searchable(&int(BinaryOp::Mod)));
        // Integer kernels are searched (an int8 convolution's products and requantization).
        assert!(searchable(&int(BinaryOp::Mul)));
    }
}
