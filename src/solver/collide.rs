//! Colliders: a ground plane and spheres, with Coulomb friction on the
//! tangential motion. A vertex that ends a step inside one is projected out;
//! one resting on it is then held on it inside the solve by a [`Contact`]
//! (see `Solver::collide`).

use crate::mesh::Vec3;
use crate::model::Model;

/// A static obstacle.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Collider {
    /// The half-space `y ≥ height`.
    Ground {
        /// Height of the plane.
        height: f64,
        /// Coulomb friction coefficient (0 = ice).
        friction: f64,
    },
    /// A solid sphere.
    Sphere {
        /// Centre.
        center: Vec3,
        /// Radius.
        radius: f64,
        /// Coulomb friction coefficient.
        friction: f64,
    },
}

/// A vertex resting on a collider. The solve pins it to the collider's
/// surface with a weight of [`CONTACT_STIFFNESS`] `m/h²` (a spring model's
/// sliding on a sphere with less: see `Solver::stiffness`), for as long as
/// the pin pushes it out. A sliding contact is pulled to the surface point
/// nearest to it (on a ground only its height is pinned: x and z are
/// free), slowed by friction (a tet body's in the solve from its second
/// substep, [`Collider::kinetic_friction`], and on a ground not at all in
/// its first, nor in a substep after one in which it bore none of the
/// body's load, see `Solver::weigh_grounds`; otherwise after the solve); a
/// sticking one is pinned where it stopped, for as long as friction can
/// hold it there (on a spring model it may lift off along the normal
/// there: [`Contact::target`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact {
    /// The vertex.
    pub vertex: u32,
    /// Its collider: an index into [`SimParams::colliders`](super::SimParams::colliders).
    pub collider: u32,
    /// Where static friction holds it, a point of the surface (pinned
    /// there in the solve, from the substep it stopped sliding), if it does.
    pub sticking: Option<Vec3>,
    /// The force its pin pushed it out with at the end of its last substep
    /// (N), which bounds friction in the next; `None` for a new contact
    /// (made in the substep's set-up, or pushed out at the end of the last
    /// one), which has not had one. (On a ground under a tet body, the
    /// share of it that was the body's load: see `Solver::weigh_grounds`.)
    pub push: Option<f64>,
}

impl Contact {
    /// A contact from its first substep, sticking at `sticking` if given.
    pub fn new(vertex: u32, collider: u32, sticking: Option<Vec3>) -> Self {
        Self {
            vertex,
            collider,
            sticking,
            push: None,
        }
    }

    /// Whether its pin holds only its height (a ground's sliding contact:
    /// x and z are free), not every coordinate.
    pub fn pins_height_only(&self, collider: &Collider) -> bool {
        self.sticking.is_none() && collider.pins_height_only()
    }

    /// Where its pin pulls its vertex at `x` on `collider`: a sliding
    /// contact's, the surface point nearest to `x`; a sticking one's, its
    /// anchor, or where `lifts`, the nearest point of the ray from the
    /// anchor along the surface's normal there (it may lift off the
    /// collider, not move along it).
    ///
    /// Pulled to its anchor, a sticking contact that the body carried up
    /// was held down for the substep (and the next substep's inertial
    /// target landed it again): QA's cloth dropped onto a ball of friction
    /// 100 rose 1.0 J above its start, more than the 0.85 J of kinetic
    /// energy it hit the ball with.
    pub fn target(&self, collider: &Collider, x: Vec3, lifts: bool) -> Vec3 {
        match self.sticking {
            Some(anchor) if lifts => {
                let normal = collider.normal(anchor);
                anchor + normal * (x - anchor).dot(&normal).max(0.0)
            }
            Some(anchor) => anchor,
            None => collider.surface_point(x),
        }
    }
}

/// The weight of a contact's pin over its vertex's `m/h²`: the vertex then
/// sinks by a thousandth of what an unsupported step would let it.
pub const CONTACT_STIFFNESS: f64 = 1e3;

impl Collider {
    /// Moves `x` out of the collider if it ended the step inside, and applies
    /// friction when it was inside or (on a ground) `support > 0`. `start` is
    /// the vertex's position at the start of the step; `support` is how far
    /// a [`Contact`]'s pin pushed it along the normal in the step (`h² f / m`
    /// for its force `f`; 0 for a vertex without one). The tangential part of the motion is shortened by
    /// `friction × (support + penetration)` (the normal impulse bounds the
    /// friction impulse), and stops when that exceeds it. Returns whether
    /// there was contact, and whether friction then held the vertex.
    #[inline]
    pub fn resolve(&self, x: &mut Vec3, start: Vec3, support: f64) -> Resolved {
        match *self {
            Collider::Ground { height, friction } => {
                let depth = (height - x.y).max(0.0);
                if depth == 0.0 && support <= 0.0 {
                    return Resolved::Apart;
                }
                x.y = x.y.max(height);
                let mut tangential = *x - start;
                tangential.y = 0.0;
                let (cut, held) = friction_cut(tangential, friction * (depth + support));
                *x -= cut;
                held
            }
            Collider::Sphere {
                center,
                radius,
                friction,
            } => {
                let d = *x - center;
                let dist = d.norm();
                if dist >= radius {
                    return Resolved::Apart;
                }
                let normal = if dist > 0.0 { d / dist } else { Vec3::y() };
                let depth = radius - dist;
                let surface = center + normal * radius;
                let motion = surface - start;
                let tangential = motion - normal * motion.dot(&normal);
                let (cut, held) = friction_cut(tangential, friction * (depth + support));
                // Back onto the surface (sliding along a tangent leaves it).
                *x = self.surface_point(surface - cut);
                held
            }
        }
    }

    /// How far `x` is inside, along the surface's normal (negative
    /// outside).
    pub fn depth(&self, x: Vec3) -> f64 {
        match *self {
            Collider::Ground { height, .. } => height - x.y,
            Collider::Sphere { center, radius, .. } => radius - (x - center).norm(),
        }
    }

    /// The point of the surface nearest to `x` (a sphere's top for its
    /// centre), on a sphere a hair outside so that rounding cannot put it
    /// inside.
    pub fn surface_point(&self, x: Vec3) -> Vec3 {
        match *self {
            Collider::Ground { height, .. } => Vec3::new(x.x, height, x.z),
            Collider::Sphere { center, radius, .. } => {
                center + self.normal(x) * (radius * (1.0 + 4.0 * f64::EPSILON))
            }
        }
    }

    /// The outward normal of the surface at its point nearest to `x`.
    pub fn normal(&self, x: Vec3) -> Vec3 {
        match *self {
            Collider::Ground { .. } => Vec3::y(),
            Collider::Sphere { center, .. } => {
                let d = x - center;
                let n = d.norm();
                if n > 0.0 { d / n } else { Vec3::y() }
            }
        }
    }

    /// Whether `x` lies on the surface, as [`Collider::surface_point`]
    /// and [`Collider::resolve`] leave a point (within round-off of the
    /// collider's size and distance from the origin).
    pub fn holds(&self, x: Vec3) -> bool {
        let scale = match *self {
            Collider::Ground { height, .. } => 1.0 + height.abs(),
            Collider::Sphere { center, radius, .. } => 1.0 + radius + center.norm(),
        };
        self.depth(x).abs() <= 1e-12 * scale
    }

    /// Where static friction holds a vertex landing from `start` (on or
    /// outside) toward `target` (inside): the surface point under `start`,
    /// if the approach's motion along the surface is within the friction
    /// coefficient times its motion into it (the impulse that stops it
    /// inside the friction cone); `None` if it slides, as it always does
    /// without friction (a vertex falling straight down onto ice stuck,
    /// its pin holding it along the ice in the solve).
    pub fn landing_hold(&self, start: Vec3, target: Vec3) -> Option<Vec3> {
        let anchor = self.surface_point(start);
        let normal = self.normal(anchor);
        let motion = target - start;
        let into = -motion.dot(&normal);
        let along = (motion + normal * into).norm();
        let friction = self.friction();
        (into > 0.0 && friction > 0.0 && along <= friction * into).then_some(anchor)
    }

    /// Kinetic friction on a contact sliding from `start` toward its
    /// inertial target `target`, pushed out with the force `push` (N; its
    /// [`Contact::push`], on a ground the share of its pin's push that was
    /// the body's load): the
    /// friction coefficient times `push`, against the target's motion along
    /// the surface (zero without such motion or push).
    ///
    /// It acts in the solve as a constant force, so friction decelerates
    /// the body the contact carries: applied after the solve to the
    /// contact's vertex alone, a vertex under a tet body's column (its push
    /// the column's weight, its mass its own) lost more than its whole slide
    /// every substep, and stuck; sticking, the column's pull released it,
    /// and the next substep stopped it again. A 0.5 m box on a slope of 0.35
    /// stayed put at any friction from 0.05 up.
    pub fn kinetic_friction(&self, push: f64, start: Vec3, target: Vec3) -> Vec3 {
        let normal = self.normal(start);
        let motion = target - start;
        let along = motion - normal * motion.dot(&normal);
        let length = along.norm();
        if push > 0.0 && length > 0.0 {
            along * (-self.friction() * push / length)
        } else {
            Vec3::zeros()
        }
    }

    /// Whether the solve pins only a contact's height: a ground's sliding
    /// contacts are free along it (x and z), the other contacts are
    /// pinned in every coordinate (a sphere's normal is not a coordinate
    /// axis).
    pub fn pins_height_only(&self) -> bool {
        matches!(self, Collider::Ground { .. })
    }

    /// The friction coefficient.
    pub fn friction(&self) -> f64 {
        match *self {
            Collider::Ground { friction, .. } | Collider::Sphere { friction, .. } => friction,
        }
    }

    /// The height of a ground collider (`None` for a sphere).
    pub fn ground_height(&self) -> Option<f64> {
        match *self {
            Collider::Ground { height, .. } => Some(height),
            Collider::Sphere { .. } => None,
        }
    }

    /// Whether `x` is strictly inside.
    pub fn contains(&self, x: Vec3) -> bool {
        match *self {
            Collider::Ground { height, .. } => x.y < height,
            Collider::Sphere { center, radius, .. } => (x - center).norm() < radius,
        }
    }
}

/// The surface of `model` to draw and export at simulated positions `x`
/// ([`Model::render_positions`]), kept out of `colliders`.
///
/// The tets collide; the skin they carry (an OBJ's surface embedded in
/// them) does not, and where it lies outside them it can be carried into a
/// collider. A lattice's boundary is a polyhedron through points of the
/// curved surface, which bulges past it between those points (by up to the
/// chord's sagitta), and a squashed tet extrapolates such a point further
/// out: the 1 m jelly sphere at resolution 10, its tets resting on the
/// ground, was drawn and baked 6 mm inside it. Each point of the skin inside
/// a collider is moved to the collider's nearest surface point (no
/// friction: nothing moves it but the tets), so a contact patch is drawn
/// flat on the ground. A model without a skin is drawn at its vertices,
/// which collide themselves (a hard pin inside a collider is drawn where it
/// holds its vertex).
pub fn drawn_positions(model: &Model, x: &[Vec3], colliders: &[Collider], out: &mut Vec<Vec3>) {
    model.render_positions(x, out);
    if model.skin.is_none() {
        return;
    }
    for p in out.iter_mut() {
        push_out(colliders, p);
    }
}

/// Moves `p` out of `colliders` to their nearest surface points, without
/// friction, pass after pass while one touches it (at most
/// [`PUSH_OUT_PASSES`]): out of the last collider, a point can be back in
/// an earlier one. Wedged between a ball and the ground it rests on, each
/// pass up out of the ground and out of the ball takes it about a third
/// closer to where their surfaces meet (QA's tet skin ended 6.4 cm inside
/// a ball after one pass).
fn push_out(colliders: &[Collider], p: &mut Vec3) {
    for _ in 0..PUSH_OUT_PASSES {
        let mut touched = false;
        for c in colliders {
            let start = *p;
            touched |= c.resolve(p, start, 0.0).touched();
        }
        if !touched {
            return;
        }
    }
}

/// The passes of [`push_out`]: 0.65³² is 1e-6 of the first pass's depth.
const PUSH_OUT_PASSES: usize = 32;

/// What [`Collider::resolve`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolved {
    /// No contact.
    Apart,
    /// Contact, and the vertex still moves along the surface.
    Sliding,
    /// Contact, and friction took all of its motion along the surface
    /// (static friction; never on a frictionless surface).
    Held,
}

impl Resolved {
    /// Whether there was contact.
    pub fn touched(self) -> bool {
        self != Resolved::Apart
    }
}

/// The part of the tangential motion `t` that friction removes: all of it
/// when `|t| ≤ limit` (static friction: [`Resolved::Held`] if `limit > 0`),
/// else `limit` along `t`.
#[inline]
fn friction_cut(t: Vec3, limit: f64) -> (Vec3, Resolved) {
    let len = t.norm();
    if len <= limit {
        let held = if limit > 0.0 {
            Resolved::Held
        } else {
            Resolved::Sliding
        };
        (t, held)
    } else {
        (t * (limit / len), Resolved::Sliding)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ground_pushes_up_and_friction_slows() {
        let g = Collider::Ground {
            height: 0.0,
            friction: 0.5,
        };
        let mut x = Vec3::new(1.0, -0.1, 0.0);
        assert_eq!(
            g.resolve(&mut x, Vec3::new(0.0, 0.1, 0.0), 0.0),
            Resolved::Sliding
        );
        assert_eq!(x.y, 0.0);
        // Slid 1.0, friction removes 0.5 × 0.1.
        assert!((x.x - 0.95).abs() < 1e-12);
        let mut stuck = Vec3::new(0.01, -0.1, 0.0);
        assert_eq!(
            g.resolve(&mut stuck, Vec3::new(0.0, 0.1, 0.0), 0.0),
            Resolved::Held
        );
        assert!(stuck.x.abs() < 1e-15);
    }

    #[test]
    fn a_point_wedged_between_a_ball_and_the_ground_is_pushed_out_of_both() {
        // A ball of radius 0.5 resting 0.1 m into the ground; the point is
        // inside both, nearer to the ground's surface.
        let colliders = [
            Collider::Sphere {
                center: Vec3::new(0.0, 0.4, 0.0),
                radius: 0.5,
                friction: 0.5,
            },
            Collider::Ground {
                height: 0.0,
                friction: 0.5,
            },
        ];
        let mut p = Vec3::new(0.25, -0.01, 0.0);
        push_out(&colliders, &mut p);
        for c in &colliders {
            // (Two passes left it 16 mm inside the ball.)
            assert!(c.depth(p) < 1e-7, "{p} inside {c:?} by {}", c.depth(p));
        }
    }

    #[test]
    fn sphere_never_leaves_a_point_inside() {
        let s = Collider::Sphere {
            center: Vec3::new(0.1, 0.2, 0.3),
            radius: 0.7,
            friction: 0.3,
        };
        for k in 0..1000 {
            let a = k as f64 * 0.37;
            let mut x =
                Vec3::new(a.sin(), a.cos(), (2.0 * a).sin()) * 0.5 + Vec3::new(0.1, 0.2, 0.3);
            let start = x + Vec3::new(0.0, 1.0, 0.0);
            s.resolve(&mut x, start, 0.0);
            assert!(!s.contains(x), "{x}");
        }
    }
}
