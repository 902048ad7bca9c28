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
    /// Tet strain (ARAP) `Σ w|V₀|/2 ‖F − R‖²`.
    #[serde(default)]
    pub strain: f64,
    /// Tet strain limiting `Σ w|V₀|/2 ‖F − U clamp(Σ) Vᵀ‖²`.
    #[serde(default)]
    pub strain_limit: f64,
    /// Tet volume `Σ w|V₀|/2 ‖F − P_vol(F)‖²`.
    #[serde(default)]
    pub volume: f64,
}

impl Energies {
    /// Sum of the elastic terms.
    pub fn elastic(&self) -> f64 {
        self.structural
            + self.shear
            + self.bending
            + self.attachment
            + self.strain
            + self.strain_limit
            + self.volume
    }

    /// Kinetic + gravitational + elastic.
    pub fn total(&self) -> f64 {
        self.kinetic + self.gravitational + self.elastic()
    }

    /// Every series by name, total last (for graphs and CSV columns).
    pub fn series(&self) -> [(&'static str, f64); 10] {
        [
            ("kinetic", self.kinetic),
            ("gravitational", self.gravitational),
            ("structural", self.structural),
            ("shear", self.shear),
            ("bending", self.bending),
            ("attachment", self.attachment),
            ("strain", self.strain),
            ("strain_limit", self.strain_limit),
            ("volume", self.volume),
            ("total", self.total()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field is a series, and the elastic ones all count in the total.
    #[test]
    fn series_cover_every_field() {
        let e = Energies {
            kinetic: 1.0,
            gravitational: 2.0,
            structural: 4.0,
            shear: 8.0,
            bending: 16.0,
            attachment: 32.0,
            strain: 64.0,
            strain_limit: 128.0,
            volume: 256.0,
        };
        let series = e.series();
        let parts: f64 = series[..series.len() - 1].iter().map(|(_, v)| v).sum();
        assert_eq!(parts, 511.0);
        assert_eq!(series.last(), Some(&("total", 511.0)));
        assert_eq!(e.elastic(), 508.0);
        let json = serde_json::to_value(e).unwrap();
        for (name, value) in &series[..series.len() - 1] {
            assert_eq!(json[name], *value, "{name}");
        }
    }
}
