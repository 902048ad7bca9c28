//! Hard pins (vertices removed from the unknowns) and soft pins (attachment
//! constraints pulling a vertex towards a target that may move).

use crate::mesh::Vec3;

/// A soft pin: energy `w/2 ‖x_i − target‖²` with the model's attachment weight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Attachment {
    /// The attached vertex.
    pub vertex: u32,
    /// Where it is pulled to.
    pub target: Vec3,
}

/// The pin set of a model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pins {
    hard: Vec<u32>,
    /// Soft pins, at most one per vertex.
    pub soft: Vec<Attachment>,
}

impl Pins {
    /// Hard pins on `vertices` (sorted and deduplicated), no soft pins.
    pub fn hard(vertices: impl IntoIterator<Item = u32>) -> Self {
        let mut hard: Vec<u32> = vertices.into_iter().collect();
        hard.sort_unstable();
        hard.dedup();
        Self {
            hard,
            soft: Vec::new(),
        }
    }

    /// Hard-pinned vertices, sorted and unique.
    pub fn hard_vertices(&self) -> &[u32] {
        &self.hard
    }

    /// Whether `v` is hard-pinned.
    pub fn is_hard(&self, v: u32) -> bool {
        self.hard.binary_search(&v).is_ok()
    }

    /// Adds hard pins.
    pub fn pin(&mut self, vertices: impl IntoIterator<Item = u32>) {
        self.hard.extend(vertices);
        self.hard.sort_unstable();
        self.hard.dedup();
    }

    /// Removes hard and soft pins from `vertices`.
    pub fn unpin(&mut self, vertices: &[u32]) {
        self.hard.retain(|v| !vertices.contains(v));
        self.soft.retain(|a| !vertices.contains(&a.vertex));
    }
}
