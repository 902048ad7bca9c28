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

use crate::mesh::topology::Incidence;
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
    let ends: Vec<[u32; 2]> = springs.structural.iter().map(|s| [s.a, s.b]).collect();
    let around = Incidence::new(model.vertex_count(), ends.iter().map(|e| e.as_slice()));
    // The other end of structural spring `s` from `v`.
    let far = |s: u32, v: u32| match ends[s as usize] {
        [a, b] if a == v => b,
        [a, _] => a,
    };
    let mut load = vec![0u32; ends.len()];
    let mut any = false;
    for b in &springs.bending {
        if b.a == b.b || !(free(b.a) || free(b.b)) {
            continue; // no part in A
        }
        any = true;
        // Springs c–a and a–d meeting at a common neighbour a (a vertex has
        // a handful of springs).
        let (ca, ad) = (around.of(b.a).iter())
            .flat_map(|&ca| around.of(b.b).iter().map(move |&ad| (ca, ad)))
            .filter(|&(ca, ad)| far(ca, b.a) == far(ad, b.b))
            .min_by_key(|&(ca, ad)| load[ca as usize].max(load[ad as usize]))?;
        load[ca as usize] += 1;
        load[ad as usize] += 1;
    }
    any.then(|| load.into_iter().max().unwrap_or(0))
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
