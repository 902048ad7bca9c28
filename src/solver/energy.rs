//! [`Energies`]: the series of the live graphs (physics.md §5).

/// Energies of one state, in joules.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Energies {
    /// `½ Σ mᵢ ‖vᵢ‖²`.
    pub kinetic: f64,
    /// `−Σ mᵢ g · (xᵢ − xᵢ⁰)`, relative to the rest positions.
    pub gravitational: f64,
    /// Structural springs `Σ k/2 (‖xᵢ − xⱼ‖ − r)²`.
    pub structural: f64,
    /// Shear springs.
    pub shear: f64,
    /// Bending springs.
    pub bending: f64,
    /// Soft pins `Σ w/2 ‖xᵢ − tᵢ‖²`.
    pub attachment: f64,
}

impl Energies {
    /// Sum of the elastic terms.
    pub fn elastic(&self) -> f64 {
        self.structural + self.shear + self.bending + self.attachment
    }

    /// Kinetic + gravitational + elastic.
    pub fn total(&self) -> f64 {
        self.kinetic + self.gravitational + self.elastic()
    }

    /// Every series by name, total last (for graphs and CSV columns).
    pub fn series(&self) -> [(&'static str, f64); 7] {
        [
            ("kinetic", self.kinetic),
            ("gravitational", self.gravitational),
            ("structural", self.structural),
            ("shear", self.shear),
            ("bending", self.bending),
            ("attachment", self.attachment),
            ("total", self.total()),
        ]
    }
}
