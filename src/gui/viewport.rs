//! The 3D view: the camera controls, picking, grabbing and the staging of
//! what [`Scene`] draws (three-d inside an egui paint callback) and what
//! the [`overlay`]s draw on top.
//!
//! Mouse: right drag (or Alt + left drag) orbits, middle drag (or Shift +
//! right drag) pans, the wheel zooms. Left button: while playing, a drag
//! that starts on the mesh grabs the nearest vertex and pulls it; else the
//! tool acts — Select: a click picks a vertex, a drag draws a box; Brush: a
//! drag paints. Shift adds to the selection, Ctrl removes.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use eframe::egui::{self, Color32, PointerButton, Rect, Sense, Stroke};
use eframe::egui_glow;
use three_d::Context;

use super::camera::{Orbit, Projected, Projection};
use super::overlay::{self, OverlayInput, Overlays};
use super::picking::{self, CLICK_RADIUS, Pickable};
use super::scene::{CLEAR, GridSpec, Layer, MeshData, Scene, Staged};
use super::selection::{SelectMode, Selection};
use crate::mesh::Vec3;
use crate::model::{Attachment, Model};
use crate::solver::{Collider, drawn_positions};

/// What the left button does when it is not grabbing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Tool {
    /// Click picks a vertex, drag draws a selection box.
    Select,
    /// Drag paints the selection with a round brush.
    Brush,
}

/// What the person did in the view this frame, for the app to carry out.
#[derive(Clone, Debug, PartialEq)]
pub enum ViewEvent {
    /// Change the selection by these vertices.
    Select(SelectMode, Vec<u32>),
    /// Take hold of `vertex`, pulling it to `target`.
    Grab {
        /// The vertex.
        vertex: u32,
        /// Where it is pulled (m).
        target: Vec3,
    },
    /// Move the held vertex's target.
    Drag(Vec3),
    /// Let go.
    Release,
}

/// A left-button gesture in progress.
#[derive(Clone, Copy, Debug)]
enum Gesture {
    /// Dragging a selection box from this corner.
    Box([f64; 2], SelectMode),
    /// Painting.
    Brush(SelectMode),
    /// Pulling a vertex; the plane it moves in passes through `anchor`.
    Grab { anchor: Vec3 },
}

/// What the view draws: the model, its state and the scene around it.
pub struct ViewInput<'a> {
    /// The model.
    pub model: &'a Model,
    /// The current positions.
    pub x: &'a [Vec3],
    /// The soft pins with their targets as the solver has them.
    pub attachments: &'a [Attachment],
    /// The vertices the grab holds (see [`Session::held`](crate::session::Session::held)).
    pub held: &'a [u32],
    /// The colliders.
    pub colliders: &'a [Collider],
    /// The selection.
    pub selection: &'a Selection,
    /// Whether the simulation plays (left drags grab).
    pub playing: bool,
}

/// Which mesh the scene draws the model with, and how.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Drawn {
    /// The surface.
    Surface,
    /// The model's `tets`, shrunk by `scale`, cut away at `cut`.
    Tets {
        tets: usize,
        scale: f32,
        cut: Option<(Vec3, Vec3)>,
    },
}

/// The 3D view's state: the camera, the tools, the overlays and, with a
/// GL context, the GPU scene.
pub struct Viewport3d {
    scene: Option<Arc<Mutex<Scene>>>,
    /// The camera.
    pub orbit: Orbit,
    /// The left button's tool.
    pub tool: Tool,
    /// The brush radius (points).
    pub brush_radius: f64,
    /// The overlays drawn.
    pub overlays: Overlays,
    /// The rectangle drawn last (points), for the screenshot check.
    pub rect: Option<Rect>,
    gesture: Option<Gesture>,
    /// The vertex and triangle counts of the surface the scene's mesh was
    /// last given triangles of: a change sends new triangles.
    topology: Option<(usize, usize)>,
    /// The wireframe overlay's edges, and the topology they are of.
    edges: Vec<[u32; 2]>,
    edges_of: Option<(usize, usize)>,
    /// What the scene was last given, and the positions it was made from
    /// (a UI frame without a new simulation frame stages nothing new).
    drawn: Option<(Drawn, Vec<Vec3>)>,
    /// The world point the scene draws at the GPU's origin, the centre of
    /// the model's rest pose: positions go to single precision relative to
    /// it (a 1 m cube 5,000 km from the world's origin, as survey
    /// coordinates are, was drawn warped, one 1e9 m off not at all). A new
    /// origin stages the meshes anew.
    origin: Vec3,
    render: Vec<Vec3>,
    projected: Vec<Option<Projected>>,
    render_projected: Vec<Option<Projected>>,
    /// The pinned and selected vertices last found hidden by the surface,
    /// and what for.
    cover: Option<Cover>,
    /// The pinned and selected vertices of this frame, to compare with the
    /// cover's (a buffer kept: the comparison runs every UI frame).
    marked: Vec<u32>,
}

/// The largest selection whose markers [`Viewport3d::cover_markers`] tests
/// against the surface.
const MAX_COVERED_SELECTION: usize = 20_000;

/// The markers [`Viewport3d::cover_markers`] found the surface hides, and
/// what it found them for: tested again when the pins change, else at most
/// every [`Cover::FOR`] (a large model's tree of triangles takes
/// milliseconds to build, and the markers then lag the motion or the
/// camera by at most that).
struct Cover {
    at: Instant,
    marked: Vec<u32>,
    hidden: Vec<u32>,
}

impl Cover {
    const FOR: Duration = Duration::from_millis(100);
}

impl Viewport3d {
    /// A view drawing with `gl` (none: a placeholder, as in tests).
    pub fn new(gl: Option<Arc<eframe::glow::Context>>) -> Self {
        let scene = gl
            .and_then(|gl| Context::from_gl_context(gl).ok())
            .map(|c| Arc::new(Mutex::new(Scene::new(c))));
        Self {
            scene,
            orbit: Orbit::default(),
            tool: Tool::Select,
            brush_radius: 30.0,
            overlays: Overlays::default(),
            rect: None,
            gesture: None,
            topology: None,
            edges: Vec::new(),
            edges_of: None,
            drawn: None,
            origin: Vec3::zeros(),
            render: Vec::new(),
            cover: None,
            marked: Vec::new(),
            projected: Vec::new(),
            render_projected: Vec::new(),
        }
    }

    /// Whether the view draws in 3D (a GL context exists).
    pub fn has_scene(&self) -> bool {
        self.scene.is_some()
    }

    /// Aims the camera at the whole model in state `x` (F).
    pub fn frame_all(&mut self, model: &Model, x: &[Vec3]) {
        self.frame_with_colliders(model, x, &[]);
    }

    /// Aims the camera at the model in state `x` and at where `colliders`
    /// near it will catch it (a preset without a view: framed on its start
    /// alone, a body that fell onto a ground or a ball below left the
    /// view).
    pub fn frame_with_colliders(&mut self, model: &Model, x: &[Vec3], colliders: &[Collider]) {
        model.render_positions(x, &mut self.render);
        let catch = catching_points(&self.render, colliders);
        self.render.extend(catch);
        self.orbit.frame(&self.render);
    }

    /// Forgets the drawn topology and any gesture (a new model).
    pub fn reset(&mut self) {
        self.topology = None;
        self.edges_of = None;
        self.drawn = None;
        self.gesture = None;
    }

    /// The camera as a preset's view.
    pub fn view(&self) -> crate::preset::View {
        crate::preset::View {
            eye: self.orbit.eye(),
            target: self.orbit.target,
            fov_deg: self.orbit.fov_deg,
        }
    }

    /// Where the simulation's vertices appear in the view laid out last
    /// (points; `None` behind the camera).
    pub fn projected(&self) -> &[Option<Projected>] {
        &self.projected
    }

    /// Lays out the view in `ui`'s remaining space, handles the mouse and
    /// draws; returns what the person did.
    pub fn show(&mut self, ui: &mut egui::Ui, input: &ViewInput<'_>) -> Vec<ViewEvent> {
        // Within what is shown: the drawing is clamped to the window, and
        // the picking and overlays must use the same rectangle.
        let rect = ui.available_rect_before_wrap().intersect(ui.clip_rect());
        let response = ui.allocate_rect(rect, Sense::click_and_drag());
        self.rect = Some(rect);
        self.navigate(ui, &response, rect);
        drawn_positions(input.model, input.x, input.colliders, &mut self.render);
        let projection = Projection::new(
            &self.orbit,
            [
                f64::from(rect.left()),
                f64::from(rect.top()),
                f64::from(rect.width()),
                f64::from(rect.height()),
            ],
        );
        picking::project_all(&projection, input.x, &mut self.projected);
        let events = self.interact(ui, &response, &projection, input);
        self.draw_3d(ui, rect, input);
        let painter = ui.painter_at(rect);
        let triangles = input.model.render_triangles();
        let topology = (self.render.len(), triangles.len());
        if self.overlays.wireframe {
            if self.edges_of != Some(topology) {
                self.edges = overlay::unique_edges(triangles);
                self.edges_of = Some(topology);
            }
            picking::project_all(&projection, &self.render, &mut self.render_projected);
        }
        self.cover_markers(input);
        let hidden = self.cover.as_ref().map_or(&[][..], |c| &c.hidden[..]);
        let project = |p: &Vec3| projection.project(p);
        overlay::draw(
            &painter,
            &self.overlays,
            &OverlayInput {
                model: input.model,
                x: input.x,
                projected: &self.projected,
                wire: (&self.edges, &self.render_projected),
                attachments: input.attachments,
                held: input.held,
                hidden,
                selection: input.selection,
                project: &project,
            },
        );
        // The bar keys the springs drawn: none on a model without them.
        let springs = &input.model.springs;
        let drawn = (self.overlays.springs
            && !(springs.structural.is_empty() && springs.shear.is_empty()))
            || (self.overlays.bending && !springs.bending.is_empty());
        if drawn {
            overlay::strain_legend(&painter, rect, self.overlays.strain_scale);
        }
        self.draw_gesture(ui, &painter, &response);
        events
    }

    /// Orbit, pan and zoom.
    fn navigate(&mut self, ui: &egui::Ui, response: &egui::Response, rect: Rect) {
        let (modifiers, scroll) = ui.input(|i| (i.modifiers, i.smooth_scroll_delta.y));
        let d = response.drag_delta();
        let (dx, dy) = (f64::from(d.x), f64::from(d.y));
        let orbiting = (response.dragged_by(PointerButton::Secondary) && !modifiers.shift)
            || (response.dragged_by(PointerButton::Primary) && modifiers.alt);
        let panning = response.dragged_by(PointerButton::Middle)
            || (response.dragged_by(PointerButton::Secondary) && modifiers.shift);
        if orbiting {
            self.orbit.rotate(dx, dy);
        } else if panning {
            self.orbit.pan(dx, dy, f64::from(rect.height()));
        }
        if response.hovered() && scroll != 0.0 {
            self.orbit.zoom(f64::from(scroll));
        }
    }

    /// The left button: grab, pick, box or brush.
    fn interact(
        &mut self,
        ui: &egui::Ui,
        response: &egui::Response,
        projection: &Projection,
        input: &ViewInput<'_>,
    ) -> Vec<ViewEvent> {
        let (modifiers, press, pointer) = ui.input(|i| {
            (
                i.modifiers,
                i.pointer.press_origin(),
                i.pointer.interact_pos(),
            )
        });
        let mode = SelectMode::from_modifiers(modifiers.shift, modifiers.command || modifiers.ctrl);
        let to = |p: egui::Pos2| [f64::from(p.x), f64::from(p.y)];
        let pickable = Pickable {
            surface: &self.render,
            triangles: input.model.render_triangles(),
            vertices: input.x,
            projected: &self.projected,
        };
        let mut events = Vec::new();
        if modifiers.alt {
            return events;
        }
        if response.clicked_by(PointerButton::Primary)
            && let Some(at) = pointer
        {
            let picked = picking::pick_vertex(projection, to(at), &pickable, CLICK_RADIUS);
            events.push(ViewEvent::Select(mode, picked.into_iter().collect()));
        }
        if response.drag_started_by(PointerButton::Primary) {
            let start = press.or(pointer).map(to).unwrap_or_default();
            self.gesture = if input.playing {
                picking::pick_vertex(projection, start, &pickable, CLICK_RADIUS)
                    .filter(|&v| !input.model.pins.is_hard(v))
                    .map(|vertex| {
                        let anchor = input.x[vertex as usize];
                        events.push(ViewEvent::Grab {
                            vertex,
                            target: anchor,
                        });
                        Gesture::Grab { anchor }
                    })
            } else {
                None
            };
            if self.gesture.is_none() {
                self.gesture = Some(match self.tool {
                    Tool::Select => Gesture::Box(start, mode),
                    // A brush without modifiers adds: strokes build up.
                    Tool::Brush if mode == SelectMode::Replace => Gesture::Brush(SelectMode::Add),
                    Tool::Brush => Gesture::Brush(mode),
                });
            }
        }
        let stopped = response.drag_stopped_by(PointerButton::Primary);
        match (self.gesture, pointer) {
            (Some(Gesture::Grab { anchor }), Some(at)) => {
                let target =
                    picking::drag_target(projection, to(at), &anchor, &self.orbit.forward());
                events.push(ViewEvent::Drag(target));
            }
            (Some(Gesture::Brush(mode)), Some(at)) => {
                let dab = picking::brush_select(&self.projected, to(at), self.brush_radius);
                if !dab.is_empty() {
                    events.push(ViewEvent::Select(mode, dab));
                }
            }
            (Some(Gesture::Box(start, mode)), Some(at)) if stopped => {
                let inside = picking::box_select(&self.projected, start, to(at));
                events.push(ViewEvent::Select(mode, inside));
            }
            _ => {}
        }
        let ended = stopped || !response.dragged_by(PointerButton::Primary);
        if ended && matches!(self.gesture.take(), Some(Gesture::Grab { .. })) {
            events.push(ViewEvent::Release);
        }
        events
    }

    /// The selection box being drawn and the brush outline.
    fn draw_gesture(&self, ui: &egui::Ui, painter: &egui::Painter, response: &egui::Response) {
        let pointer = ui.input(|i| i.pointer.hover_pos());
        if let (Some(Gesture::Box(start, _)), Some(at)) = (self.gesture, pointer) {
            let corner = egui::pos2(start[0] as f32, start[1] as f32);
            let r = Rect::from_two_pos(corner, at);
            painter.rect_filled(r, 0.0, Color32::from_rgba_unmultiplied(245, 245, 255, 24));
            painter.rect_stroke(
                r,
                0.0,
                Stroke::new(1.0, overlay::SELECTED),
                egui::StrokeKind::Inside,
            );
        }
        if self.tool == Tool::Brush
            && response.hovered()
            && let Some(at) = pointer
        {
            painter.circle_stroke(
                at,
                self.brush_radius as f32,
                Stroke::new(1.0, overlay::SELECTED),
            );
        }
    }

    /// Finds (into `cover`) the pinned and selected vertices (the held ones
    /// aside) the drawn surface hides from the camera, sorted (QA: a
    /// jelly's pins on its bottom showed through it from above; and with
    /// only the pins hidden, the selected feet behind them showed white
    /// where no red was, as if half pinned); none while the tets are drawn
    /// (cut away, they show what the surface would hide) or neither pins
    /// nor the selection are. A marker shows within a margin of the
    /// surface: 2 % of the body's size, and on a tet body a cell's size,
    /// the distance its corners lie from the skin they carry. Tested again
    /// when the markers change, else at most every [`Cover::FOR`].
    fn cover_markers(&mut self, input: &ViewInput<'_>) {
        let model = input.model;
        let (pins, selection) = (self.overlays.pins, self.overlays.selection);
        if !(pins || selection) || (self.overlays.tets && !model.tets.is_empty()) {
            self.cover = None;
            return;
        }
        let mut marked = std::mem::take(&mut self.marked);
        marked.clear();
        if pins {
            marked.extend(
                (model.pins.hard_vertices().iter().copied())
                    .chain(input.attachments.iter().map(|a| a.vertex))
                    .filter(|v| !input.held.contains(v)),
            );
        }
        // (A selection of many thousands, all of a large body, would test
        // as many segments every look: its markers all show.)
        if selection && input.selection.len() <= MAX_COVERED_SELECTION {
            marked.extend(input.selection.iter());
        }
        marked.sort_unstable();
        marked.dedup();
        let fresh = |c: &Cover| c.marked == marked && c.at.elapsed() < Cover::FOR;
        if self.cover.as_ref().is_some_and(fresh) {
            self.marked = marked;
            return;
        }
        let hidden = self.find_hidden(input, &marked);
        let cover = Cover {
            at: Instant::now(),
            marked,
            hidden,
        };
        self.marked = (self.cover.replace(cover)).map_or_else(Vec::new, |old| old.marked);
    }

    /// Which of `marked` the drawn surface hides (see
    /// [`Viewport3d::cover_markers`]).
    fn find_hidden(&self, input: &ViewInput<'_>, marked: &[u32]) -> Vec<u32> {
        let model = input.model;
        if marked.is_empty() {
            return Vec::new();
        }
        let (lo, hi) = crate::mesh::bounds(&self.render);
        let sample = &model.tets[..model.tets.len().min(256)];
        // (A regular tet of volume V has edges of (6√2 V)^⅓.)
        let cell = sample
            .iter()
            .map(|t| (6.0 * std::f64::consts::SQRT_2 * t.rest_volume).cbrt())
            .sum::<f64>()
            / sample.len().max(1) as f64;
        let margin = (0.02 * (hi - lo).norm()).max(cell);
        let surface = (&self.render[..], model.render_triangles());
        picking::hidden_from(self.orbit.eye(), marked, input.x, surface, margin)
    }

    /// Stages the GPU scene and adds the paint callback, or paints a
    /// placeholder without OpenGL.
    fn draw_3d(&mut self, ui: &egui::Ui, rect: Rect, input: &ViewInput<'_>) {
        let Some(scene) = self.scene.clone() else {
            let painter = ui.painter();
            painter.rect_filled(rect, 0.0, Color32::from_rgb(CLEAR[0], CLEAR[1], CLEAR[2]));
            painter.text(
                rect.center(),
                egui::Align2::CENTER_CENTER,
                "3D view (needs OpenGL)",
                egui::FontId::proportional(16.0),
                Color32::GRAY,
            );
            return;
        };
        // The rest pose's bounds, once a UI frame: the origin, the body's
        // size and the grid.
        let rest = &input.model.rest;
        let bounds = (!rest.is_empty()).then(|| crate::mesh::bounds(rest));
        let (origin, body) = bounds.map_or((Vec3::zeros(), 0.0), |(lo, hi)| {
            ((lo + hi) / 2.0, (hi - lo).norm())
        });
        if origin != self.origin {
            self.origin = origin;
            self.drawn = None;
        }
        let (surface, tets) = self.layers(input);
        let staged = Staged {
            surface,
            tets,
            origin,
            body,
            grid: grid_spec(bounds, input.colliders, self.overlays.colliders),
            spheres: if self.overlays.colliders {
                input
                    .colliders
                    .iter()
                    .filter_map(|c| match *c {
                        Collider::Sphere { center, radius, .. } => Some((center, radius)),
                        Collider::Ground { .. } => None,
                    })
                    .collect()
            } else {
                Vec::new()
            },
        };
        if let Ok(mut s) = scene.lock() {
            s.stage(staged);
        }
        let orbit = self.orbit;
        let callback = egui_glow::CallbackFn::new(move |info, _painter| {
            if let Ok(mut s) = scene.lock() {
                s.render(&info, &orbit);
            }
        });
        // Clipped to the view: the callback clears its clip rectangle, and
        // the panel's (the toolbar above the view included) wiped the
        // toolbar.
        ui.painter_at(rect).add(egui::PaintCallback {
            rect,
            callback: Arc::new(callback),
        });
    }

    /// The surface and tet layers of the next draw: new data when the
    /// positions, the triangles or the way the model is drawn changed since
    /// the last call, else [`Layer::Unchanged`] (a UI frame without a new
    /// simulation frame uploads nothing). `self.render` holds the drawn
    /// positions.
    fn layers(&mut self, input: &ViewInput<'_>) -> (Layer, Layer) {
        let triangles = input.model.render_triangles();
        let drawn = if self.overlays.tets && !input.model.tets.is_empty() {
            Drawn::Tets {
                tets: input.model.tets.len(),
                scale: self.overlays.tet_scale,
                cut: self
                    .overlays
                    .cut_away
                    .then(|| (self.orbit.target, self.orbit.forward())),
            }
        } else {
            Drawn::Surface
        };
        let from = match drawn {
            Drawn::Surface => &self.render[..],
            Drawn::Tets { .. } => input.x,
        };
        // The surface mesh's triangles are sent when they change.
        let topology = (self.render.len(), triangles.len());
        let new_topology = drawn == Drawn::Surface && self.topology != Some(topology);
        if drawn == Drawn::Surface {
            self.topology = Some(topology);
        }
        let layer = if !new_topology
            && self
                .drawn
                .as_ref()
                .is_some_and(|(d, x)| *d == drawn && x[..] == *from)
        {
            Layer::Unchanged
        } else {
            let data = match drawn {
                Drawn::Surface => surface_data(from, triangles, new_topology, self.origin),
                Drawn::Tets { scale, cut, .. } => {
                    tet_data(input.model, from, scale, cut, self.origin)
                }
            };
            let mut kept = self.drawn.take().map(|(_, x)| x).unwrap_or_default();
            kept.clear();
            kept.extend_from_slice(from);
            self.drawn = Some((drawn, kept));
            Layer::New(data)
        };
        match drawn {
            Drawn::Surface => (layer, Layer::Hidden),
            Drawn::Tets { .. } => (Layer::Hidden, layer),
        }
    }
}

/// `v` in single precision.
pub fn to3(v: &Vec3) -> three_d::Vec3 {
    three_d::vec3(v.x as f32, v.y as f32, v.z as f32)
}

/// `v` relative to `origin`, in single precision.
pub fn relative(v: &Vec3, origin: Vec3) -> three_d::Vec3 {
    to3(&(v - origin))
}

/// Smooth vertex normals: the area-weighted sum of the adjacent triangles'
/// normals, normalised (`+y` for a vertex without area).
pub fn vertex_normals(positions: &[Vec3], triangles: &[[u32; 3]]) -> Vec<Vec3> {
    let mut normals = vec![Vec3::zeros(); positions.len()];
    for t in triangles {
        let [a, b, c] = t.map(|i| positions[i as usize]);
        // The cross product's length is twice the area: area weighting.
        let n = (b - a).cross(&(c - a));
        for &i in t {
            normals[i as usize] += n;
        }
    }
    for n in &mut normals {
        *n = n.try_normalize(1e-30).unwrap_or_else(Vec3::y);
    }
    normals
}

/// The surface as drawn, relative to `origin`: one copy of each vertex,
/// lit on both sides (the material flips the normal of a back-facing
/// triangle; cloth has two sides).
fn surface_data(
    positions: &[Vec3],
    triangles: &[[u32; 3]],
    new_topology: bool,
    origin: Vec3,
) -> MeshData {
    MeshData {
        positions: positions.iter().map(|p| relative(p, origin)).collect(),
        normals: vertex_normals(positions, triangles)
            .iter()
            .map(to3)
            .collect(),
        indices: new_topology.then(|| triangles.iter().flatten().copied().collect()),
    }
}

/// The tets shrunk by `scale` about their centroids, flat shaded, relative
/// to `origin`; with `cut = (point, normal)`, only those whose centroid
/// lies beyond the plane (a cut-away). Unshared vertices, three per
/// triangle in order.
pub fn tet_data(
    model: &Model,
    x: &[Vec3],
    scale: f32,
    cut: Option<(Vec3, Vec3)>,
    origin: Vec3,
) -> MeshData {
    let mut positions = Vec::new();
    let mut normals = Vec::new();
    for tet in &model.tets {
        let p = tet.vertices.map(|v| x[v as usize]);
        let centre = (p[0] + p[1] + p[2] + p[3]) / 4.0;
        if let Some((point, normal)) = cut
            && (centre - point).dot(&normal) < 0.0
        {
            continue;
        }
        let q = p.map(|v| centre + (v - centre) * f64::from(scale));
        for [a, b, c] in [[0, 1, 2], [0, 3, 1], [0, 2, 3], [1, 3, 2]] {
            let (mut a, mut b, c) = (q[a], q[b], q[c]);
            let mut n = (b - a).cross(&(c - a));
            // Outward: away from the centroid.
            if n.dot(&(a - centre)) < 0.0 {
                std::mem::swap(&mut a, &mut b);
                n = -n;
            }
            let n = n.try_normalize(1e-30).unwrap_or_else(Vec3::y);
            positions.extend([a, b, c].iter().map(|p| relative(p, origin)));
            normals.extend([to3(&n); 3]);
        }
    }
    MeshData {
        positions,
        normals,
        indices: None,
    }
}

/// Points of `colliders` that catch a body at `points`: on a ground below
/// it (within twice its size), the corners of its footprint there; of a
/// ball whose centre lies within twice the body's size of the body's
/// centre, its top and the ends of its horizontal diameters (at most the
/// body's size from its axis); of a ball far larger than the body whose
/// surface passes within that distance, the surface point nearest the
/// body and four around it, the body's half-size away.
pub fn catching_points(points: &[Vec3], colliders: &[Collider]) -> Vec<Vec3> {
    if points.is_empty() {
        return Vec::new();
    }
    let (lo, hi) = crate::mesh::bounds(points);
    let size = (hi - lo).norm().max(1e-3);
    let centre = (lo + hi) / 2.0;
    let mut out = Vec::new();
    for c in colliders {
        match *c {
            Collider::Ground { height, .. } => {
                if height < lo.y && lo.y - height <= 2.0 * size {
                    for (x, z) in [(lo.x, lo.z), (lo.x, hi.z), (hi.x, lo.z), (hi.x, hi.z)] {
                        out.push(Vec3::new(x, height, z));
                    }
                }
            }
            Collider::Sphere { center, radius, .. } => {
                let off = centre - center;
                if off.norm() <= 2.0 * size {
                    let across = radius.min(size);
                    out.push(center + Vec3::y() * radius);
                    for d in [Vec3::x(), -Vec3::x(), Vec3::z(), -Vec3::z()] {
                        out.push(center + d * across);
                    }
                } else if (off.norm() - radius).abs() <= 2.0 * size {
                    // A ball far larger than the body (a curved ground):
                    // its surface nearest the body, as wide as the body.
                    let normal = off.normalize();
                    let nearest = center + normal * radius;
                    let (u, v) = crate::mesh::across(normal);
                    out.push(nearest);
                    for d in [u, -u, v, -v] {
                        out.push(nearest + d * size / 2.0);
                    }
                }
            }
        }
    }
    out
}

/// The ground grid under a model of rest-pose bounds `rest` (none: no
/// grid): at the ground collider's height if there is one (and colliders
/// are shown), else a quarter of the model's size below it; spacing a power
/// of ten about a fifth of the model's size.
pub fn grid_spec(
    rest: Option<(Vec3, Vec3)>,
    colliders: &[Collider],
    show_colliders: bool,
) -> Option<GridSpec> {
    let (lo, hi) = rest?;
    let extent = (hi - lo).norm().max(1e-3);
    let spacing = 10f64.powf((extent / 5.0).log10().round());
    let snap = |v: f64| (v / spacing).round() * spacing;
    let centre = (lo + hi) / 2.0;
    let ground = colliders.iter().find_map(|c| match *c {
        Collider::Ground { height, .. } if show_colliders => Some(height),
        _ => None,
    });
    Some(GridSpec {
        y: ground.unwrap_or(lo.y - 0.25 * extent),
        x: snap(centre.x),
        z: snap(centre.z),
        spacing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_takes_in_what_catches_the_body() {
        let body = [Vec3::new(-0.5, 1.0, -0.5), Vec3::new(0.5, 1.2, 0.5)];
        let ground = |height| Collider::Ground {
            height,
            friction: 0.5,
        };
        let ball = |center, radius| Collider::Sphere {
            center,
            radius,
            friction: 0.5,
        };
        // A ground 1 m below: the footprint there; 10 m below, or above
        // the body's bottom: nothing.
        let caught = catching_points(&body, &[ground(0.0), ground(-10.0), ground(1.1)]);
        assert_eq!(caught.len(), 4);
        assert!(
            caught
                .iter()
                .all(|p| p.y == 0.0 && p.x.abs() == 0.5 && p.z.abs() == 0.5)
        );
        // A ball under it: its top and sides; a far one: nothing; a huge
        // one whose surface is under the body: that surface.
        let under = catching_points(&body, &[ball(Vec3::new(0.0, 0.5, 0.0), 0.3)]);
        assert_eq!(under[0], Vec3::new(0.0, 0.8, 0.0));
        assert_eq!(under[1], Vec3::new(0.3, 0.5, 0.0));
        assert!(catching_points(&body, &[ball(Vec3::new(9.0, 0.0, 0.0), 0.3)]).is_empty());
        let huge = catching_points(&body, &[ball(Vec3::new(0.0, -99.5, 0.0), 100.0)]);
        assert_eq!(huge.len(), 5);
        assert!((huge[0] - Vec3::new(0.0, 0.5, 0.0)).norm() < 1e-12);
        assert!(huge.iter().all(|p| (p.y - 0.5).abs() < 1e-12));
        let far_below = ball(Vec3::new(0.0, -109.5, 0.0), 100.0);
        assert!(catching_points(&body, &[far_below]).is_empty());
        assert!(catching_points(&[], &[ground(0.0)]).is_empty());
    }

    #[test]
    fn normals_of_a_flat_quad_point_up() {
        let p = [
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, -1.0),
            Vec3::new(0.0, 0.0, -1.0),
        ];
        let n = vertex_normals(&p, &[[0, 1, 2], [0, 2, 3]]);
        for v in n {
            assert!((v - Vec3::y()).norm() < 1e-12, "{v}");
        }
    }

    /// What a layer holds: `"hidden"`, `"unchanged"`, `"new"` or
    /// `"new with triangles"`.
    fn kind(layer: &Layer) -> &'static str {
        match layer {
            Layer::Hidden => "hidden",
            Layer::Unchanged => "unchanged",
            Layer::New(MeshData { indices: None, .. }) => "new",
            Layer::New(MeshData {
                indices: Some(_), ..
            }) => "new with triangles",
        }
    }

    #[test]
    fn only_a_change_restages_the_mesh() {
        let mesh = crate::mesh::primitives::tet_box(Vec3::repeat(1.0), [2, 2, 2]);
        let model = Model::from_tet_mesh(&mesh, 1000.0, crate::model::Weights::default(), false);
        let selection = Selection::new(model.vertex_count());
        let mut view = Viewport3d::new(None);
        let layers = |view: &mut Viewport3d, x: &[Vec3]| {
            model.render_positions(x, &mut view.render);
            let input = ViewInput {
                model: &model,
                x,
                attachments: &[],
                held: &[],
                colliders: &[],
                selection: &selection,
                playing: true,
            };
            let (surface, tets) = view.layers(&input);
            (kind(&surface), kind(&tets))
        };
        let mut x = model.rest.clone();
        assert_eq!(layers(&mut view, &x), ("new with triangles", "hidden"));
        assert_eq!(layers(&mut view, &x), ("unchanged", "hidden"));
        x[3].y += 0.01;
        assert_eq!(layers(&mut view, &x), ("new", "hidden"));
        assert_eq!(layers(&mut view, &x), ("unchanged", "hidden"));
        view.overlays.tets = true;
        assert_eq!(layers(&mut view, &x), ("hidden", "new"));
        assert_eq!(layers(&mut view, &x), ("hidden", "unchanged"));
        view.overlays.tet_scale = 0.5;
        assert_eq!(layers(&mut view, &x), ("hidden", "new"));
        x[3].y -= 0.01;
        assert_eq!(layers(&mut view, &x), ("hidden", "new"));
        view.overlays.tets = false;
        assert_eq!(layers(&mut view, &x), ("new", "hidden"));
        // A new model: the surface's triangles are sent again, also when
        // the tets were drawn first.
        view.reset();
        assert_eq!(layers(&mut view, &x), ("new with triangles", "hidden"));
        view.reset();
        view.overlays.tets = true;
        assert_eq!(layers(&mut view, &x), ("hidden", "new"));
        view.overlays.tets = false;
        assert_eq!(layers(&mut view, &x), ("new with triangles", "hidden"));
    }

    /// Selected vertices behind the surface are covered as pins are (QA:
    /// the selected feet behind their hidden pins showed white where no
    /// red was, as if half pinned); with the selection not drawn, not, and
    /// with nothing drawn, nothing is tested.
    #[test]
    fn the_surface_covers_selected_vertices_behind_it() {
        let mesh = crate::mesh::primitives::tet_box(Vec3::repeat(1.0), [2, 2, 2]);
        let model = Model::from_tet_mesh(&mesh, 1000.0, crate::model::Weights::default(), false);
        let x = model.rest.clone();
        let mut view = Viewport3d::new(None);
        model.render_positions(&x, &mut view.render);
        let eye = view.orbit.eye();
        let by_distance = |a: &u32, b: &u32| {
            let d = |v: &u32| (x[*v as usize] - eye).norm();
            d(a).total_cmp(&d(b))
        };
        let all = 0..model.vertex_count() as u32;
        let (near, far) = (all.clone().min_by(by_distance), all.max_by(by_distance));
        let (near, far) = (near.unwrap(), far.unwrap());
        let mut selection = Selection::new(model.vertex_count());
        selection.apply(SelectMode::Add, &[near, far]);
        let input = ViewInput {
            model: &model,
            x: &x,
            attachments: &[],
            held: &[],
            colliders: &[],
            selection: &selection,
            playing: false,
        };
        view.cover_markers(&input);
        assert_eq!(
            view.cover.as_ref().map(|c| c.hidden.clone()),
            Some(vec![far])
        );
        view.overlays.selection = false;
        view.cover_markers(&input);
        assert_eq!(view.cover.as_ref().map(|c| c.hidden.clone()), Some(vec![]));
        view.overlays.pins = false;
        view.cover_markers(&input);
        assert!(view.cover.is_none());
    }

    #[test]
    fn shrunk_tets_face_outwards_and_a_cut_hides_half() {
        let mesh = crate::mesh::primitives::tet_box(Vec3::repeat(1.0), [2, 2, 2]);
        let model = Model::from_tet_mesh(&mesh, 1000.0, crate::model::Weights::default(), false);
        let x = model.rest.clone();
        let all = tet_data(&model, &x, 0.5, None, Vec3::zeros());
        assert_eq!(all.positions.len(), model.tets.len() * 12);
        // Every face normal points away from its tet's centroid (the mean
        // of the tet's twelve drawn vertices).
        for (tet, normals) in all.positions.chunks(12).zip(all.normals.chunks(12)) {
            let centre = tet.iter().fold(three_d::vec3(0.0, 0.0, 0.0), |s, p| s + p) / 12.0;
            for (face, n) in tet.chunks(3).zip(normals.chunks(3)) {
                let face_centre = (face[0] + face[1] + face[2]) / 3.0;
                let out = face_centre - centre;
                assert!(out.x * n[0].x + out.y * n[0].y + out.z * n[0].z > 0.0);
            }
        }
        let (lo, hi) = crate::mesh::bounds(&x);
        let mid = (lo + hi) / 2.0;
        let half = tet_data(&model, &x, 0.5, Some((mid, Vec3::x())), Vec3::zeros());
        assert!(half.positions.len() < all.positions.len());
        assert!(!half.positions.is_empty());
    }

    #[test]
    fn the_grid_lies_on_the_ground_collider() {
        let rest = [Vec3::new(-1.0, 0.0, 0.0), Vec3::new(1.0, 2.0, 0.0)];
        let ground = [Collider::Ground {
            height: -0.5,
            friction: 0.0,
        }];
        let rest = Some(crate::mesh::bounds(&rest));
        assert_eq!(grid_spec(rest, &ground, true).unwrap().y, -0.5);
        let free = grid_spec(rest, &[], true).unwrap();
        assert!(free.y < 0.0 && free.spacing > 0.0);
        assert!(grid_spec(None, &[], true).is_none());
    }
}
