//! # Softbody Studio
//!
//! Author soft bodies from OBJ meshes: build a spring model from the mesh
//! edges (with bending springs across interior edges) or a tetrahedral model
//! ([`model::Model::from_tet_mesh`]: corotated strain, strain limiting and
//! volume constraints), simulate it with projective dynamics, and save the
//! result as a preset.
//!
//! The core is headless; the editor (`gui` feature) and terminal UI (`tui`
//! feature) are front ends over it.
//!
//! ```
//! use softbody::mesh::{self, ImportOptions, ValidateOptions};
//! use softbody::model::{Model, Pins, Springs, Weights};
//! use softbody::solver::{SimParams, Solver, State};
//! use std::path::Path;
//!
//! // Import: a 1 m square made of one quad, triangulated on import.
//! let obj = b"v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3 4\n";
//! let path = Path::new("quad.obj");
//! let (raw, _stats) = mesh::import_obj_bytes(obj, path, &ImportOptions::default())?;
//! let (surface, _changes) = mesh::validate(&raw, path, &ValidateOptions::default())?;
//! let springs = Springs::from_surface(&surface);
//! assert_eq!(surface.triangles().len(), 2);
//! assert_eq!(springs.structural.len(), 4); // the sides
//! assert_eq!(springs.shear.len(), 2); // the diagonals
//! assert!(springs.bending.is_empty());
//!
//! // Model: 0.3 kg/m², the top edge (y = 1) hard-pinned.
//! let mut model = Model::from_surface(&surface, 0.3, Weights::default());
//! model.pins = Pins::hard((0..4).filter(|&v| surface.positions()[v as usize].y == 1.0));
//!
//! // Simulate one second; the free corners hang below the pins.
//! let mut solver = Solver::new(&model, &SimParams::default())?;
//! let mut state = State::at_rest(&model);
//! for _ in 0..60 {
//!     let report = solver.step(&mut state)?;
//!     assert!(report.objective.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-12)));
//! }
//! assert!(state.positions[0].y < 0.0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod autosave;
pub mod background;
pub mod bake;
pub mod bench;
pub mod command;
pub mod fsutil;
pub mod fuzzing;
#[cfg(feature = "gui")]
pub mod gui;
mod located;
pub mod mesh;
pub mod model;
pub mod param;
pub mod preset;
pub mod session;
pub mod signals;
pub mod sim_thread;
pub mod solver;
#[cfg(feature = "tui")]
pub mod tui;
