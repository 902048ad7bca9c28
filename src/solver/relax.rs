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
//! spring `(c, d)` is routed over two springs `c–a–d` of `P` (its two
//! ends' common neighbour `a`; structural springs where they reach, shear
//! springs where not, as across the sides of a mesh's quads), and
//! `‖x_c − x_d‖² ≤ 2 ‖x_c − x_a‖² + 2 ‖x_a − x_d‖²`. With `k_s` the most
//! routes over one spring of kind `s`, `A_b ⪯ ρ P` for
//! `ρ = max_s 2 k_s w_bending / w_s` (pinned vertices are zeros of these
//! forms, so the bound holds on the unknowns). Then the correction's
//! error is `−P⁻¹ A_b` times the guess's error, at most `ρ` of it in the
//! `P` norm, and the step lowers the global step's quadratic whenever
//! `ρ < 1` (it falls by `½ dᵀ (P − A_b) d ≥ ½ (1 − ρ) dᵀ P d`), so the PD
//! objective still falls at every global step. The solver relaxes only
//! when `ρ ≤` [`RELAXED_BOUND`]; on a grid every route is structural and
//! `k = 2` (the default cloth: `ρ = 0.08`).

use crate::mesh::topology::Incidence;
use crate::model::{Model, SpringKind};

/// The largest certified `ρ` (see the module documentation) at which the
/// solver factorises the relaxed matrix.
pub const RELAXED_BOUND: f64 = 0.25;

/// The most bending springs routed over one spring of each kind that can
/// carry routes (see the module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BendingLoad {
    /// Over one structural spring.
    pub structural: u32,
    /// Over one shear spring.
    pub shear: u32,
}

/// Routes every bending spring over the common neighbour of its ends whose
/// two springs are structural if any are, then carry the fewest routes so
/// far; `None` if the model has no bending spring with a free end or one
/// whose ends have no common neighbour over structural or shear springs.
/// `free(v)`: whether vertex `v` is an unknown.
pub(crate) fn bending_load(model: &Model, free: impl Fn(u32) -> bool) -> Option<BendingLoad> {
    let springs = &model.springs;
    let structural = springs.structural.len();
    let ends: Vec<[u32; 2]> = (springs.structural.iter().chain(&springs.shear))
        .map(|s| [s.a, s.b])
        .collect();
    let around = Incidence::new(model.vertex_count(), ends.iter().map(|e| e.as_slice()));
    // The other end of spring `s` from `v`.
    let far = |s: u32, v: u32| match ends[s as usize] {
        [a, b] if a == v => b,
        [a, _] => a,
    };
    let is_shear = |s: u32| s as usize >= structural;
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
            .min_by_key(|&(ca, ad)| {
                let shear = u8::from(is_shear(ca)) + u8::from(is_shear(ad));
                (shear, load[ca as usize].max(load[ad as usize]))
            })?;
        load[ca as usize] += 1;
        load[ad as usize] += 1;
    }
    let most = |loads: &[u32]| loads.iter().copied().max().unwrap_or(0);
    any.then(|| BendingLoad {
        structural: most(&load[..structural]),
        shear: most(&load[structural..]),
    })
}

/// The certified `ρ` of a model whose bending load is `load`, with its
/// current weights (infinite when a spring kind that carries routes has
/// no stiffness).
pub(crate) fn bound(model: &Model, load: BendingLoad) -> f64 {
    let w = &model.weights;
    let bending = w.spring(SpringKind::Bending);
    [
        (load.structural, SpringKind::Structural),
        (load.shear, SpringKind::Shear),
    ]
    .into_iter()
    .filter(|&(routes, _)| routes > 0)
    .map(|(routes, kind)| {
        let carrier = w.spring(kind);
        if carrier > 0.0 {
            2.0 * f64::from(routes) * bending / carrier
        } else {
            f64::INFINITY
        }
    })
    .fold(0.0, f64::max)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::bench::Scene;

    /// On a grid, every bending spring has one route, over the vertex
    /// between its ends, and each structural spring carries two (one from
    /// each side); the default cloth's bound is then 0.08.
    #[test]
    fn a_grid_routes_two_bending_springs_over_each_structural_one() {
        let model = Scene::cloth(12).model();
        let load = BendingLoad {
            structural: 2,
            shear: 0,
        };
        assert_eq!(bending_load(&model, |_| true), Some(load));
        assert!((bound(&model, load) - 0.08).abs() < 1e-15);
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

    /// On a mesh of quads (cut along one diagonal) every bending spring
    /// crosses a quad's side between two of its diagonals, so every route
    /// takes one side and one diagonal, and the bound weighs each kind's
    /// load by its own stiffness.
    #[test]
    fn a_quad_mesh_routes_over_sides_and_diagonals() {
        let model = quad_cloth(12);
        let load = bending_load(&model, |_| true).unwrap();
        // Its two ends' common neighbours are the side's ends, and the
        // routes spread one per side and two per diagonal.
        assert_eq!(
            load,
            BendingLoad {
                structural: 1,
                shear: 2
            }
        );
        // max(2 · 1 · 20 / 1000, 2 · 2 · 20 / 500)
        assert!((bound(&model, load) - 0.16).abs() < 1e-15);
    }

    /// An OBJ-style cloth of `n × n` nodes in quads (cotton's weights and
    /// density), built through validation as an imported mesh is.
    pub(crate) fn quad_cloth(n: usize) -> Model {
        use crate::mesh::{ValidateOptions, primitives, validate};
        let raw = primitives::cloth_square(n, 1.0, true);
        let options = ValidateOptions::default();
        let (surface, _) = validate(&raw, std::path::Path::new("quads"), &options).unwrap();
        Model::from_surface(&surface, 0.15, crate::model::Weights::default())
    }
}
