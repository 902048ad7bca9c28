//! Tetrahedral mesh files: bit-exact round trips through every format we
//! read, hand-written and tool-generated files (`tests/data`: Gmsh 4.8 and
//! TetGen 1.5 output), atomic writes, and meshio as an independent reader of
//! what we write.

use std::path::{Path, PathBuf};
use std::process::Command;

use softbody::mesh::tet_io::{read_msh, read_tetgen, write_msh, write_tetgen, write_vtk};
use softbody::mesh::{
    MshVersion, TetIoErrorKind, TetMesh, Vec3, read_tet_mesh, tetgen_paths, write_tet_mesh,
};

mod common;
use common::scratch_dir;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// A 3 × 3 × 3 block of cubes, six tetrahedra each, with jittered corners
/// whose coordinates use all 53 bits, plus one unused vertex with awkward
/// values (negative zero, a subnormal, a tiny exponent).
fn jittered_block() -> TetMesh {
    let n = 4;
    let id = |x: usize, y: usize, z: usize| (x + n * (y + n * z)) as u32;
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut jitter = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 * 0.3 - 0.15
    };
    let mut positions = Vec::new();
    for z in 0..n {
        for y in 0..n {
            for x in 0..n {
                positions.push(Vec3::new(
                    x as f64 / 3.0 + jitter() / 3.0,
                    y as f64 * 0.1 + jitter() * 0.1,
                    -(z as f64) * 1e-3 + jitter() * 1e-3,
                ));
            }
        }
    }
    positions.push(Vec3::new(-0.0, 5e-324, 1.234_567_890_123_456_7e-300));
    let mut tets = Vec::new();
    for z in 0..n - 1 {
        for y in 0..n - 1 {
            for x in 0..n - 1 {
                let corner = |dx, dy, dz| id(x + dx, y + dy, z + dz);
                let (a, h) = (corner(0, 0, 0), corner(1, 1, 1));
                // One tetrahedron per path along the cube's edges from a to h.
                for [p, q] in [
                    [(1, 0, 0), (1, 1, 0)],
                    [(1, 0, 0), (1, 0, 1)],
                    [(0, 1, 0), (1, 1, 0)],
                    [(0, 1, 0), (0, 1, 1)],
                    [(0, 0, 1), (1, 0, 1)],
                    [(0, 0, 1), (0, 1, 1)],
                ] {
                    tets.push([a, corner(p.0, p.1, p.2), corner(q.0, q.1, q.2), h]);
                }
            }
        }
    }
    TetMesh::new(positions, tets).unwrap()
}

/// Same positions bit for bit, same tetrahedra in the same order.
fn assert_identical(read: &TetMesh, written: &TetMesh) {
    assert_eq!(read.positions().len(), written.positions().len());
    for (i, (a, b)) in read.positions().iter().zip(written.positions()).enumerate() {
        for k in 0..3 {
            assert_eq!(a[k].to_bits(), b[k].to_bits(), "vertex {i}: {a:?} vs {b:?}");
        }
    }
    assert_eq!(read.tets(), written.tets());
}

#[test]
fn tetgen_round_trip_is_exact() {
    let dir = scratch_dir("tet_io-tetgen-round-trip");
    let mesh = jittered_block();
    assert_eq!(mesh.tets().len(), 162);
    let path = dir.join("block.1.node");
    write_tet_mesh(&path, &mesh, MshVersion::default()).unwrap();
    assert!(dir.join("block.1.ele").is_file());
    // The .node file, the .ele file and the base path all name the pair.
    for given in ["block.1.node", "block.1.ele"] {
        assert_identical(&read_tet_mesh(&dir.join(given)).unwrap(), &mesh);
    }
    assert_identical(&read_tetgen(&dir.join("block.1")).unwrap(), &mesh);
}

#[test]
fn msh_v2_round_trip_is_exact() {
    let dir = scratch_dir("tet_io-msh2-round-trip");
    let mesh = jittered_block();
    let path = dir.join("block.msh");
    write_tet_mesh(&path, &mesh, MshVersion::V2_2).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("$MeshFormat\n2.2 0 8\n"));
    assert_identical(&read_tet_mesh(&path).unwrap(), &mesh);
}

#[test]
fn msh_v4_round_trip_is_exact() {
    let dir = scratch_dir("tet_io-msh4-round-trip");
    let mesh = jittered_block();
    let path = dir.join("block.msh");
    // 4.1 is the default.
    write_tet_mesh(&path, &mesh, MshVersion::default()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("$MeshFormat\n4.1 0 8\n"));
    assert_identical(&read_msh(&path).unwrap(), &mesh);
}

#[test]
fn vtk_lists_points_and_tetra_cells() {
    let dir = scratch_dir("tet_io-vtk");
    let mesh = jittered_block();
    let path = dir.join("block.vtk");
    write_tet_mesh(&path, &mesh, MshVersion::default()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "# vtk DataFile Version 3.0");
    assert_eq!(
        lines[2..5],
        ["ASCII", "DATASET UNSTRUCTURED_GRID", "POINTS 65 double"]
    );
    assert!(lines.contains(&"CELLS 162 810"));
    assert!(lines.contains(&"CELL_TYPES 162"));
    assert_eq!(lines.iter().filter(|l| **l == "10").count(), 162);
}

#[test]
fn handwritten_v41_with_sparse_tags_and_other_elements() {
    let mesh = read_tet_mesh(&data("sparse_tags_v41.msh")).unwrap();
    // Nodes in file order: tags 10, 20, 7, 1000000, 42.
    let expected = [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [1.0, 1.0, 1.0],
    ];
    let positions: Vec<[f64; 3]> = mesh.positions().iter().map(|p| [p.x, p.y, p.z]).collect();
    assert_eq!(positions, expected);
    // The point, line and triangle are skipped; the second tetrahedron,
    // written negatively oriented, is flipped.
    assert_eq!(mesh.tets(), [[0, 1, 2, 3], [2, 1, 4, 3]]);
    assert!((mesh.volume() - (1.0 / 6.0 + 2.0 / 6.0)).abs() < 1e-15);
}

#[test]
fn handwritten_tetgen_one_based_with_attributes_and_markers() {
    let mesh = read_tet_mesh(&data("handmade_1based.node")).unwrap();
    // The unused centre node is kept.
    assert_eq!(mesh.positions().len(), 9);
    assert_eq!(mesh.positions()[8], Vec3::new(0.5, 0.5, 0.5));
    assert_eq!(mesh.tets().len(), 6);
    assert!((mesh.volume() - 1.0).abs() < 1e-15);
    // Node 1 of the file is index 0; every tetrahedron has the diagonal.
    assert!(mesh.tets().iter().all(|t| t.contains(&0) && t.contains(&7)));
}

#[test]
fn gmsh_generated_v22_and_v41_files_give_the_same_mesh() {
    let v2 = read_tet_mesh(&data("gmsh_tetra_v22.msh")).unwrap();
    let v4 = read_tet_mesh(&data("gmsh_tetra_v41.msh")).unwrap();
    assert_eq!(v4.positions().len(), 17);
    assert_eq!(v4.tets().len(), 23);
    assert_identical(&v2, &v4);
    // The unit tetrahedron (0,0,0), (1,0,0), (0,1,0), (0,0,1).
    assert!((v4.volume() - 1.0 / 6.0).abs() < 1e-12);
}

#[test]
fn tetgen_generated_files_read() {
    let mesh = read_tet_mesh(&data("tetgen_cube.1.ele")).unwrap();
    assert_eq!(mesh.positions().len(), 8);
    assert_eq!(mesh.tets().len(), 6);
    // A unit cube with one top corner raised to 1.1.
    assert!((mesh.volume() - 6.2 / 6.0).abs() < 1e-12);
}

#[test]
fn gmsh_second_order_and_binary_files_are_refused_with_a_hint() {
    let quadratic = read_tet_mesh(&data("gmsh_tetra10_v41.msh")).unwrap_err();
    assert_eq!(quadratic.kind, TetIoErrorKind::HigherOrder(10));
    assert!(
        quadratic
            .to_string()
            .ends_with("10-node tetrahedra: only linear 4-node tetrahedra are supported"),
        "{quadratic}"
    );
    let binary = read_tet_mesh(&data("gmsh_binary_v41.msh")).unwrap_err();
    assert_eq!(binary.line, Some(2));
    assert!(
        binary
            .to_string()
            .ends_with("gmsh_binary_v41.msh:2: binary .msh is not supported; re-save as ASCII"),
        "{binary}"
    );
}

#[test]
fn unsupported_extensions_are_refused_listing_the_supported_ones() {
    let dir = scratch_dir("tet_io-extensions");
    let read = read_tet_mesh(&dir.join("bunny.obj")).unwrap_err();
    assert_eq!(
        read.to_string(),
        format!(
            "{}: unsupported file extension '.obj'; supported: .node or .ele (TetGen), .msh (Gmsh)",
            dir.join("bunny.obj").display()
        )
    );
    let path = dir.join("bunny");
    let write = write_tet_mesh(&path, &jittered_block(), MshVersion::default()).unwrap_err();
    assert!(matches!(
        write.kind,
        TetIoErrorKind::UnsupportedExtension { ref extension, .. } if extension.is_empty()
    ));
    assert!(write.to_string().contains(".vtk (legacy VTK)"), "{write}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

#[test]
fn writes_replace_atomically_and_leave_no_temporary_files() {
    let dir = scratch_dir("tet_io-atomic");
    let mesh = jittered_block();
    let path = dir.join("block.msh");
    std::fs::write(&path, "old contents").unwrap();
    write_msh(&path, &mesh, MshVersion::V4_1).unwrap();
    write_vtk(&dir.join("block.vtk"), &mesh).unwrap();
    write_tetgen(&dir.join("block"), &mesh).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["block.ele", "block.msh", "block.node", "block.vtk"]);
    assert_identical(&read_tet_mesh(&path).unwrap(), &mesh);

    // A directory that does not exist: an error naming the file, nothing left.
    let missing = dir.join("no such dir").join("block.msh");
    let err = write_tet_mesh(&missing, &mesh, MshVersion::V2_2).unwrap_err();
    assert_eq!(err.path, missing);
    assert!(matches!(err.kind, TetIoErrorKind::Write(_)), "{err}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 4);
}

#[test]
fn read_errors_name_the_file() {
    let dir = scratch_dir("tet_io-read-errors");
    let err = read_tet_mesh(&dir.join("absent.msh")).unwrap_err();
    assert!(matches!(err.kind, TetIoErrorKind::Read(_)));
    assert_eq!(err.line, None);
    // A .node file without its .ele: the error names the missing .ele.
    write_tetgen(&dir.join("half"), &jittered_block()).unwrap();
    std::fs::remove_file(dir.join("half.ele")).unwrap();
    let err = read_tet_mesh(&dir.join("half.node")).unwrap_err();
    assert_eq!(err.path, tetgen_paths(&dir.join("half")).1);
    // Not a regular file: refused before reading (a pipe hung the read,
    // `/dev/zero` filled memory); a directory says so.
    #[cfg(unix)]
    {
        let zero = dir.join("zero.msh");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let mut refused = vec![(zero, "not a regular file (a device or a pipe)")];
        // A pipe where the `.ele` goes, beside a `.node` that reads.
        write_tetgen(&dir.join("fifo"), &jittered_block()).unwrap();
        let fifo = dir.join("fifo.ele");
        std::fs::remove_file(&fifo).unwrap();
        if Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success())
        {
            refused.push((
                dir.join("fifo.node"),
                "not a regular file (a device or a pipe)",
            ));
        }
        std::fs::create_dir(dir.join("folder.msh")).unwrap();
        refused.push((dir.join("folder.msh"), "it is a directory"));
        for (path, says) in refused {
            let err = read_tet_mesh(&path).unwrap_err();
            assert_eq!(
                err.kind,
                TetIoErrorKind::Read(says.to_owned()),
                "{}",
                path.display()
            );
        }
    }
}

/// A Python interpreter that can import meshio: Debian's `/usr/bin/python3`
/// first (where `apt-get install python3-meshio` puts it, which a pyenv
/// `python3` earlier on the PATH does not see), then `python3`.
fn python_with_meshio() -> Option<&'static str> {
    ["/usr/bin/python3", "python3"].into_iter().find(|python| {
        Command::new(python)
            .args(["-c", "import meshio"])
            .output()
            .is_ok_and(|out| out.status.success())
    })
}

#[test]
fn meshio_reads_what_we_write() {
    let Some(python) = python_with_meshio() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "meshio is not importable, but CI must run this test: install python3-meshio"
        );
        eprintln!("note: meshio_reads_what_we_write skipped: python3 cannot import meshio");
        return;
    };
    let dir = scratch_dir("tet_io-meshio");
    let mesh = jittered_block();
    let files = [
        ("block_v2.msh", MshVersion::V2_2),
        ("block_v4.msh", MshVersion::V4_1),
        ("block.vtk", MshVersion::default()),
    ];
    for (name, version) in files {
        write_tet_mesh(&dir.join(name), &mesh, version).unwrap();
    }
    // meshio prints blank lines of its own: mark ours. The last vertex has
    // the awkward coordinates, which Python's repr spells as Rust's `{:?}`.
    let script = "import sys, meshio\n\
                  for path in sys.argv[1:]:\n    \
                      m = meshio.read(path)\n    \
                      tets = sum(len(c.data) for c in m.cells if c.type == 'tetra')\n    \
                      others = sum(len(c.data) for c in m.cells if c.type != 'tetra')\n    \
                      last = ' '.join(repr(x) for x in m.points[-1].tolist())\n    \
                      print('read:', len(m.points), tets, others, last)\n";
    let out = Command::new(python)
        .arg("-c")
        .arg(script)
        .args(files.map(|(name, _)| dir.join(name)))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "meshio failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let last = mesh.positions()[mesh.positions().len() - 1];
    let expected = format!(
        "read: {} {} 0 {:?} {:?} {:?}",
        mesh.positions().len(),
        mesh.tets().len(),
        last.x,
        last.y,
        last.z
    );
    let reads: Vec<&str> = stdout.lines().filter(|l| l.starts_with("read:")).collect();
    assert_eq!(reads, [expected.as_str(); 3], "meshio printed:\n{stdout}");
}
