//! Command-line interface: the subcommands of the `softbody` binary.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Softbody Studio: author soft bodies from OBJ meshes.
#[derive(Debug, Parser)]
#[command(name = "softbody", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// A preset (`.toml`) or an OBJ to open without a subcommand: in the
    /// editor when a display is available, else in the terminal UI.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Threads for the solver's parallel work: the local step of tet models
    /// (spring models project on one, which measures faster) and the
    /// single-precision global solve of large models, which splits in two.
    /// Default (or 0): one per core; at most 1,024. The frames depend on
    /// this count only: more than the CPUs run on the CPUs, the work split
    /// as asked (in at most 64 parts).
    #[arg(long, allow_negative_numbers = true, global = true, value_parser = count_in::<0, 1024>)]
    pub threads: Option<usize>,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Open the editor window on a preset or an OBJ: 3D view, material and
    /// simulation panels, energy graphs (the default without a subcommand
    /// when a display is available).
    #[cfg(feature = "gui")]
    Gui {
        /// A preset (`.toml`) or an OBJ file (default:
        /// presets/hanging_cloth.toml if it exists, else the built-in
        /// hanging cloth).
        file: Option<PathBuf>,
        /// Play this many UI frames (1 to 1,000,000), then quit (with
        /// --screenshot: after saving it).
        #[arg(long, allow_negative_numbers = true, value_parser = count_in::<1, 1_000_000>)]
        frames: Option<usize>,
        /// Save a PNG (`.png`, in an existing directory) of the whole window
        /// after --frames (default 30) frames and quit; fails if the 3D
        /// view is blank or its surface did not move with the simulation.
        #[arg(long)]
        screenshot: Option<PathBuf>,
        /// Overlays to turn on, comma-separated.
        #[arg(long, value_delimiter = ',')]
        overlay: Vec<softbody::gui::overlay::OverlayName>,
    },
    /// Run a preset in the terminal UI: live preview, energy charts, weight
    /// editing, pins, undo, save (the default without a subcommand when
    /// stdout is a terminal; `?` lists the keys).
    #[cfg(feature = "tui")]
    Tui {
        /// A preset (`.toml`) or a mesh (`.obj`, a new preset built from
        /// it); default: presets/hanging_cloth.toml if it exists, else the
        /// built-in hanging cloth.
        preset: Option<PathBuf>,
    },
    /// Import and validate a mesh, and report what was found and repaired;
    /// or load, check and build a preset and report its model.
    Inspect {
        /// An OBJ file, or a preset (`.toml`).
        file: PathBuf,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Weld vertices closer than this fraction of the bounding-box
        /// diagonal, at most 0.1 (default 1e-6; OBJ files only: presets
        /// weld with the default).
        #[arg(long, allow_negative_numbers = true, value_parser = parse_weld)]
        weld: Option<f64>,
    },
    /// Fill a closed (or nearly closed) surface with tetrahedra and report
    /// their quality.
    Tetrahedralize {
        /// An OBJ file.
        file: PathBuf,
        /// Write the tet mesh here: `.node` (with `.ele` beside it), `.msh`
        /// (Gmsh 4.1 ASCII) or `.vtk` (legacy VTK, for ParaView).
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Lattice cells across the longest side of the bounding box.
        #[arg(long, allow_negative_numbers = true, default_value_t = softbody::model::tetra::TetraOptions::DEFAULT_RESOLUTION, value_parser = count_in::<{ *softbody::model::tetra::TetraOptions::RESOLUTION_RANGE.start() }, { *softbody::model::tetra::TetraOptions::RESOLUTION_RANGE.end() }>)]
        resolution: usize,
        /// Print the quality report as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Simulate a preset and write an OBJ per frame (an OBJ sequence for
    /// Blender or Houdini), `{preset}_energy.csv` and `{preset}_summary.json`.
    Bake {
        /// A preset (`.toml`).
        preset: PathBuf,
        /// Frames to simulate after the rest pose (frame 0); at most
        /// 1,000,000.
        #[arg(long, allow_negative_numbers = true, default_value_t = 240, value_parser = count_in::<0, 1_000_000>)]
        frames: usize,
        /// Output directory (created if missing). An earlier bake's frames of
        /// the same preset there (`{preset}_NNNN.obj`) and its summary are
        /// removed first, and its energy CSV replaced; a file of those names
        /// that no bake wrote stops the bake before anything is written.
        #[arg(long)]
        out: PathBuf,
        /// Write the OBJ of every k-th frame only, and of the last (0: no OBJ, energies only).
        #[arg(long, allow_negative_numbers = true, default_value_t = 1, value_parser = count_in::<0, 1_000_000>)]
        every: usize,
    },
    /// Time the standard scenes (release builds only give meaningful numbers).
    Bench {
        /// Run only this scene (cloth30, cloth60, cloth100, cloth150, tet12,
        /// tet22, jelly16, or any clothN, tetN or jellyN).
        #[arg(long)]
        scene: Option<String>,
        /// Frames to measure after warm-up (1 to 1,000,000).
        #[arg(long, allow_negative_numbers = true, default_value_t = 240, value_parser = count_in::<1, 1_000_000>, conflicts_with = "accuracy")]
        frames: usize,
        /// Warm-up frames before measuring (at most 1,000,000).
        #[arg(long, allow_negative_numbers = true, default_value_t = 30, value_parser = count_in::<0, 1_000_000>, conflicts_with = "accuracy")]
        warmup: usize,
        /// Print one JSON object per scene and line.
        #[arg(long)]
        json: bool,
        /// Measure accuracy instead: for the n = 60 cloth and the 10k-node
        /// tet cube (or --scene), the time per frame to reach 1e-3 and 1e-5
        /// relative error against Newton with each acceleration method,
        /// from the inertial and from the extrapolated initial guess.
        #[arg(long)]
        accuracy: bool,
        /// The acceleration of the timed scenes: plain, chebyshev or
        /// anderson (default; --accuracy runs all three).
        #[arg(long, value_parser = parse_acceleration, conflicts_with = "accuracy")]
        acceleration: Option<softbody::solver::Acceleration>,
        /// The precision of the global solve: auto (default: mixed when the
        /// factor has 100,000 entries or more, relaxed when a cloth's factor
        /// without its bending springs has 500,000), double, mixed, or relaxed
        /// (single precision, bending springs left out of the factor and
        /// corrected for, when their weight allows).
        #[arg(long, value_parser = parse_precision, default_value = "auto", conflicts_with = "accuracy")]
        precision: softbody::solver::Precision,
        // (Their defaults are applied, and their want of --accuracy
        // checked, in main: clap takes --accuracy's implicit `false` for its
        // presence, and `requires` let them through silently.)
        /// With --accuracy: the steps measured (medians are reported)
        /// [default: 5].
        #[arg(long, allow_negative_numbers = true, value_parser = count_in::<1, 1000>)]
        steps: Option<usize>,
        /// With --accuracy: frames of the reference motion between the
        /// measured steps (1 to 10,000) [default: 10].
        #[arg(long, allow_negative_numbers = true, value_parser = count_in::<1, 10_000>)]
        every: Option<usize>,
        /// With --accuracy: the most iterations tried per method (at most
        /// 10,000, the most a model accepts) [default: 500].
        #[arg(long, allow_negative_numbers = true, value_parser = count_in::<1, { softbody::solver::SimParams::MAX_ITERATIONS }>)]
        max_iterations: Option<usize>,
    },
}

/// Parses a global-solve precision by name.
fn parse_precision(name: &str) -> Result<softbody::solver::Precision, String> {
    softbody::solver::Precision::from_name(name)
        .ok_or_else(|| format!("'{name}' is not one of auto, double, mixed, relaxed"))
}

/// Parses a count in `[MIN, MAX]`: a typo (`--threads 1000000`) is an
/// error, not hours of work or a failed allocation.
fn count_in<const MIN: usize, const MAX: usize>(text: &str) -> Result<usize, String> {
    use std::num::IntErrorKind::{NegOverflow, PosOverflow};
    let out_of_range = |n: &dyn std::fmt::Display| format!("{n} is not in [{MIN}, {MAX}]");
    // Read signed and wide, so that `-0` is 0 and `-5` or 2⁶⁴ reach the
    // range check.
    let n: i128 = text.parse().map_err(|e: std::num::ParseIntError| {
        if matches!(e.kind(), PosOverflow | NegOverflow) {
            out_of_range(&text)
        } else {
            format!("'{text}' is not a whole number")
        }
    })?;
    usize::try_from(n)
        .ok()
        .filter(|n| (MIN..=MAX).contains(n))
        .ok_or_else(|| out_of_range(&n))
}

/// Parses the weld tolerance: a fraction of the bounding-box diagonal in
/// `[0, 0.1]`.
fn parse_weld(text: &str) -> Result<f64, String> {
    let weld: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    if (0.0..=0.1).contains(&weld) {
        Ok(weld)
    } else {
        Err(format!(
            "{weld} is not a fraction of the bounding-box diagonal in [0, 0.1]"
        ))
    }
}

/// Parses an acceleration method by name.
fn parse_acceleration(name: &str) -> Result<softbody::solver::Acceleration, String> {
    softbody::solver::Acceleration::from_name(name)
        .ok_or_else(|| format!("'{name}' is not one of plain, chebyshev, anderson"))
}
