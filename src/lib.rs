//! # Softbody Studio
//!
//! Author soft bodies from OBJ meshes: build a spring model from the mesh
//! edges (with bending springs across interior edges), simulate it with
//! projective dynamics, and save the result as a preset.
//!
//! The core is headless; the editor (`gui` feature) and terminal UI (`tui`
//! feature) are front ends over it.
//!
//! ```
//! use softbody::mesh::{self, ImportOptions, ValidateOptions};
//! use softbody::model::Springs;
//! use std::path::Path;
//!
//! let obj = b"v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n";
//! let path = Path::new("quad.obj");
//! let (raw, _stats) = mesh::import_obj_bytes(obj, path, &ImportOptions::default())?;
//! let (surface, _changes) = mesh::validate(&raw, path, &ValidateOptions::default())?;
//! let springs = Springs::from_surface(&surface);
//! assert_eq!(surface.triangles().len(), 2);
//! assert_eq!(springs.structural.len(), 5); // 4 sides and the diagonal
//! assert_eq!(springs.bending.len(), 1); // across the diagonal
//! # Ok::<(), softbody::mesh::ImportError>(())
//! ```

pub mod bench;
pub mod mesh;
pub mod model;
pub mod solver;
