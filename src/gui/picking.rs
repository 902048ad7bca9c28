//! Picking in the 3D view: which vertex a click means (a ray cast onto the
//! drawn surface, then the nearest simulated vertex), which vertices a box
//! or a brush covers (their projections), and where a dragged vertex is
//! pulled to. Pure geometry on [`Projection`]s, so it is unit-tested
//! without a window.

use super::camera::{Projected, Projection};
use crate::mesh::Vec3;

/// The screen distance (points) within which a click off the surface still
/// picks a vertex.
pub const CLICK_RADIUS: f64 = 8.0;

/// Projects every position (`None` behind the camera) into `out`.
pub fn project_all(projection: &Projection, positions: &[Vec3], out: &mut Vec<Option<Projected>>) {
    out.clear();
    out.extend(positions.iter().map(|p| projection.project(p)));
}

/// The ray parameter `t ≥ 0` where the ray `origin + t·direction` meets
/// the triangle `abc` (either side), if it does (Möller–Trumbore).
pub fn ray_triangle(origin: &Vec3, direction: &Vec3, [a, b, c]: [Vec3; 3]) -> Option<f64> {
    let (e1, e2) = (b - a, c - a);
    let p = direction.cross(&e2);
    let det = e1.dot(&p);
    if det.abs() < 1e-300 {
        return None;
    }
    let s = origin - a;
    let u = s.dot(&p) / det;
    if !(0.0..=1.0).contains(&u) {
        return None;
    }
    let q = s.cross(&e1);
    let v = direction.dot(&q) / det;
    if v < 0.0 || u + v > 1.0 {
        return None;
    }
    let t = e2.dot(&q) / det;
    (t >= 0.0).then_some(t)
}

/// The nearest point where the ray meets the mesh (`positions`,
/// `triangles`), if it does.
pub fn ray_mesh(
    origin: &Vec3,
    direction: &Vec3,
    positions: &[Vec3],
    triangles: &[[u32; 3]],
) -> Option<Vec3> {
    triangles
        .iter()
        .filter_map(|t| ray_triangle(origin, direction, t.map(|i| positions[i as usize])))
        .min_by(f64::total_cmp)
        .map(|t| origin + t * direction)
}

/// Ray–triangle tests above which [`hidden_from`] builds a tree of the
/// triangles first: a few pins on a large cloth test them all faster than
/// a tree of them is built (the 250 × 250 cloth's two corners: 248,000
/// tests; with a tree at every look, the editor ran it at 13 frames/s
/// instead of 15).
const BRUTE_FORCE_TESTS: usize = 1 << 20;

/// The vertices of `marked` (sorted, at `x`) that the surface (`surface`,
/// `triangles`) hides from the eye at `eye`: the segment to each meets a
/// triangle more than `margin` before it. The margin lets a marker show
/// that lies just under the surface drawn (a tet body's corner carrying
/// its skin), and keeps a vertex's own triangles, which meet the segment
/// at its end, from hiding it.
pub fn hidden_from(
    eye: Vec3,
    marked: &[u32],
    x: &[Vec3],
    (surface, triangles): (&[Vec3], &[[u32; 3]]),
    margin: f64,
) -> Vec<u32> {
    // The segment's end pulled `margin` towards the eye (none: a vertex
    // within `margin` of the eye shows).
    let end = |v: u32| {
        let to = x[v as usize] - eye;
        let length = to.norm();
        (length > margin).then(|| eye + to * (1.0 - margin / length))
    };
    let ends = marked.iter().filter_map(|&v| Some((v, end(v)?)));
    if marked.len() * triangles.len() <= BRUTE_FORCE_TESTS {
        ends.filter(|&(_, end)| {
            let direction = end - eye;
            triangles.iter().any(|t| {
                ray_triangle(&eye, &direction, t.map(|i| surface[i as usize]))
                    .is_some_and(|t| t <= 1.0)
            })
        })
        .map(|(v, _)| v)
        .collect()
    } else {
        let tree = crate::model::tetra::TriangleTree::new(surface, triangles);
        let mut hits = Vec::new();
        ends.filter(|&(_, end)| {
            hits.clear();
            tree.segment_hits(eye, end, &mut hits);
            !hits.is_empty()
        })
        .map(|(v, _)| v)
        .collect()
    }
}

/// The drawn surface and the simulated vertices a pick chooses among.
#[derive(Clone, Copy, Debug)]
pub struct Pickable<'a> {
    /// The drawn surface's positions (the skin for a tet model).
    pub surface: &'a [Vec3],
    /// The drawn surface's triangles.
    pub triangles: &'a [[u32; 3]],
    /// The simulated vertices' positions.
    pub vertices: &'a [Vec3],
    /// Their projections (see [`project_all`]).
    pub projected: &'a [Option<Projected>],
}

/// The simulated vertex a click at `cursor` means: on the surface, the
/// vertex nearest (in space) to the point hit — so a vertex hidden behind
/// the surface is never picked through it; off the surface, the vertex
/// drawn nearest the cursor within `radius` points (the nearer to the
/// camera on a tie).
pub fn pick_vertex(
    projection: &Projection,
    cursor: [f64; 2],
    pickable: &Pickable<'_>,
    radius: f64,
) -> Option<u32> {
    let (origin, direction) = projection.ray(cursor);
    if let Some(hit) = ray_mesh(&origin, &direction, pickable.surface, pickable.triangles) {
        return nearest(pickable.vertices.iter().map(|p| (p - hit).norm_squared()));
    }
    let radius2 = radius * radius;
    nearest(pickable.projected.iter().map(|p| match p {
        Some(p) => {
            let d2 = (p.screen[0] - cursor[0]).powi(2) + (p.screen[1] - cursor[1]).powi(2);
            // Depth breaks ties between vertices drawn at the same spot.
            if d2 <= radius2 {
                d2 + 1e-9 * p.depth
            } else {
                f64::INFINITY
            }
        }
        None => f64::INFINITY,
    }))
}

/// The index of the smallest finite key.
fn nearest(keys: impl Iterator<Item = f64>) -> Option<u32> {
    keys.enumerate()
        .filter(|(_, k)| k.is_finite())
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i as u32)
}

/// The vertices drawn inside the screen rectangle spanned by corners `a`
/// and `b` (any two opposite corners), hidden ones included.
pub fn box_select(projected: &[Option<Projected>], a: [f64; 2], b: [f64; 2]) -> Vec<u32> {
    let (lo, hi) = (
        [a[0].min(b[0]), a[1].min(b[1])],
        [a[0].max(b[0]), a[1].max(b[1])],
    );
    within(projected, |s| {
        (lo[0]..=hi[0]).contains(&s[0]) && (lo[1]..=hi[1]).contains(&s[1])
    })
}

/// The vertices drawn within `radius` points of `centre` (a brush dab),
/// hidden ones included.
pub fn brush_select(projected: &[Option<Projected>], centre: [f64; 2], radius: f64) -> Vec<u32> {
    within(projected, |s| {
        (s[0] - centre[0]).powi(2) + (s[1] - centre[1]).powi(2) <= radius * radius
    })
}

fn within(projected: &[Option<Projected>], inside: impl Fn([f64; 2]) -> bool) -> Vec<u32> {
    projected
        .iter()
        .enumerate()
        .filter(|(_, p)| p.is_some_and(|p| inside(p.screen)))
        .map(|(i, _)| i as u32)
        .collect()
}

/// Where a vertex grabbed at `anchor` is pulled when the cursor is at
/// `cursor`: the point under the cursor on the plane through `anchor`
/// facing the camera (`forward` = the view direction), so it follows the
/// mouse at its own depth.
pub fn drag_target(
    projection: &Projection,
    cursor: [f64; 2],
    anchor: &Vec3,
    forward: &Vec3,
) -> Vec3 {
    let (origin, direction) = projection.ray(cursor);
    let denom = direction.dot(forward);
    if denom.abs() < 1e-12 {
        return *anchor;
    }
    origin + direction * ((anchor - origin).dot(forward) / denom)
}

#[cfg(test)]
mod tests {
    use super::super::camera::Orbit;
    use super::*;

    /// A camera on +z looking at the origin, in a 400 × 400 view.
    fn front() -> (Orbit, Projection) {
        let orbit = Orbit {
            pitch: 0.0,
            distance: 3.0,
            ..Orbit::default()
        };
        (orbit, Projection::new(&orbit, [0.0, 0.0, 400.0, 400.0]))
    }

    /// Two unit squares facing the camera, one at z = 0 and one behind at
    /// z = −1 (vertices 4..8), as two triangles each.
    fn two_layers() -> (Vec<Vec3>, Vec<[u32; 3]>) {
        let mut p = Vec::new();
        for z in [0.0, -1.0] {
            for (x, y) in [(-0.5, -0.5), (0.5, -0.5), (0.5, 0.5), (-0.5, 0.5)] {
                p.push(Vec3::new(x, y, z));
            }
        }
        let t = vec![[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7]];
        (p, t)
    }

    /// Markers behind the surface are hidden, those on it or within the
    /// margin under it show; with a tree (many markers) as without.
    #[test]
    fn the_surface_hides_the_vertices_behind_it_beyond_the_margin() {
        let (orbit, _) = front();
        let (surface, triangles) = two_layers();
        let mut x = surface.clone();
        // Just behind the front layer.
        x.push(Vec3::new(0.1, 0.1, -0.01));
        let eye = orbit.eye();
        let all = [0, 2, 4, 6, 8];
        let hidden = |margin| hidden_from(eye, &all, &x, (&surface, &triangles), margin);
        assert_eq!(hidden(0.05), [4, 6]);
        assert_eq!(hidden(0.001), [4, 6, 8]);
        // Past the tests a brute force takes: the same through a tree.
        let many = BRUTE_FORCE_TESTS / triangles.len() + 1;
        let x: Vec<Vec3> = (0..many).map(|i| x[all[i % all.len()] as usize]).collect();
        let marked: Vec<u32> = (0..many as u32).collect();
        let hidden = hidden_from(eye, &marked, &x, (&surface, &triangles), 0.001);
        let expected: Vec<u32> = (marked.iter().copied())
            .filter(|&i| [4, 6, 8].contains(&all[i as usize % all.len()]))
            .collect();
        assert_eq!(hidden, expected);
    }

    #[test]
    fn a_ray_hits_a_triangle_from_either_side_and_misses_beside_it() {
        let tri = [Vec3::zeros(), Vec3::x(), Vec3::y()];
        let down = -Vec3::z();
        assert_eq!(
            ray_triangle(&Vec3::new(0.2, 0.2, 1.0), &down, tri),
            Some(1.0)
        );
        assert_eq!(
            ray_triangle(&Vec3::new(0.2, 0.2, -2.0), &-down, tri),
            Some(2.0)
        );
        assert_eq!(ray_triangle(&Vec3::new(0.6, 0.6, 1.0), &down, tri), None);
        // Pointing away: no hit behind the origin.
        assert_eq!(ray_triangle(&Vec3::new(0.2, 0.2, 1.0), &-down, tri), None);
    }

    #[test]
    fn a_click_on_the_surface_picks_a_front_vertex_never_one_behind() {
        let (orbit, projection) = front();
        let (p, t) = two_layers();
        let mut projected = Vec::new();
        project_all(&projection, &p, &mut projected);
        let pickable = Pickable {
            surface: &p,
            triangles: &t,
            vertices: &p,
            projected: &projected,
        };
        // Near the top-right corner: the back layer's corner 6 is drawn
        // closer to the cursor than the front's corner 2 (perspective), but
        // the front square hides it.
        let s2 = projected[2].unwrap().screen;
        let s6 = projected[6].unwrap().screen;
        // On the front square, most of the way from corner 2 towards 6.
        let cursor = [s2[0] + 0.7 * (s6[0] - s2[0]), s2[1] + 0.7 * (s6[1] - s2[1])];
        assert!(
            (s6[0] - cursor[0]).hypot(s6[1] - cursor[1])
                < (s2[0] - cursor[0]).hypot(s2[1] - cursor[1])
        );
        assert_eq!(
            pick_vertex(&projection, cursor, &pickable, CLICK_RADIUS),
            Some(2)
        );
        // Every vertex of the front square is picked by a click next to it.
        for (v, p) in projected.iter().enumerate().take(4) {
            let s = p.unwrap().screen;
            let toward_centre = [
                s[0] + (200.0 - s[0]).signum() * 4.0,
                s[1] + (200.0 - s[1]).signum() * 4.0,
            ];
            assert_eq!(
                pick_vertex(&projection, toward_centre, &pickable, CLICK_RADIUS),
                Some(v as u32)
            );
        }
        // Off the surface: the vertex within the radius, else nothing.
        let outside = [s2[0] + 5.0, s2[1] - 5.0];
        assert_eq!(
            pick_vertex(&projection, outside, &pickable, CLICK_RADIUS),
            Some(2)
        );
        let far = [s2[0] + 40.0, s2[1] - 40.0];
        assert_eq!(pick_vertex(&projection, far, &pickable, CLICK_RADIUS), None);
        // With nothing drawn at all a click picks nothing.
        let empty = Pickable {
            surface: &[],
            triangles: &[],
            vertices: &[],
            projected: &[],
        };
        assert_eq!(
            pick_vertex(&projection, [200.0, 200.0], &empty, CLICK_RADIUS),
            None
        );
        assert_eq!(orbit.forward(), -Vec3::z());
    }

    #[test]
    fn a_pick_on_a_skinned_surface_returns_the_nearest_simulated_vertex() {
        let (_, projection) = front();
        let (surface, t) = two_layers();
        // Three simulated vertices: the hit at the centre of the front
        // square is nearest vertex 1.
        let vertices = [
            Vec3::new(0.0, 0.0, -1.0),
            Vec3::new(0.1, 0.0, 0.05),
            Vec3::new(2.0, 0.0, 0.0),
        ];
        let mut projected = Vec::new();
        project_all(&projection, &vertices, &mut projected);
        let pickable = Pickable {
            surface: &surface,
            triangles: &t,
            vertices: &vertices,
            projected: &projected,
        };
        assert_eq!(
            pick_vertex(&projection, [200.0, 200.0], &pickable, CLICK_RADIUS),
            Some(1)
        );
    }

    #[test]
    fn a_box_selects_what_is_drawn_inside_it_from_any_corner() {
        let (_, projection) = front();
        let (p, _) = two_layers();
        let mut projected = Vec::new();
        project_all(&projection, &p, &mut projected);
        // The left half of the view: the left corners of both squares.
        let left = box_select(&projected, [0.0, 0.0], [200.0, 400.0]);
        assert_eq!(left, vec![0, 3, 4, 7]);
        assert_eq!(box_select(&projected, [200.0, 400.0], [0.0, 0.0]), left);
        // A box around the back square's corners only: the front square's
        // corners project further out.
        let s4 = projected[4].unwrap().screen;
        let s6 = projected[6].unwrap().screen;
        assert_eq!(box_select(&projected, s4, s6), vec![4, 5, 6, 7]);
        // An empty box selects nothing.
        assert!(box_select(&projected, [0.0, 0.0], [5.0, 5.0]).is_empty());
        // Vertices behind the camera are never in a box.
        let behind = vec![None, projected[1]];
        assert_eq!(box_select(&behind, [0.0, 0.0], [400.0, 400.0]), vec![1]);
    }

    #[test]
    fn a_brush_selects_within_its_radius() {
        let (_, projection) = front();
        let (p, _) = two_layers();
        let mut projected = Vec::new();
        project_all(&projection, &p, &mut projected);
        let s0 = projected[0].unwrap().screen;
        let s4 = projected[4].unwrap().screen;
        let gap = (s0[0] - s4[0]).hypot(s0[1] - s4[1]);
        // Just short of the back corner, then just past it.
        assert_eq!(brush_select(&projected, s0, gap * 0.99), vec![0]);
        assert_eq!(brush_select(&projected, s0, gap * 1.01), vec![0, 4]);
        assert_eq!(
            brush_select(&projected, [200.0, 200.0], 1.0),
            Vec::<u32>::new()
        );
    }

    #[test]
    fn a_dragged_vertex_follows_the_cursor_at_its_own_depth() {
        let (orbit, projection) = front();
        let anchor = Vec3::new(0.2, 0.1, -0.5);
        let at = projection.project(&anchor).unwrap().screen;
        // No movement: the anchor itself.
        let same = drag_target(&projection, at, &anchor, &orbit.forward());
        assert!((same - anchor).norm() < 1e-9);
        // Moved right on screen: right in the world, same depth.
        let moved = drag_target(
            &projection,
            [at[0] + 50.0, at[1]],
            &anchor,
            &orbit.forward(),
        );
        assert!(moved.x > anchor.x + 0.1);
        assert!((moved.z - anchor.z).abs() < 1e-9 && (moved.y - anchor.y).abs() < 1e-9);
        let back = projection.project(&moved).unwrap().screen;
        assert!((back[0] - at[0] - 50.0).abs() < 1e-6);
    }
}
