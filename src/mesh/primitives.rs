//! Generated sample meshes (the `meshes/` folder is written from these by
//! `cargo run --example make_meshes`). Closed shapes wind counter-clockwise
//! seen from outside, so their signed volume is positive.

use std::collections::HashMap;
use std::f64::consts::TAU;

use super::Vec3;
use super::raw::{GroupKind, RawMesh};
use super::tet::TetMesh;

fn named(raw: &mut RawMesh, name: &str, kind: GroupKind) -> u32 {
    let g = raw.group_index(name, kind);
    raw.membership_index(vec![g])
}

/// An `n × n`-node square cloth of side `width` in the vertical `x`-`y` plane,
/// centred on the origin, node `(i, j)` at index `j·n + i` with row `j = 0` on
/// top. Each cell is split into two triangles along one diagonal when
/// `quads` is false; otherwise cells are quads. Texture coordinates map the
/// square onto the unit square, `(0, 0)` at the bottom left (node `(0, n −
/// 1)`), one per node.
///
/// A triangulated grid has `3n² − 4n + 1` edges, `4(n − 1)` on the boundary.
pub fn cloth_square(n: usize, width: f64, quads: bool) -> RawMesh {
    assert!(n >= 2, "a cloth needs at least 2 × 2 nodes");
    let mut raw = RawMesh::new();
    let d = width / (n - 1) as f64;
    let last = (n - 1) as f64;
    for j in 0..n {
        for i in 0..n {
            raw.positions.push(Vec3::new(
                i as f64 * d - width / 2.0,
                width / 2.0 - j as f64 * d,
                0.0,
            ));
            raw.texcoords.push([i as f64 / last, 1.0 - j as f64 / last]);
        }
    }
    let m = named(&mut raw, "cloth", GroupKind::Object);
    let id = |i: usize, j: usize| (j * n + i) as u32;
    for j in 0..n - 1 {
        for i in 0..n - 1 {
            // Counter-clockwise seen from +z: (i, j+1) is below (i, j).
            let (a, b, c, d) = (id(i, j + 1), id(i + 1, j + 1), id(i + 1, j), id(i, j));
            let cells: &[&[u32]] = if quads {
                &[&[a, b, c, d]]
            } else {
                &[&[a, b, c], &[a, c, d]]
            };
            for &cell in cells {
                raw.push_polygon(cell, 0, m);
                // A node's texture coordinate has the node's index.
                raw.set_last_texcoords(cell);
            }
        }
    }
    raw
}

/// A UV sphere: `segments` around, `rings` from pole to pole (triangles at
/// the poles, quads between).
pub fn uv_sphere(radius: f64, segments: usize, rings: usize) -> RawMesh {
    assert!(segments >= 3 && rings >= 2);
    let mut raw = RawMesh::new();
    let m = named(&mut raw, "sphere", GroupKind::Object);
    raw.positions.push(Vec3::new(0.0, radius, 0.0));
    for r in 1..rings {
        let theta = std::f64::consts::PI * r as f64 / rings as f64;
        for s in 0..segments {
            let phi = TAU * s as f64 / segments as f64;
            raw.positions.push(Vec3::new(
                radius * theta.sin() * phi.cos(),
                radius * theta.cos(),
                -radius * theta.sin() * phi.sin(),
            ));
        }
    }
    raw.positions.push(Vec3::new(0.0, -radius, 0.0));
    let south = (raw.positions.len() - 1) as u32;
    let ring = |r: usize, s: usize| (1 + (r - 1) * segments + s % segments) as u32;
    for s in 0..segments {
        raw.push_polygon(&[0, ring(1, s), ring(1, s + 1)], 0, m);
    }
    for r in 1..rings - 1 {
        for s in 0..segments {
            raw.push_polygon(
                &[
                    ring(r, s),
                    ring(r + 1, s),
                    ring(r + 1, s + 1),
                    ring(r, s + 1),
                ],
                0,
                m,
            );
        }
    }
    for s in 0..segments {
        raw.push_polygon(&[south, ring(rings - 1, s + 1), ring(rings - 1, s)], 0, m);
    }
    raw
}

/// A torus around the `y` axis with tube radius `minor`, in quads.
pub fn torus(major: f64, minor: f64, segments: usize, sides: usize) -> RawMesh {
    assert!(segments >= 3 && sides >= 3);
    let mut raw = RawMesh::new();
    let m = named(&mut raw, "torus", GroupKind::Object);
    for s in 0..segments {
        let phi = TAU * s as f64 / segments as f64;
        for k in 0..sides {
            let theta = TAU * k as f64 / sides as f64;
            let r = major + minor * theta.cos();
            raw.positions.push(Vec3::new(
                r * phi.cos(),
                minor * theta.sin(),
                -r * phi.sin(),
            ));
        }
    }
    let id = |s: usize, k: usize| ((s % segments) * sides + k % sides) as u32;
    for s in 0..segments {
        for k in 0..sides {
            raw.push_polygon(
                &[id(s, k), id(s + 1, k), id(s + 1, k + 1), id(s, k + 1)],
                0,
                m,
            );
        }
    }
    raw
}

/// An axis-aligned box of the given size centred on the origin, each face
/// divided into `divisions × divisions` quads and put in a group named after
/// its side (`left`, `right`, `bottom`, `top`, `back`, `front`).
pub fn cuboid(size: Vec3, divisions: usize) -> RawMesh {
    assert!(divisions >= 1);
    let mut raw = RawMesh::new();
    let k = divisions as i64;
    let mut index: HashMap<[i64; 3], u32> = HashMap::new();
    // (group, normal axis, side, tangent axes u and v with u × v = +axis)
    let faces = [
        ("left", 0, 0, 1, 2),
        ("right", 0, k, 1, 2),
        ("bottom", 1, 0, 2, 0),
        ("top", 1, k, 2, 0),
        ("back", 2, 0, 0, 1),
        ("front", 2, k, 0, 1),
    ];
    for (name, axis, side, u, v) in faces {
        let m = named(&mut raw, name, GroupKind::Group);
        let mut vertex = |a: i64, b: i64| -> u32 {
            let mut c = [0i64; 3];
            c[axis] = side;
            c[u] = a;
            c[v] = b;
            *index.entry(c).or_insert_with(|| {
                let p = Vec3::from_fn(|d, _| (c[d] as f64 / k as f64 - 0.5) * size[d]);
                raw.positions.push(p);
                (raw.positions.len() - 1) as u32
            })
        };
        let mut quads = Vec::new();
        for a in 0..k {
            for b in 0..k {
                let q = [
                    vertex(a, b),
                    vertex(a + 1, b),
                    vertex(a + 1, b + 1),
                    vertex(a, b + 1),
                ];
                quads.push(q);
            }
        }
        // On the low side the (u, v) frame points inwards: reverse.
        for mut q in quads {
            if side == 0 {
                q.reverse();
            }
            raw.push_polygon(&q, 0, m);
        }
    }
    raw
}

/// An open cylinder (a sleeve) around the `y` axis with no caps: a
/// non-watertight surface with two boundary loops.
pub fn open_cylinder(radius: f64, height: f64, segments: usize, rows: usize) -> RawMesh {
    assert!(segments >= 3 && rows >= 1);
    let mut raw = RawMesh::new();
    let m = named(&mut raw, "sleeve", GroupKind::Object);
    for r in 0..=rows {
        let y = height / 2.0 - height * r as f64 / rows as f64;
        for s in 0..segments {
            let phi = TAU * s as f64 / segments as f64;
            raw.positions
                .push(Vec3::new(radius * phi.cos(), y, -radius * phi.sin()));
        }
    }
    let id = |r: usize, s: usize| (r * segments + s % segments) as u32;
    for r in 0..rows {
        for s in 0..segments {
            raw.push_polygon(&[id(r, s), id(r + 1, s), id(r + 1, s + 1)], 0, m);
            raw.push_polygon(&[id(r, s), id(r + 1, s + 1), id(r, s + 1)], 0, m);
        }
    }
    raw
}

/// An axis-aligned box of the given size centred on the origin, filled with
/// tetrahedra: a grid of `cells[0] × cells[1] × cells[2]` boxes, each split
/// into the 6 tets of its Kuhn triangulation (the paths from its low corner
/// to its high corner along the three axes in each order). Every cell uses
/// the same diagonal, so the faces of neighbouring cells match.
///
/// Vertex `(i, j, k)` (`i ≤ cells[0]`, ...) is at index
/// `i + (cells[0] + 1)·(j + (cells[1] + 1)·k)`; `(cells[0] + 1)(cells[1] +
/// 1)(cells[2] + 1)` vertices, `6·cells[0]·cells[1]·cells[2]` tets.
///
/// # Panics
/// If a cell count is 0 or a side is not positive and finite.
pub fn tet_box(size: Vec3, cells: [usize; 3]) -> TetMesh {
    assert!(
        cells.iter().all(|&c| c >= 1) && size.iter().all(|s| s.is_finite() && *s > 0.0),
        "a tet box needs at least one cell per axis and positive sides"
    );
    let nodes = cells.map(|c| c + 1);
    let id = |c: [usize; 3]| (c[0] + nodes[0] * (c[1] + nodes[1] * c[2])) as u32;
    let mut positions = Vec::with_capacity(nodes.iter().product());
    for k in 0..nodes[2] {
        for j in 0..nodes[1] {
            for i in 0..nodes[0] {
                let c = [i, j, k];
                positions.push(Vec3::from_fn(|d, _| {
                    (c[d] as f64 / cells[d] as f64 - 0.5) * size[d]
                }));
            }
        }
    }
    // Axis orders; the odd permutations give negatively oriented paths,
    // fixed by swapping the last two vertices.
    const ORDERS: [([usize; 3], bool); 6] = [
        ([0, 1, 2], true),
        ([1, 2, 0], true),
        ([2, 0, 1], true),
        ([0, 2, 1], false),
        ([2, 1, 0], false),
        ([1, 0, 2], false),
    ];
    let mut tets = Vec::with_capacity(6 * cells.iter().product::<usize>());
    for k in 0..cells[2] {
        for j in 0..cells[1] {
            for i in 0..cells[0] {
                for (order, even) in ORDERS {
                    let mut c = [i, j, k];
                    let mut t = [id(c); 4];
                    for (step, axis) in order.into_iter().enumerate() {
                        c[axis] += 1;
                        t[step + 1] = id(c);
                    }
                    if !even {
                        t.swap(2, 3);
                    }
                    tets.push(t);
                }
            }
        }
    }
    TetMesh::new(positions, tets).expect("a regular grid of cells has valid tetrahedra")
}

/// A sample mesh shipped in `meshes/`.
pub struct Sample {
    /// File name in `meshes/`.
    pub file: &'static str,
    /// One line about what it is for.
    pub about: &'static str,
    /// The mesh.
    pub mesh: RawMesh,
}

/// The sample meshes in `meshes/`, exactly as `cargo run --example
/// make_meshes` writes them.
pub fn samples() -> Vec<Sample> {
    vec![
        Sample {
            file: "cloth_tri.obj",
            about: "1 m square cloth, 25 x 25 nodes, triangulated",
            mesh: cloth_square(25, 1.0, false),
        },
        Sample {
            file: "cloth_quad.obj",
            about: "1 m square cloth, 25 x 25 nodes, quad faces (triangulated on import)",
            mesh: cloth_square(25, 1.0, true),
        },
        Sample {
            file: "sphere.obj",
            about: "UV sphere, radius 0.5 m, 32 segments x 16 rings",
            mesh: uv_sphere(0.5, 32, 16),
        },
        Sample {
            file: "torus.obj",
            about: "torus, radii 0.4 m and 0.15 m, 48 x 16 quads",
            mesh: torus(0.4, 0.15, 48, 16),
        },
        Sample {
            file: "box.obj",
            about: "0.5 m cube, 8 x 8 quads per side, one group per side",
            mesh: cuboid(Vec3::repeat(0.5), 8),
        },
        Sample {
            file: "sleeve.obj",
            about: "open cylinder (no caps), radius 0.2 m, height 0.6 m: not watertight",
            mesh: open_cylinder(0.2, 0.6, 32, 12),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tet_box_is_a_conforming_kuhn_grid() {
        let (size, cells) = (Vec3::new(1.0, 0.5, 2.0), [3, 2, 4]);
        let mesh = tet_box(size, cells);
        assert_eq!(mesh.positions().len(), 4 * 3 * 5);
        assert_eq!(mesh.tets().len(), 6 * 3 * 2 * 4);
        assert!((mesh.volume() - size.product()).abs() < 1e-12);
        // Conforming: only the 2 triangles of each outer quad are boundary
        // faces (a mismatched diagonal inside would add more).
        let quads = cells[0] * cells[1] + cells[1] * cells[2] + cells[2] * cells[0];
        assert_eq!(mesh.boundary_faces().len(), 2 * 2 * quads);
        // Euler characteristic of a ball: V − E + F − T = 1, with every
        // interior face shared by two tets: F = (4T + boundary) / 2.
        let faces = (4 * mesh.tets().len() + mesh.boundary_faces().len()) / 2;
        let euler = mesh.positions().len() as i64 - mesh.edges().len() as i64 + faces as i64
            - mesh.tets().len() as i64;
        assert_eq!(euler, 1);
        let (lo, _) = crate::mesh::bounds(mesh.positions());
        assert_eq!(lo, -size / 2.0);
    }
}
