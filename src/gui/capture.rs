//! Headless capture (`softbody gui --frames N --screenshot out.png`): play
//! N UI frames, save a screenshot of the whole window, check that the 3D
//! view shows the mesh, and close.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use eframe::egui::{self, ColorImage, Rect};

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

/// The progress of a [`Script`].
pub struct ScriptRun {
    script: Script,
    started: std::time::Instant,
    drawn: usize,
    requested: bool,
    shot: Arc<Mutex<Option<Arc<ColorImage>>>>,
}

impl ScriptRun {
    /// A run of `script` from its first frame.
    pub fn new(script: Script) -> Self {
        Self {
            script,
            started: std::time::Instant::now(),
            drawn: 0,
            requested: false,
            shot: Arc::default(),
        }
    }

    /// Advances after a frame was laid out; `view` is the 3D view's
    /// rectangle (points), `has_scene` whether it drew in 3D, `rates` the
    /// UI and simulation frames per second and `frame` the simulation's
    /// frame (reported at the end, with the run's wall time). With `woken`
    /// the simulation's next frame repaints (the run then counts the frames
    /// it draws, as a user sees them); otherwise the run repaints at once.
    pub fn frame_done(
        &mut self,
        ctx: &egui::Context,
        view: Option<Rect>,
        has_scene: bool,
        rates: [f64; 2],
        frame: u64,
        woken: bool,
    ) {
        self.drawn += 1;
        if !woken || self.drawn >= self.script.frames {
            ctx.request_repaint();
        }
        if self.drawn < self.script.frames {
            return;
        }
        let Some(path) = self.script.screenshot.clone() else {
            ctx.send_viewport_cmd(egui::ViewportCommand::Close);
            return;
        };
        if !self.requested {
            self.requested = true;
            let slot = Arc::clone(&self.shot);
            ctx.request_screenshot(move |image| {
                if let Ok(mut s) = slot.lock() {
                    *s = Some(image);
                }
            });
            return;
        }
        let Some(image) = self.shot.lock().ok().and_then(|mut s| s.take()) else {
            return;
        };
        let region = view.map(|r| {
            let ppp = ctx.pixels_per_point();
            [r.min.x, r.min.y, r.max.x, r.max.y].map(|v| (v * ppp).round().max(0.0) as usize)
        });
        let result = save_and_check(&image, &path, region, has_scene);
        let [ui_fps, sim_fps] = rates;
        let seconds = self.started.elapsed().as_secs_f64();
        let memory =
            crate::solver::memory::resident().map_or_else(String::new, |m| format!("; memory {m}"));
        // A closed standard error must not end the run with a panic.
        let _ = match &result {
            Ok(n) => writeln!(
                std::io::stderr(),
                "screenshot {}: {n} pixels drawn in the 3D view (UI {ui_fps:.0} fps, simulation {sim_fps:.1} fps; frame {frame} after {seconds:.1} s{memory})",
                path.display()
            ),
            Err(e) => writeln!(std::io::stderr(), "screenshot {}: {e}", path.display()),
        };
        if let Ok(mut o) = self.script.outcome.lock() {
            *o = result.map(|_| ());
        }
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
    check_not_blank([w, h], &rgb, region)
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
    let differs = |p: [u8; 3]| p.iter().zip(CLEAR).any(|(&a, b)| a.abs_diff(b) > 3);
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

#[cfg(test)]
mod tests {
    use super::*;

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
