//! The GPU side of the 3D view (three-d): the shaded surface, the shrunk
//! tets, the ground grid and the sphere colliders, drawn inside an egui
//! paint callback. The view hands over new vertex data in a UI frame whose
//! positions changed ([`Scene::stage`]); the callback uploads it and draws
//! ([`Scene::render`]). Meshes are re-made only when their vertex count or
//! triangles change; otherwise only positions and normals are uploaded.

use eframe::egui;
use three_d::{
    AmbientLight, Camera, ClearState, ColorMaterial, Context, CpuMaterial, CpuMesh, Cull,
    DirectionalLight, Gm, Indices, Mesh, PhysicalMaterial, Positions, RenderTarget, ScissorBox,
    Srgba, degrees, vec3,
};

use super::ball::{BallMesh, BallView};
use super::camera::Orbit;
use super::viewport::{relative, to3};
use crate::mesh::Vec3;

/// The viewport's clear colour (RGB): what a blank view shows.
pub const CLEAR: [u8; 3] = [38, 41, 48];

/// Vertex data for one mesh: positions and normals, and the triangles
/// (vertex indices, three per triangle) when they changed.
#[derive(Debug, Default)]
pub struct MeshData {
    /// Positions.
    pub positions: Vec<three_d::Vec3>,
    /// Normals, one per position.
    pub normals: Vec<three_d::Vec3>,
    /// New triangles, or `None` to keep the mesh's (for a mesh of unshared
    /// vertices, three per triangle in order: always `None`).
    pub indices: Option<Vec<u32>>,
}

/// The ground grid: `y` height, centred on `(x, z)`, lines `spacing` apart.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridSpec {
    /// Height of the plane (m).
    pub y: f64,
    /// Centre, x (m).
    pub x: f64,
    /// Centre, z (m).
    pub z: f64,
    /// Line spacing (m).
    pub spacing: f64,
}

/// One mesh of the next draw.
#[derive(Debug)]
pub enum Layer {
    /// Not drawn.
    Hidden,
    /// Drawn as staged last.
    Unchanged,
    /// Drawn with this new data.
    New(MeshData),
}

/// Everything the view stages for the next draw.
#[derive(Debug)]
pub struct Staged {
    /// The shaded surface.
    pub surface: Layer,
    /// The shrunk tets.
    pub tets: Layer,
    /// The world point drawn at the GPU's origin: the meshes' positions are
    /// relative to it.
    pub origin: Vec3,
    /// The ground grid.
    pub grid: Option<GridSpec>,
    /// Sphere colliders: centre and radius.
    pub spheres: Vec<(Vec3, f64)>,
    /// The size of the body (its rest pose's bounding-box diagonal, m).
    pub body: f64,
}

/// A mesh whose vertices may change every frame (uploaded only when they
/// do).
struct DynamicMesh {
    colour: Srgba,
    cull: Cull,
    /// Every three consecutive vertices make a triangle (no indices sent).
    sequential: bool,
    mesh: Option<Gm<Mesh, PhysicalMaterial>>,
    vertices: usize,
    /// The mesh's triangles, to make it again from (see
    /// [`DynamicMesh::update`]).
    indices: Vec<u32>,
}

impl DynamicMesh {
    fn new(colour: Srgba, cull: Cull, sequential: bool) -> Self {
        Self {
            colour,
            cull,
            sequential,
            mesh: None,
            vertices: 0,
            indices: Vec::new(),
        }
    }

    /// Takes `layer`'s data, if new; returns whether the mesh is drawn.
    fn stage(&mut self, context: &Context, layer: Layer) -> bool {
        match layer {
            Layer::Hidden => false,
            Layer::Unchanged => true,
            Layer::New(data) => {
                self.update(context, data);
                true
            }
        }
    }

    /// Uploads `data`: new buffers for new triangles or vertex count, else
    /// the positions and normals only (or, where three-d refuses those, the
    /// mesh again with the triangles it had).
    fn update(&mut self, context: &Context, data: MeshData) {
        match data.indices {
            Some(indices) => self.indices = indices,
            None if data.positions.len() == self.vertices => {
                if let Some(gm) = &mut self.mesh
                    && write_vertices(&mut gm.geometry, &data).is_ok()
                {
                    return;
                }
                // Refused (or not made yet): made again from its triangles.
            }
            // Unshared vertices (the tets): triangle i is 3i, 3i+1, 3i+2.
            None if self.sequential => self.indices = (0..data.positions.len() as u32).collect(),
            // A vertex count changed without triangles: wait for them.
            None => return,
        }
        self.vertices = data.positions.len();
        let cpu = CpuMesh {
            positions: Positions::F32(data.positions),
            normals: Some(data.normals),
            indices: Indices::U32(self.indices.clone()),
            ..Default::default()
        };
        if let Some(gm) = &mut self.mesh {
            gm.geometry = Mesh::new(context, &cpu);
            return;
        }
        let mut material = PhysicalMaterial::new_opaque(
            context,
            &CpuMaterial {
                albedo: self.colour,
                roughness: 0.7,
                metallic: 0.0,
                ..Default::default()
            },
        );
        material.render_states.cull = self.cull;
        self.mesh = Some(Gm::new(Mesh::new(context, &cpu), material));
    }
}

/// Writes `data`'s positions and normals into `mesh`'s buffers. three-d
/// 0.19 checks their length against the mesh's index count, not its vertex
/// count (`Mesh::vertex_count`), so `set_positions` of any indexed mesh
/// fails: with its error ignored, the shaded surface stayed at the pose it
/// was made in while the simulation moved. Writing from the first vertex
/// passes that check wherever there are at least as many indices as
/// vertices (every vertex in a triangle); `Err` otherwise, and the mesh is
/// then made again.
fn write_vertices(mesh: &mut Mesh, data: &MeshData) -> Result<(), three_d::RendererError> {
    mesh.set_positions_partially(0, &data.positions)?;
    mesh.set_normals_partially(0, &data.normals)
}

/// The GPU scene. Held as `Arc<Mutex<Scene>>` so the paint callback
/// (which must be `Send + Sync`) can own a handle.
pub struct Scene {
    context: Context,
    surface: DynamicMesh,
    tets: DynamicMesh,
    show_surface: bool,
    show_tets: bool,
    grid: Option<Gm<Mesh, ColorMaterial>>,
    grid_spec: Option<GridSpec>,
    spheres: Vec<(Vec3, f64)>,
    body: f64,
    /// The spheres' drawn surfaces (made again when the view or origin
    /// they were made for no longer serves).
    balls: Vec<Ball>,
    origin: Vec3,
    ambient: AmbientLight,
    key: DirectionalLight,
    fill: DirectionalLight,
}

impl Scene {
    /// A scene drawing with `context`.
    pub fn new(context: Context) -> Self {
        let white = Srgba::WHITE;
        Self {
            ambient: AmbientLight::new(&context, 0.35, white),
            key: DirectionalLight::new(&context, 2.2, white, vec3(-0.5, -1.0, -0.6)),
            fill: DirectionalLight::new(&context, 0.6, white, vec3(0.7, -0.3, 0.8)),
            // Both sides of the surface are drawn: PhysicalMaterial lights a
            // back-facing triangle with its normal flipped.
            surface: DynamicMesh::new(Srgba::new(226, 120, 72, 255), Cull::None, false),
            tets: DynamicMesh::new(Srgba::new(90, 170, 190, 255), Cull::Back, true),
            show_surface: false,
            show_tets: false,
            grid: None,
            grid_spec: None,
            spheres: Vec::new(),
            body: 0.0,
            balls: Vec::new(),
            origin: Vec3::zeros(),
            context,
        }
    }

    /// Takes the view's data for the next draw.
    pub fn stage(&mut self, staged: Staged) {
        self.show_surface = self.surface.stage(&self.context, staged.surface);
        self.show_tets = self.tets.stage(&self.context, staged.tets);
        self.origin = staged.origin;
        let grid = staged.grid.map(|g| GridSpec {
            y: g.y - self.origin.y,
            x: g.x - self.origin.x,
            z: g.z - self.origin.z,
            ..g
        });
        if grid != self.grid_spec {
            self.grid_spec = grid;
            self.grid = grid.map(|spec| grid_mesh(&self.context, spec));
        }
        self.spheres = staged.spheres;
        self.body = staged.body;
    }

    /// Draws into the callback's part of the screen, looking through
    /// `orbit`.
    pub fn render(&mut self, info: &egui::PaintCallbackInfo, orbit: &Orbit) {
        let vp = info.viewport_in_pixels();
        let clip = info.clip_rect_in_pixels();
        let viewport = three_d::Viewport {
            x: vp.left_px,
            y: vp.from_bottom_px,
            width: vp.width_px.max(1) as u32,
            height: vp.height_px.max(1) as u32,
        };
        let scissor = ScissorBox {
            x: clip.left_px,
            y: clip.from_bottom_px,
            width: clip.width_px.max(0) as u32,
            height: clip.height_px.max(0) as u32,
        };
        let origin = self.origin;
        let (near, far) = orbit.clip_planes();
        let camera = Camera::new_perspective(
            viewport,
            relative(&orbit.eye(), origin),
            relative(&orbit.target, origin),
            vec3(0.0, 1.0, 0.0),
            degrees(orbit.fov_deg as f32),
            near as f32,
            far as f32,
        );
        let [r, g, b] = CLEAR.map(|c| f32::from(c) / 255.0);
        let target = RenderTarget::screen(
            &self.context,
            info.screen_size_px[0],
            info.screen_size_px[1],
        );
        target.clear_partially(scissor, ClearState::color_and_depth(r, g, b, 1.0, 1.0));
        let lights: [&dyn three_d::Light; 3] = [&self.ambient, &self.key, &self.fill];
        let mut objects: Vec<&dyn three_d::Object> = Vec::new();
        objects.extend(self.grid.iter().map(|g| g as &dyn three_d::Object));
        if self.show_surface {
            objects.extend(self.surface.mesh.iter().map(|m| m as &dyn three_d::Object));
        }
        if self.show_tets {
            objects.extend(self.tets.mesh.iter().map(|m| m as &dyn three_d::Object));
        }
        target.render_partially(scissor, &camera, objects, &lights);
        let mut made = std::mem::take(&mut self.balls);
        for &(centre, radius) in &self.spheres {
            let view = BallView {
                centre,
                radius,
                target: orbit.target,
                distance: orbit.distance,
                body: self.body,
            };
            // (Kept with the view it was made for: a slow pan or zoom
            // makes it again once that is 2 % away.)
            let serves = |b: &Ball| b.origin == origin && view.close_to(&b.view);
            let ball = match made.iter().position(serves) {
                Some(i) => made.swap_remove(i),
                None => Ball {
                    view,
                    origin,
                    gm: ball_mesh(&self.context, view.mesh(), origin),
                },
            };
            target.render_partially(scissor, &camera, [&ball.gm], &lights);
            self.balls.push(ball);
        }
    }
}

/// A sphere collider's drawn surface on the GPU, and the view and origin
/// it was made for.
struct Ball {
    view: BallView,
    origin: Vec3,
    gm: Gm<Mesh, PhysicalMaterial>,
}

/// A sphere collider's drawn surface on the GPU, relative to `origin`.
fn ball_mesh(context: &Context, mesh: BallMesh, origin: Vec3) -> Gm<Mesh, PhysicalMaterial> {
    let cpu = CpuMesh {
        positions: Positions::F32(mesh.positions.iter().map(|p| relative(p, origin)).collect()),
        normals: Some(mesh.normals.iter().map(to3).collect()),
        indices: Indices::U32(mesh.indices),
        ..Default::default()
    };
    Gm::new(
        Mesh::new(context, &cpu),
        PhysicalMaterial::new_opaque(
            context,
            &CpuMaterial {
                albedo: Srgba::new(120, 130, 145, 255),
                roughness: 0.5,
                ..Default::default()
            },
        ),
    )
}

/// A grid of thin quads on the plane `spec.y`, 21 lines per side.
fn grid_mesh(context: &Context, spec: GridSpec) -> Gm<Mesh, ColorMaterial> {
    let lines = 21;
    let (y, cx, cz, spacing) = (
        spec.y as f32,
        spec.x as f32,
        spec.z as f32,
        spec.spacing as f32,
    );
    let half = spacing * (lines - 1) as f32 / 2.0;
    let w = spacing * 0.008;
    let mut positions = Vec::new();
    let mut indices = Vec::new();
    let mut quad = |corners: [three_d::Vec3; 4]| {
        let base = positions.len() as u32;
        positions.extend(corners);
        // Both windings: visible from above and below.
        indices.extend([base, base + 1, base + 2, base, base + 2, base + 3]);
        indices.extend([base, base + 2, base + 1, base, base + 3, base + 2]);
    };
    for i in 0..lines {
        let o = -half + i as f32 * spacing;
        quad([
            vec3(cx + o - w, y, cz - half),
            vec3(cx + o - w, y, cz + half),
            vec3(cx + o + w, y, cz + half),
            vec3(cx + o + w, y, cz - half),
        ]);
        quad([
            vec3(cx - half, y, cz + o - w),
            vec3(cx + half, y, cz + o - w),
            vec3(cx + half, y, cz + o + w),
            vec3(cx - half, y, cz + o + w),
        ]);
    }
    let cpu = CpuMesh {
        positions: Positions::F32(positions),
        indices: Indices::U32(indices),
        ..Default::default()
    };
    let material = ColorMaterial::new_opaque(
        context,
        &CpuMaterial {
            albedo: Srgba::new(95, 100, 110, 255),
            ..Default::default()
        },
    );
    Gm::new(Mesh::new(context, &cpu), material)
}
