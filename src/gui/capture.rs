//! Headless capture (`softbody gui --frames N --screenshot out.png`): play
//! N UI frames, save a screenshot of the whole window, check that the 3D
//! view shows the mesh, and that it moved with the simulation, and close.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use eframe::egui::{self, ColorImage, Rect};

use super::camera::Projected;
use super::scene::CLEAR;

/// A scripted run: play `frames` UI frames, then save a screenshot (if
/// asked) and close, reporting into `outcome`.
#[derive(Clone, Debug)]
pub struct Script {
    /// UI frames to play.
    pub frames: usize,
    /// Where to save the screenshot (PNG).
    pub screenshot: Option<PathBuf>,
    /// The result of the run: an error fails `softbody gui`.
    pub outcome: Arc<Mutex<Result<(), String>>>,
}

/// A screenshot to come, and where the simulation's vertices were on
/// screen (pixels) in the frame it shows.
struct Shot {
    image: Arc<Mutex<Option<Arc<ColorImage>>>>,
    vertices: Vec<Option<[f64; 2]>>,
}

impl Shot {
    /// Asks `ctx` for a screenshot of the frame whose vertices are
    /// `projected` (points).
    fn request(ctx: &egui::Context, projected: &[Option<Projected>]) -> Self {
        let image: Arc<Mutex<Option<Arc<ColorImage>>>> = Arc::default();
        let slot = Arc::clone(&image);
        ctx.request_screenshot(move |shot| {
            if let Ok(mut s) = slot.lock() {
                *s = Some(shot);
            }
        });
        let ppp = f64::from(ctx.pixels_per_point());
        let vertices = (projected.iter())
            .map(|p| p.map(|p| p.screen.map(|v| v * ppp)))
            .collect();
        Self { image, vertices }
    }

    /// The screenshot, once it came.
    fn image(&self) -> Option<Arc<ColorImage>> {
        self.image.lock().ok().and_then(|s| s.clone())
    }
}

/// The frame of a scripted run whose screenshot the last is compared with
/// (the first frames may lay out the view before the scene draws).
const FIRST_SHOT: usize = 3;

/// How far (pixels) some vertex must move on screen between the two
/// screenshots for the 3D view to have to change.
const MOVED_PIXELS: f64 = 6.0;

/// The progress of a [`Script`].
pub struct ScriptRun {
    script: Script,
    started: std::time::Instant,
    drawn: usize,
    first: Option<Shot>,
    last: Option<Shot>,
    /// Whether the screenshot was saved and checked: the frames drawn
    /// while the window closes do nothing more (they saved, checked and
    /// reported it again).
    done: bool,
}

impl ScriptRun {
    /// A run of `script` from its first frame.
    pub fn new(script: Script) -> Self {
        Self {
            script,
            started: std::time::Instant::now(),
            drawn: 0,
            first: None,
            last: None,
            done: false,
        }
    }

    /// Advances after a frame was laid out; `view` is the 3D view's
    /// rectangle (points) and `projected` where the simulation's vertices
    /// appear in it, `has_scene` whether it drew in 3D, `rates` the UI and
    /// simulation frames per second and `frame` the simulation's frame
    /// (reported at the end, with the run's wall time). With `woken` the
    /// simulation's next frame repaints (the run then counts the frames it
    /// draws, as a user sees them); otherwise the run repaints at once.
    pub fn frame_done(
        &mut self,
        ctx: &egui::Context,
        (view, projected): (Option<Rect>, &[Option<Projected>]),
        has_scene: bool,
        rates: [f64; 2],
        frame: u64,
        woken: bool,
    ) {
        if self.done {
            return;
        }
        self.drawn += 1;
        if !woken || self.drawn >= self.script.frames {
            ctx.request_repaint();
        }
        let Some(path) = self.script.screenshot.clone() else {
            if self.drawn >= self.script.frames {
                ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            }
            return;
        };
        if self.drawn == FIRST_SHOT && self.script.frames > FIRST_SHOT {
            self.first = Some(Shot::request(ctx, projected));
        }
        if self.drawn < self.script.frames {
            return;
        }
        let Some(last) = &self.last else {
            self.last = Some(Shot::request(ctx, projected));
            return;
        };
        let Some(image) = last.image() else {
            return;
        };
        let region = view.map(|r| {
            let ppp = ctx.pixels_per_point();
            [r.min.x, r.min.y, r.max.x, r.max.y].map(|v| (v * ppp).round().max(0.0) as usize)
        });
        let first = self.first.as_ref().and_then(|f| Some((f.image()?, f)));
        let result = save_and_check(&image, &path, region, has_scene)
            .map_err(|e| where_the_body_went(e, &last.vertices, region))
            .and_then(|count| match (first, region) {
                (Some((before, shot)), Some(region)) => {
                    check_moved((&before, &shot.vertices), (&image, &last.vertices), region)?;
                    Ok(count)
                }
                _ => Ok(count),
            });
        let [ui_fps, sim_fps] = rates;
        let seconds = self.started.elapsed().as_secs_f64();
        let memory =
            crate::solver::memory::resident().map_or_else(String::new, |m| format!("; memory {m}"));
        // A closed standard error must not end the run with a panic. (A
        // failure is said once, as the run's error.)
        if let Ok(n) = &result {
            let _ = writeln!(
                std::io::stderr(),
                "screenshot {}: {n} pixels drawn in the 3D view (UI {ui_fps:.0} fps, simulation {sim_fps:.1} fps; frame {frame} after {seconds:.1} s{memory})",
                path.display()
            );
        }
        if let Ok(mut o) = self.script.outcome.lock() {
            *o = result
                .map(|_| ())
                .map_err(|e| format!("screenshot {}: {e}", path.display()));
        }
        self.done = true;
        ctx.send_viewport_cmd(egui::ViewportCommand::Close);
    }
}

/// Whether a screenshot can be saved at `path`: a `.png` name in a
/// directory that exists.
///
/// # Errors
/// What is wrong, naming the path.
pub fn check_screenshot_path(path: &Path) -> Result<(), String> {
    let png = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    if !png {
        return Err(format!(
            "screenshot {}: only PNG is written; name the file .png",
            path.display()
        ));
    }
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!(
            "screenshot {}: the directory {} does not exist",
            path.display(),
            dir.display()
        ));
    }
    Ok(())
}

/// Saves `image` as a PNG at `path` (written beside it and renamed into
/// place, so a failure leaves an earlier file whole) and checks its 3D
/// `region` (pixels: x0, y0, x1, y1) is not blank (see
/// [`check_not_blank`]).
fn save_and_check(
    image: &ColorImage,
    path: &Path,
    region: Option<[usize; 4]>,
    has_scene: bool,
) -> Result<usize, String> {
    let [w, h] = image.size;
    let rgb: Vec<[u8; 3]> = image.pixels.iter().map(|c| [c.r(), c.g(), c.b()]).collect();
    let bytes: Vec<u8> = rgb.iter().flatten().copied().collect();
    let mut png = Vec::new();
    image::ImageEncoder::write_image(
        image::codecs::png::PngEncoder::new(&mut png),
        &bytes,
        w as u32,
        h as u32,
        image::ExtendedColorType::Rgb8,
    )
    .map_err(|e| format!("cannot encode: {e}"))?;
    crate::fsutil::write_atomically(path, |out| out.write_all(&png))
        .map_err(|e| format!("cannot save: {e}"))?;
    if !has_scene {
        return Err("no OpenGL context: the 3D view was not drawn".into());
    }
    let region = region.ok_or("the 3D view was not laid out")?;
    check_in_place([w, h], &rgb, region)?;
    check_not_blank([w, h], &rgb, region)
}

/// `error` with where the body went when it has left the 3D view's
/// `region`, or its middle third that the blank check reads (`at`: its
/// vertices, pixels; `None` behind the camera): a body with no pins falls
/// out of the view in the scripted frames, and its blank view read as a
/// drawing failure.
fn where_the_body_went(
    error: String,
    at: &[Option<[f64; 2]>],
    region: Option<[usize; 4]>,
) -> String {
    let Some([x0, y0, x1, y1]) = region.map(|r| r.map(|v| v as f64)) else {
        return error;
    };
    let within = |[x0, y0, x1, y1]: [f64; 4]| {
        (at.iter().flatten())
            .filter(|p| (x0..x1).contains(&p[0]) && (y0..y1).contains(&p[1]))
            .count()
    };
    let (w, h) = ((x1 - x0) / 3.0, (y1 - y0) / 3.0);
    let (seen, middle) = (
        within([x0, y0, x1, y1]),
        within([x0 + w, y0 + h, x1 - w, y1 - h]),
    );
    let n = at.len();
    let place = if seen * 2 < n {
        format!("only {seen} of the body's {n} vertices are in the view")
    } else if middle * 2 < n {
        format!("only {middle} of the body's {n} vertices are in the middle of the view")
    } else {
        return error;
    };
    format!(
        "{error}; {place} at the last frame (a body with no pins falls out of it: pin it, add \
         a ground, or take fewer --frames)"
    )
}

/// Whether a pixel is the 3D view's clear colour (within 3 levels).
fn is_clear(p: [u8; 3]) -> bool {
    p.iter().zip(CLEAR).all(|(&a, b)| a.abs_diff(b) <= 3)
}

/// Checks that the 3D view (`region`, pixels) lies within the window
/// (`size`) and that its drawing stays in it: the rows just above it (the
/// toolbar's) are not mostly its clear colour. In a narrow window the view
/// once reached past the right edge, where the drawing (clamped to the
/// window) and the picking no longer lined up; and the drawing cleared the
/// whole panel, toolbar included.
///
/// # Errors
/// What is out of place.
fn check_in_place(size: [usize; 2], pixels: &[[u8; 3]], region: [usize; 4]) -> Result<(), String> {
    let [w, h] = size;
    let [x0, y0, x1, y1] = region;
    // (A pixel over is rounding.)
    if x1 > w + 1 || y1 > h + 1 {
        return Err(format!(
            "the 3D view ({x0}..{x1} × {y0}..{y1} pixels) reaches past the window ({w} × {h}): \
             the drawing and the picking do not line up"
        ));
    }
    let (x1, rows) = (x1.min(w), y0.min(8));
    let strip = (y0 - rows..y0).flat_map(|y| (x0..x1).map(move |x| y * w + x));
    let cleared = strip.filter(|&i| is_clear(pixels[i])).count();
    if rows > 0 && cleared * 2 > rows * (x1 - x0) {
        return Err(format!(
            "the 3D drawing covers the toolbar above the view ({cleared} of {} pixels there \
             are its clear colour)",
            rows * (x1 - x0)
        ));
    }
    Ok(())
}

/// Checks that a screenshot's 3D region (`region`, pixels, within the
/// image of `size` pixels, rows top-down) is not blank: at least 10% of its
/// middle third (in each direction) differs from the clear colour (the mesh
/// is framed there, so a broken depth buffer or a missing mesh shows), and
/// at least 1% of the whole region. Returns how many pixels differ. (It
/// used to ask for the centre pixel, which a torus's hole or a car's window
/// leaves clear.)
///
/// # Errors
/// A message saying what looked blank.
pub fn check_not_blank(
    size: [usize; 2],
    pixels: &[[u8; 3]],
    region: [usize; 4],
) -> Result<usize, String> {
    let [w, h] = size;
    let [x0, y0, x1, y1] = [
        region[0].min(w),
        region[1].min(h),
        region[2].min(w),
        region[3].min(h),
    ];
    if x1 <= x0 || y1 <= y0 {
        return Err("the 3D view has no area".into());
    }
    let differs = |p: [u8; 3]| !is_clear(p);
    let count_in = |[x0, y0, x1, y1]: [usize; 4]| {
        (y0..y1)
            .flat_map(|y| (x0..x1).map(move |x| y * w + x))
            .filter(|&i| differs(pixels[i]))
            .count()
    };
    let count = count_in([x0, y0, x1, y1]);
    let area = (x1 - x0) * (y1 - y0);
    // The middle third of `a..b` (never empty: b > a).
    let third = |a: usize, b: usize| {
        let start = a + (b - a) / 3;
        (start, (a + 2 * (b - a) / 3).max(start + 1))
    };
    let ((mx0, mx1), (my0, my1)) = (third(x0, x1), third(y0, y1));
    let middle = count_in([mx0, my0, mx1, my1]);
    let middle_area = (mx1 - mx0) * (my1 - my0);
    if middle * 10 < middle_area {
        return Err(format!(
            "the middle of the 3D view is nearly blank ({middle} of {middle_area} pixels \
             differ from the clear colour; {count} of {area} in the whole view)"
        ));
    }
    if count * 100 < area {
        return Err(format!(
            "the 3D view is nearly blank: {count} of {area} pixels differ from the clear colour"
        ));
    }
    Ok(count)
}

/// Checks that the shaded surface in the 3D view (`region`, pixels) moved
/// from the screenshot `before` to `after` as the simulation's vertices did
/// (their positions, pixels, in each): where those seen in both moved on
/// average by at least [`MOVED_PIXELS`], the centroid of the surface's
/// pixels (its colour: [`is_surface`]) must follow by at least a fifth of
/// that, in the same direction. The shaded surface once stayed at the pose
/// it was made in while the simulation moved, and the blank-view check
/// passed; the markers drawn over it (pins, a selection) are not its colour.
///
/// # Errors
/// What did not move.
fn check_moved(
    (before, from): (&ColorImage, &[Option<[f64; 2]>]),
    (after, to): (&ColorImage, &[Option<[f64; 2]>]),
    region: [usize; 4],
) -> Result<(), String> {
    let [x0, y0, x1, y1] = region.map(|v| v as f64);
    let inside = |p: &[f64; 2]| (x0..x1).contains(&p[0]) && (y0..y1).contains(&p[1]);
    let (mut sum, mut seen) = ([0.0; 2], 0.0);
    for (a, b) in from.iter().zip(to) {
        if let (Some(a), Some(b)) = (a, b)
            && inside(a)
            && inside(b)
        {
            sum = [sum[0] + b[0] - a[0], sum[1] + b[1] - a[1]];
            seen += 1.0;
        }
    }
    if seen == 0.0 {
        return Ok(());
    }
    let moved = [sum[0] / seen, sum[1] / seen];
    let distance = moved[0].hypot(moved[1]);
    if distance < MOVED_PIXELS {
        return Ok(());
    }
    let (Some(c0), Some(c1)) = (
        surface_centroid(before, region),
        surface_centroid(after, region),
    ) else {
        // The surface is hidden (the tets drawn instead) or out of view.
        return Ok(());
    };
    let followed = [c1[0] - c0[0], c1[1] - c0[1]];
    let along = (followed[0] * moved[0] + followed[1] * moved[1]) / distance;
    if along < 0.2 * distance {
        return Err(format!(
            "the simulation moved the body by {distance:.0} pixels on screen, but the drawn \
             surface moved {along:.1} pixels that way"
        ));
    }
    Ok(())
}

/// The centroid (pixels) of the surface-coloured pixels of `image` in
/// `region`, if there are at least 50.
fn surface_centroid(image: &ColorImage, region: [usize; 4]) -> Option<[f64; 2]> {
    let [w, h] = image.size;
    let (x0, x1) = (region[0].min(w), region[2].min(w));
    let (y0, y1) = (region[1].min(h), region[3].min(h));
    let (mut sum, mut count) = ([0.0; 2], 0usize);
    for y in y0..y1 {
        for x in x0..x1 {
            if is_surface(image.pixels[y * w + x]) {
                sum = [sum[0] + x as f64, sum[1] + y as f64];
                count += 1;
            }
        }
    }
    (count >= 50).then(|| sum.map(|s| s / count as f64))
}

/// Whether `colour` is the shaded surface's orange, lit or in shade
/// (hue 5–35°, saturated): not the grid's grey, the clear colour, the
/// tets' teal or the yellow pin markers.
fn is_surface(colour: egui::Color32) -> bool {
    let [r, g, b, _] = colour.to_array().map(f64::from);
    let (max, min) = (r.max(g).max(b), r.min(g).min(b));
    if r < max || max < 60.0 || (max - min) < 0.35 * max {
        return false;
    }
    let hue = 60.0 * (g - b) / (max - min);
    (5.0..=35.0).contains(&hue)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A surface that stays put while the vertices move is refused; one
    /// that moves with them, vertices that barely move and a view without
    /// the surface pass.
    #[test]
    fn a_surface_that_does_not_follow_the_motion_is_refused() {
        let clear = egui::Color32::from_rgb(38, 41, 48);
        // A 10 × 10 block of lit orange, its top left at `at`, and a yellow
        // marker block that moves either way.
        let drawn = |at: usize, marker: usize| {
            let mut image = ColorImage::filled([60, 40], clear);
            for y in 5..15 {
                for x in at..at + 10 {
                    image.pixels[y * 60 + x] = egui::Color32::from_rgb(226, 120, 72);
                }
                image.pixels[y * 60 + marker] = egui::Color32::from_rgb(240, 200, 40);
            }
            image
        };
        let region = [0, 0, 60, 40];
        let at = |x: f64| vec![Some([x, 10.0]), Some([x + 5.0, 12.0]), None];
        let (before, after) = (
            (&drawn(5, 2), &at(5.0)[..]),
            (&drawn(30, 50), &at(30.0)[..]),
        );
        assert!(check_moved(before, after, region).is_ok());
        let stayed = (&drawn(5, 50), &at(30.0)[..]);
        let error = check_moved(before, stayed, region).unwrap_err();
        assert!(error.contains("moved the body by 25 pixels"), "{error}");
        // Barely moved; out of the view; no surface drawn.
        assert!(check_moved(before, (&drawn(5, 2), &at(8.0)[..]), region).is_ok());
        assert!(check_moved((&drawn(5, 2), &at(70.0)), stayed, region).is_ok());
        let empty = ColorImage::filled([60, 40], clear);
        assert!(check_moved((&empty, &at(5.0)), (&empty, &at(30.0)), region).is_ok());
        // A blank view with the body gone from it says so.
        let blank = || "the 3D view is nearly blank".to_owned();
        let centred = [Some([25.0, 20.0]), Some([30.0, 18.0]), Some([35.0, 22.0])];
        assert_eq!(
            where_the_body_went(blank(), &centred, Some(region)),
            blank()
        );
        let gone = where_the_body_went(blank(), &at(70.0), Some(region));
        assert!(
            gone.starts_with(
                "the 3D view is nearly blank; only 0 of the body's 3 vertices are in the view"
            ),
            "{gone}"
        );
        // In the view but off its middle third (20..40 × 13.3..26.7).
        let low = [Some([30.0, 35.0]), Some([32.0, 36.0]), Some([25.0, 20.0])];
        let off = where_the_body_went(blank(), &low, Some(region));
        assert!(
            off.contains("only 1 of the body's 3 vertices are in the middle of the view"),
            "{off}"
        );
        assert!(is_surface(egui::Color32::from_rgb(120, 64, 38)), "in shade");
        assert!(
            !is_surface(egui::Color32::from_rgb(90, 170, 190)),
            "the tets"
        );
        assert!(!is_surface(clear));
    }

    #[test]
    fn a_view_past_the_window_or_drawn_over_its_toolbar_is_refused() {
        let panel = [27, 27, 27];
        // A 30 × 30 window, the view below a 10-row toolbar.
        let window = |toolbar: [u8; 3]| {
            let mut pixels = vec![CLEAR; 900];
            pixels[..300].fill(toolbar);
            pixels
        };
        let (size, view) = ([30, 30], [0, 10, 30, 30]);
        assert_eq!(check_in_place(size, &window(panel), view), Ok(()));
        let err = check_in_place(size, &window(CLEAR), view).unwrap_err();
        assert!(err.contains("covers the toolbar"), "{err}");
        let err = check_in_place(size, &window(panel), [0, 10, 36, 30]).unwrap_err();
        assert!(err.contains("reaches past the window"), "{err}");
        // A view at the top has no toolbar to cover.
        assert_eq!(check_in_place(size, &window(CLEAR), [0, 0, 30, 30]), Ok(()));
    }

    #[test]
    fn blank_views_are_refused() {
        let size = [30, 30];
        let shaded = |cells: &dyn Fn(usize, usize) -> bool| {
            let mut pixels = vec![CLEAR; 900];
            for y in 0..30 {
                for x in 0..30 {
                    if cells(x, y) {
                        pixels[y * 30 + x] = [200, 120, 80];
                    }
                }
            }
            pixels
        };
        let all = [0, 0, 30, 30];
        assert!(check_not_blank(size, &shaded(&|_, _| false), all).is_err());
        let block = shaded(&|x, y| (10..20).contains(&x) && (10..20).contains(&y));
        assert_eq!(check_not_blank(size, &block, all), Ok(100));
        // A ring (a torus seen from above) whose hole is the centre.
        let ring = shaded(&|x, y| {
            let r = (x as f64 - 14.5).hypot(y as f64 - 14.5);
            (4.0..9.0).contains(&r)
        });
        assert!(check_not_blank(size, &ring, all).is_ok());
        // Shading away from the middle only is not enough.
        let corner = shaded(&|x, y| x < 8 && y < 8);
        assert!(check_not_blank(size, &corner, all).is_err());
        assert!(check_not_blank(size, &block, [20, 20, 30, 30]).is_err());
        assert!(check_not_blank(size, &block, [5, 5, 5, 10]).is_err());
    }
}
