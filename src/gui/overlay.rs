//! The 2D overlays drawn over the 3D view with egui's painter, from the
//! same [`Projection`](super::camera::Projection) picking uses: wireframe, springs coloured by strain,
//! bending springs, pins and their targets, the grab, the selection.

use eframe::egui::{self, Color32, Pos2, Stroke};

use super::camera::Projected;
use super::selection::Selection;
use crate::mesh::Vec3;
use crate::model::{Attachment, Model, Spring};

/// Which overlays are drawn (the View menu and the viewport toolbar).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Overlays {
    /// Edges of the drawn surface.
    pub wireframe: bool,
    /// Structural and shear springs coloured by strain.
    pub springs: bool,
    /// Bending springs.
    pub bending: bool,
    /// Tets, shrunk about their centroids (replaces the surface).
    pub tets: bool,
    /// How far tets shrink (1: not at all).
    pub tet_scale: f32,
    /// Hide the tets in front of the orbit target (a cut-away view).
    pub cut_away: bool,
    /// Hard and soft pins, soft-pin targets, the grab.
    pub pins: bool,
    /// Ground grid at the ground collider and the sphere colliders.
    pub colliders: bool,
    /// The selected vertices.
    pub selection: bool,
    /// The strain drawn fully blue (compressed) or red (stretched).
    pub strain_scale: f64,
}

impl Default for Overlays {
    fn default() -> Self {
        Self {
            wireframe: false,
            springs: false,
            bending: false,
            tets: false,
            tet_scale: 0.7,
            cut_away: false,
            pins: true,
            colliders: true,
            selection: true,
            strain_scale: 0.01,
        }
    }
}

/// An overlay named on the command line (`softbody gui --overlay`; the
/// variants' docs are its help).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OverlayName {
    /// Edges of the drawn surface.
    Wireframe,
    /// Structural and shear springs coloured by strain.
    Springs,
    /// Bending springs.
    Bending,
    /// Tets, shrunk about their centroids.
    Tets,
    /// Tets, with those in front of the orbit target hidden.
    CutAway,
}

impl Overlays {
    /// Turns on the overlay `name`.
    pub fn enable(&mut self, name: OverlayName) {
        match name {
            OverlayName::Wireframe => self.wireframe = true,
            OverlayName::Springs => self.springs = true,
            OverlayName::Bending => self.bending = true,
            OverlayName::Tets => self.tets = true,
            OverlayName::CutAway => {
                self.tets = true;
                self.cut_away = true;
            }
        }
    }
}

/// Compressed (blue) through rest (light grey) to stretched (red): the
/// colour of `strain` (length / rest − 1), saturating at ±`scale`.
pub fn strain_colour(strain: f64, scale: f64) -> Color32 {
    let t = (strain / scale.max(1e-12)).clamp(-1.0, 1.0) as f32;
    let rest = [200.0, 200.0, 200.0];
    let end = if t < 0.0 {
        [40.0, 110.0, 255.0]
    } else {
        [255.0, 50.0, 40.0]
    };
    let a = t.abs();
    let [r, g, b] = [0, 1, 2].map(|i| (rest[i] + (end[i] - rest[i]) * a).round() as u8);
    Color32::from_rgb(r, g, b)
}

/// Colour of the hard pins.
pub const HARD_PIN: Color32 = Color32::from_rgb(235, 60, 60);
/// Colour of the soft pins and their targets.
pub const SOFT_PIN: Color32 = Color32::from_rgb(245, 200, 50);
/// Colour of the grabbed vertex and its pull.
pub const GRAB: Color32 = Color32::from_rgb(80, 220, 255);
/// Colour of the selection and the selecting tools: near white, apart
/// from the pins' red and yellow, the grab's cyan and the surface's orange
/// (an orange selection hardly showed on it).
pub const SELECTED: Color32 = Color32::from_rgb(245, 245, 255);

/// What the overlays draw from.
pub struct OverlayInput<'a> {
    /// The model.
    pub model: &'a Model,
    /// Its vertex positions now.
    pub x: &'a [Vec3],
    /// Their projections.
    pub projected: &'a [Option<Projected>],
    /// The unique edges of the drawn surface with their endpoints'
    /// projections (for the wireframe).
    pub wire: (&'a [[u32; 2]], &'a [Option<Projected>]),
    /// The soft pins in force with their current targets (the grab among
    /// them), as the solver has them.
    pub attachments: &'a [Attachment],
    /// The vertices the grab holds (see [`Session::held`](crate::session::Session::held)).
    pub held: &'a [u32],
    /// The pinned and selected vertices the drawn surface hides (sorted):
    /// their markers are left out (see
    /// [`picking::hidden_from`](super::picking::hidden_from)).
    pub hidden: &'a [u32],
    /// The selection.
    pub selection: &'a Selection,
    /// Projects a world point (for targets).
    pub project: &'a dyn Fn(&Vec3) -> Option<Projected>,
}

fn pos(p: &Projected) -> Pos2 {
    Pos2::new(p.screen[0] as f32, p.screen[1] as f32)
}

/// Many line segments as one egui mesh of thin quads: no per-segment
/// shape or anti-aliasing pass, so tens of thousands of springs draw at
/// interactive rates.
#[derive(Default)]
struct Lines(egui::Mesh);

impl Lines {
    fn push(&mut self, a: Pos2, b: Pos2, width: f32, colour: Color32) {
        let d = b - a;
        let length = d.length();
        if !length.is_finite() || length < 1e-3 {
            return;
        }
        let n = egui::vec2(-d.y, d.x) * (width / 2.0 / length);
        let base = self.0.vertices.len() as u32;
        for p in [a - n, a + n, b + n, b - n] {
            self.0.colored_vertex(p, colour);
        }
        self.0.add_triangle(base, base + 1, base + 2);
        self.0.add_triangle(base, base + 2, base + 3);
    }

    fn draw(self, painter: &egui::Painter) {
        if !self.0.is_empty() {
            painter.add(egui::Shape::mesh(self.0));
        }
    }
}

/// Draws the enabled overlays.
pub fn draw(painter: &egui::Painter, overlays: &Overlays, input: &OverlayInput<'_>) {
    let projected = input.projected;
    let mut lines = Lines::default();
    if overlays.wireframe {
        let (edges, at) = input.wire;
        let colour = Color32::from_rgba_unmultiplied(20, 20, 20, 160);
        for &[a, b] in edges {
            if let (Some(pa), Some(pb)) = (at[a as usize], at[b as usize]) {
                lines.push(pos(&pa), pos(&pb), 1.0, colour);
            }
        }
    }
    let mut strained = |springs: &[Spring], width: f32| {
        for s in springs {
            let (Some(pa), Some(pb)) = (projected[s.a as usize], projected[s.b as usize]) else {
                continue;
            };
            let length = (input.x[s.a as usize] - input.x[s.b as usize]).norm();
            let strain = if s.rest > 0.0 {
                length / s.rest - 1.0
            } else {
                0.0
            };
            let colour = strain_colour(strain, overlays.strain_scale);
            lines.push(pos(&pa), pos(&pb), width, colour);
        }
    };
    let springs = &input.model.springs;
    if overlays.springs {
        strained(&springs.structural, 1.5);
        strained(&springs.shear, 1.0);
    }
    if overlays.bending {
        strained(&springs.bending, 1.0);
    }
    lines.draw(painter);
    let shown = |v: &u32| input.hidden.binary_search(v).is_err();
    if overlays.selection {
        for v in input.selection.iter().filter(shown) {
            if let Some(p) = projected[v as usize] {
                painter.circle_filled(pos(&p), 3.0, SELECTED);
            }
        }
    }
    if overlays.pins {
        for &v in input.model.pins.hard_vertices().iter().filter(|v| shown(v)) {
            if let Some(p) = projected[v as usize] {
                let r = egui::Rect::from_center_size(pos(&p), egui::vec2(7.0, 7.0));
                painter.rect_filled(r, 1.0, HARD_PIN);
            }
        }
        for a in input.attachments.iter().filter(|a| shown(&a.vertex)) {
            let colour = if input.held.contains(&a.vertex) {
                GRAB
            } else {
                SOFT_PIN
            };
            let (Some(p), Some(t)) = (projected[a.vertex as usize], (input.project)(&a.target))
            else {
                continue;
            };
            painter.line_segment([pos(&p), pos(&t)], Stroke::new(1.5, colour));
            painter.circle_stroke(pos(&t), 4.0, Stroke::new(1.5, colour));
            painter.circle_filled(pos(&p), 3.5, colour);
        }
    }
}

/// Draws a colour bar for the strain colours at the bottom left of `rect`.
pub fn strain_legend(painter: &egui::Painter, rect: egui::Rect, scale: f64) {
    let width = 160.0;
    let origin = rect.left_bottom() + egui::vec2(12.0, -28.0);
    let steps = 32;
    for i in 0..steps {
        let t = i as f64 / (steps - 1) as f64 * 2.0 - 1.0;
        let x = origin.x + width * i as f32 / steps as f32;
        let r = egui::Rect::from_min_size(
            Pos2::new(x, origin.y),
            egui::vec2(width / steps as f32 + 0.5, 8.0),
        );
        painter.rect_filled(r, 0.0, strain_colour(t * scale, scale));
    }
    let font = egui::FontId::proportional(11.0);
    let label = |x: f32, text: String, align: egui::Align2| {
        painter.text(
            Pos2::new(x, origin.y + 10.0),
            align,
            text,
            font.clone(),
            Color32::LIGHT_GRAY,
        );
    };
    let pct = scale * 100.0;
    label(origin.x, format!("-{pct:.3}%"), egui::Align2::LEFT_TOP);
    label(
        origin.x + width / 2.0,
        "rest".into(),
        egui::Align2::CENTER_TOP,
    );
    label(
        origin.x + width,
        format!("+{pct:.3}%"),
        egui::Align2::RIGHT_TOP,
    );
}

/// The unique edges of `triangles`, each as `[low, high]`, sorted.
pub fn unique_edges(triangles: &[[u32; 3]]) -> Vec<[u32; 2]> {
    let mut edges: Vec<[u32; 2]> = triangles
        .iter()
        .flat_map(|&[a, b, c]| [[a, b], [b, c], [c, a]])
        .map(|[a, b]| [a.min(b), a.max(b)])
        .collect();
    edges.sort_unstable();
    edges.dedup();
    edges
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strain_colours_run_blue_grey_red_and_saturate() {
        let rest = strain_colour(0.0, 0.05);
        assert_eq!(rest, Color32::from_rgb(200, 200, 200));
        let stretched = strain_colour(0.05, 0.05);
        assert_eq!(stretched, strain_colour(1.0, 0.05));
        assert!(stretched.r() > 250 && stretched.b() < 50);
        let compressed = strain_colour(-0.05, 0.05);
        assert!(compressed.b() > 250 && compressed.r() < 50);
        // Halfway is halfway.
        let half = strain_colour(0.025, 0.05);
        assert!(half.r() > rest.r() && half.g() < rest.g() && half.g() > stretched.g());
    }

    #[test]
    fn two_triangles_share_one_edge() {
        let edges = unique_edges(&[[0, 1, 2], [2, 1, 3]]);
        assert_eq!(edges, vec![[0, 1], [0, 2], [1, 2], [1, 3], [2, 3]]);
    }
}
