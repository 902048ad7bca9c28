//! Simulation models built from meshes: springs (and, later, tetrahedra),
//! masses and pins.

pub mod cloth_grid;
pub mod springs;

pub use cloth_grid::ClothGrid;
pub use springs::{Spring, SpringKind, Springs};
