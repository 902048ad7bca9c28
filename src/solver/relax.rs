//! The relaxed global matrix of large cloths: `A` without its bending
//! springs.
//!
//! A bending spring joins two vertices two edges apart, so it widens the
//! sparsity pattern of `A` and, far more, the fill of its Cholesky factor:
//! the 250 × 250 cloth's `L` holds 5.58 M entries with its bending springs
//! and 2.62 M without them. Its weight, though, is small beside the
//! structural springs around it (20 against 1000 N/m in the default cloth).
//! The single-precision solve is already a correction from a guess,
//! `x = x₀ + P⁻¹ (b − A x₀)` with the residual against the exact `A`
//! (`solver::mixed`), so `P` need not be `A`: for such a model the solver
//! factorises `P = A − A_b`, `A_b` the bending springs' part. The fixed
//! points are still the exact solve's; only the correction is inexact.
//!
//! How inexact is certified from the model, not hoped for. Every bending
//! spring `(c, d)` is routed over two structural springs `c–a–d` (its two
//! ends' common neighbour), and `‖x_c − x_d‖² ≤ 2 ‖x_c − x_a‖² + 2 ‖x_a −
//! x_d‖²`. With `k` the most routes over one structural spring, `A_b ⪯ ρ P`
//! for `ρ = 2 k w_bending / w_structural` (pinned vertices are zeros of
//! these forms, so the bound holds on the unknowns). Then the correction's
//! error is `−P⁻¹ A_b` times the guess's error, at most `ρ` of it in the
//! `P` norm, and the step lowers the global step's quadratic whenever
//! `ρ < 1` (it falls by `½ dᵀ (P − A_b) d ≥ ½ (1 − ρ) dᵀ P d`), so the PD
//! objective still falls at every global step. The solver relaxes only
//! when `ρ ≤` [`RELAXED_BOUND`]; on a grid `k = 2` (the default cloth:
//! `ρ = 0.08`).

use crate::model::{Model, SpringKind};

/// The largest certified `ρ` (see the module documentation) at which the
/// solver factorises the relaxed matrix.
pub const RELAXED_BOUND: f64 = 0.25;

/// The most bending springs routed over one structural spring, routing each
/// over the common neighbour of its ends whose two springs carry the fewest
/// routes so far; `None` if the model has no bending spring with a free end
/// or one whose ends have no common neighbour over structural springs.
/// `free(v)`: whether vertex `v` is an unknown.
pub(crate) fn bending_load(model: &Model, free: impl Fn(u32) -> bool) -> Option<u32> {
    let springs = &model.springs;
    let n = model.vertex_count();
    // Structural neighbours of each vertex, by vertex: (neighbour, spring).
    let mut start = vec![0usize; n + 1];
    for s in &springs.structural {
        start[s.a as usize + 1] += 1;
        start[s.b as usize + 1] += 1;
    }
    for v in 0..n {
        start[v + 1] += start[v];
    }
    let mut next = start.clone();
    let mut around = vec![(0u32, 0u32); start[n]];
    for (i, s) in springs.structural.iter().enumerate() {
        for (v, w) in [(s.a, s.b), (s.b, s.a)] {
            around[next[v as usize]] = (w, i as u32);
            next[v as usize] += 1;
        }
    }
    for v in 0..n {
        around[start[v]..start[v + 1]].sort_unstable();
    }
    let neighbours = |v: u32| &around[start[v as usize]..start[v as usize + 1]];
    let mut load = vec![0u32; springs.structural.len()];
    let mut any = false;
    for b in &springs.bending {
        if b.a == b.b || !(free(b.a) || free(b.b)) {
            continue; // no part in A
        }
        any = true;
        let (ca, ad) = common_neighbours(neighbours(b.a), neighbours(b.b))
            .min_by_key(|&(ca, ad)| load[ca as usize].max(load[ad as usize]))?;
        load[ca as usize] += 1;
        load[ad as usize] += 1;
    }
    any.then(|| load.into_iter().max().unwrap_or(0))
}

/// The springs `(c–a, a–d)` of every common neighbour `a` of two vertices,
/// from their sorted neighbour lists.
fn common_neighbours<'a>(
    c: &'a [(u32, u32)],
    d: &'a [(u32, u32)],
) -> impl Iterator<Item = (u32, u32)> + 'a {
    let (mut i, mut j) = (0, 0);
    std::iter::from_fn(move || {
        while i < c.len() && j < d.len() {
            match c[i].0.cmp(&d[j].0) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    let pair = (c[i].1, d[j].1);
                    (i, j) = (i + 1, j + 1);
                    return Some(pair);
                }
            }
        }
        None
    })
}

/// The certified `ρ` of a model whose bending load is `load`, with its
/// current weights (infinite without structural stiffness).
pub(crate) fn bound(model: &Model, load: u32) -> f64 {
    let w = &model.weights;
    let structural = w.spring(SpringKind::Structural);
    if structural > 0.0 {
        2.0 * f64::from(load) * w.spring(SpringKind::Bending) / structural
    } else {
        f64::INFINITY
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Scene;

    /// On a grid, every bending spring has one route, over the vertex
    /// between its ends, and each structural spring carries two (one from
    /// each side); the default cloth's bound is then 0.08.
    #[test]
    fn a_grid_routes_two_bending_springs_over_each_structural_one() {
        let model = Scene::cloth(12).model();
        assert_eq!(bending_load(&model, |_| true), Some(2));
        assert!((bound(&model, 2) - 0.08).abs() < 1e-15);
        let mut bare = model.clone();
        bare.springs.bending.clear();
        assert_eq!(bending_load(&bare, |_| true), None);
        // A bending spring between two vertices with no common neighbour
        // has no route: nothing is certified.
        let mut stray = model;
        stray.springs.bending.push(crate::model::Spring {
            a: 0,
            b: 143,
            rest: 1.0,
        });
        assert_eq!(bending_load(&stray, |_| true), None);
    }
}
