//! Baking: simulate a built preset for a number of frames and write what it
//! did: an OBJ per frame (every `k`-th; a model built from an OBJ, springs
//! or tets, in the file's own layout: its vertices in order and its
//! polygons as written, so each frame lines up with the asset vertex for
//! vertex), `{stem}_energy.csv` (one row per frame, from the rest pose's
//! frame 0: every energy series and the solver's phase timings, empty for
//! frame 0, which took no step) and `{stem}_summary.json`: named after the
//! preset, so bakes of several presets share a directory.
//!
//! Files are named `{stem}_{frame:04}.obj`, frame 0 being the rest pose,
//! the numbered-sequence layout that Blender's OBJ-sequence importers (e.g.
//! Stop-motion-OBJ) and Houdini's `$F4` file patterns read. A bake past
//! frame 9999 pads every name to the last frame's digits (`$F5` and up), so
//! the names still sort in frame order. The OBJ text is
//! formatted and written on a second thread while the solver steps, so a bake
//! costs little more than the simulation itself.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use crate::mesh::obj::ObjState;
use crate::mesh::{SourceLayout, TexCoords, Vec3};
use crate::preset::Built;
use crate::solver::{Energies, Solver, SolverError, State, Timings, drawn_positions};

/// What to bake.
#[derive(Clone, Debug, PartialEq)]
pub struct BakeOptions {
    /// Frames to simulate after the rest pose.
    pub frames: usize,
    /// Write the OBJ of every `every`-th frame, frame 0 and the last
    /// frame; 0 writes no OBJ at all (energies only).
    pub every: usize,
    /// Output directory (created if missing).
    pub out: PathBuf,
    /// File name stem of the OBJ sequence, the energies and the summary.
    pub stem: String,
    /// The files the bake's model was read from (the preset's mesh): never
    /// removed or replaced, even where an earlier bake wrote them (a frame
    /// kept as a new rest shape, `leather_0030.obj` beside `leather.toml`).
    pub inputs: Vec<PathBuf>,
}

impl BakeOptions {
    /// `{stem}_energy.csv` in the output directory.
    pub fn energy_path(&self) -> PathBuf {
        self.out.join(format!("{}_energy.csv", self.stem))
    }

    /// `{stem}_summary.json` in the output directory.
    pub fn summary_path(&self) -> PathBuf {
        self.out.join(format!("{}_summary.json", self.stem))
    }
}

/// How a bake went: what `{stem}_summary.json` holds.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BakeSummary {
    /// The scene's name.
    pub name: String,
    /// Frames requested.
    pub frames_requested: usize,
    /// Frames simulated.
    pub frames: usize,
    /// Simulated seconds per frame (the preset's `[sim] dt`): frame `k` is
    /// at `k × dt`, as the energy CSV's `time` says.
    pub dt: f64,
    /// OBJ files written.
    pub objs_written: usize,
    /// OBJ frames of an earlier bake of the same stem removed from the
    /// output directory first (a sequence importer would play them on).
    pub earlier_objs_removed: usize,
    /// Vertices of each OBJ.
    pub obj_vertices: usize,
    /// Faces of each OBJ: the source OBJ's polygons, else the drawn
    /// surface's triangles.
    pub obj_faces: usize,
    /// Texture coordinates of each OBJ ([`TexCoords::exported`]; 0
    /// without, or when no OBJ is written).
    pub obj_texcoords: usize,
    /// Simulated vertices.
    pub sim_vertices: usize,
    /// The build's warnings about the mesh and the model
    /// ([`Built::warnings`]: an open surface filled, a size far from 1 m…).
    pub warnings: Vec<String>,
    /// Why the bake ended early, if it did (interrupted, or a blow-up).
    pub stopped: Option<String>,
    /// Wall-clock seconds of the whole bake.
    pub seconds: f64,
    /// Seconds spent in the solver's steps.
    pub solver_seconds: f64,
    /// Median milliseconds per frame in the solver.
    pub frame_ms_median: f64,
    /// Energies after the last frame.
    pub final_energies: Energies,
    /// Their total (as the energy CSV's `total`).
    pub final_total: f64,
    /// The most memory the process held, in bytes, up to the end of the
    /// bake (its high-water mark; `None` where it cannot be read).
    pub peak_resident_bytes: Option<u64>,
}

/// Progress after each frame is simulated (before it is written), for a
/// progress display.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Frames simulated so far.
    pub frame: usize,
    /// Frames requested.
    pub frames: usize,
    /// Seconds since the bake started.
    pub elapsed: f64,
    /// Seconds since its first frame started (after the set-up).
    pub stepping: f64,
}

impl Progress {
    /// Estimated seconds left at the average pace of the frames so far
    /// (the set-up, which can take longer than a frame, left out: it read
    /// 12.6 s left of a bake with about 4 s to go).
    pub fn eta(&self) -> f64 {
        if self.frame == 0 {
            return f64::NAN;
        }
        self.stepping / self.frame as f64 * (self.frames - self.frame) as f64
    }
}

/// Why a bake failed.
#[derive(Debug, thiserror::Error)]
pub enum BakeError {
    /// The solver could not be set up.
    #[error("cannot set up the solver: {0}")]
    Solver(#[from] SolverError),
    /// A file where the bake would write, which an earlier bake did not
    /// write (a mesh of the same name: `scan_0001.obj` for the preset
    /// `scan.toml`, or a person's own `scan_energy.csv`); it is left alone,
    /// and nothing is baked.
    #[error(
        "{0}: not written by an earlier bake, and this bake would replace or remove it; \
         bake into another directory (--out) or move the file"
    )]
    Foreign(PathBuf),
    /// A file the model was read from ([`BakeOptions::inputs`]) where the
    /// bake would write a frame; it is left alone, and nothing is baked.
    #[error(
        "{0}: the preset's mesh, and this bake would replace or remove it as a frame of its \
         own; bake into another directory (--out) or rename the mesh"
    )]
    Input(PathBuf),
    /// The output directory is a file, or lies below one, or a symbolic
    /// link leads nowhere on its way ([`crate::fsutil::no_directory_there`]
    /// says which: `why`); nothing is baked.
    #[error("{}: --out names no directory: {why}; bake into a directory (it is made if missing)", .out.display())]
    NotADirectory {
        /// The output directory asked for.
        out: PathBuf,
        /// What is on its way.
        why: String,
    },
    /// The output directory could not be made; nothing is baked.
    #[error("{path}: cannot make the output directory: {error}")]
    MakeDirectory {
        /// The directory.
        path: PathBuf,
        /// The I/O error (in the message).
        error: io::Error,
    },
    /// Another bake of the same preset is writing into the directory (its
    /// energy CSV is locked); nothing is baked.
    #[error(
        "{0}: another bake of this preset is writing into this directory; wait for it, \
         or bake into another directory (--out)"
    )]
    Busy(PathBuf),
    /// Writing an output file failed.
    #[error("{path}: cannot write: {error}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error (in the message, not a `source`: the error chain
        /// printed it twice).
        error: io::Error,
    },
    /// Reading the output directory, or an earlier frame's first line,
    /// failed.
    #[error("{path}: cannot read: {error}")]
    Read {
        /// The directory or file.
        path: PathBuf,
        /// The I/O error (in the message).
        error: io::Error,
    },
}

/// Bakes `built` into `options.out`, calling `progress` after every frame
/// and stopping cleanly (everything written so far intact, the summary
/// saying why) when `stop` is set or the simulation blows up. Once the
/// solver is set up, an earlier bake's OBJ frames of the same stem
/// (`{stem}_{frame:04}.obj`, known by their first line) and its summary
/// are removed from `options.out` (the frames only when this bake writes
/// OBJ files), and its energy CSV is replaced.
///
/// # Errors
/// [`BakeError::NotADirectory`] if `options.out` is a file or lies below
/// one (or a symbolic link on its way leads nowhere),
/// [`BakeError::MakeDirectory`] if it is missing and cannot be made,
/// [`BakeError::Solver`] if the model cannot be factorised,
/// [`BakeError::Foreign`] if a file named like a frame, the energy CSV or
/// the summary is there but was not written by a bake,
/// [`BakeError::Input`] if one of `options.inputs` is named like a frame,
/// [`BakeError::Write`] naming the file that could not be written,
/// [`BakeError::Read`] naming the one that could not be read.
pub fn bake(
    built: &Built,
    name: &str,
    options: &BakeOptions,
    stop: &AtomicBool,
    mut progress: impl FnMut(Progress),
) -> Result<BakeSummary, BakeError> {
    let start = Instant::now();
    let model = &built.model;
    check_out(&options.out)?;
    let summary_path = options.summary_path();
    let csv_path = options.energy_path();
    // A file it must not touch refuses it: before the set-up, which takes
    // minutes on a large model, and again after it, before the CSV is made
    // (the frames to remove are listed again under the lock below).
    let refuse_foreign = || {
        check_earlier_outputs(&csv_path, &summary_path)?;
        if options.every > 0 {
            earlier_frames(options)?;
        }
        Ok::<_, BakeError>(())
    };
    if options.out.is_dir() {
        refuse_foreign()?;
    }
    // Set up before anything is written or removed: a bake that cannot
    // start leaves the directory as it was (or does not make it).
    let mut solver = Solver::new(model, &built.params)?;
    std::fs::create_dir_all(&options.out).map_err(|error| BakeError::MakeDirectory {
        path: options.out.clone(),
        error,
    })?;
    refuse_foreign()?;
    // Held to the end: two bakes of one preset into one directory mixed
    // their frames and lost rows of each other's CSV.
    let csv_file = lock_energy_csv(&csv_path)?;
    let earlier_objs_removed = if options.every > 0 {
        let earlier = earlier_frames(options)?;
        let mut removed = 0;
        for (path, counted) in earlier {
            std::fs::remove_file(&path).map_err(write_err(&path))?;
            removed += usize::from(counted);
        }
        removed
    } else {
        0
    };
    // An earlier summary describes files this bake replaces; a bake ended
    // by a second Ctrl-C writes none.
    if let Err(e) = std::fs::remove_file(&summary_path)
        && e.kind() != io::ErrorKind::NotFound
    {
        return Err(write_err(&summary_path)(e));
    }
    let mut state = State::at_rest(model);
    let colliders = &built.params.colliders;
    let mut render = Vec::new();
    drawn_positions(model, &state.positions, colliders, &mut render);
    let layout = match &built.surface {
        // (The drawn surface is the OBJ's: its vertices, or the skin's.)
        Some(surface) if surface.positions().len() == render.len() => {
            Layout::Source(surface.source())
        }
        _ => Layout::Drawn(Kept::of(model.render_triangles(), render.len())),
    };
    let all = model.render_triangles();
    let (obj_vertices, obj_face_count) = match &layout {
        Layout::Source(source) => (source.raw.positions.len(), source.raw.polygon_count()),
        Layout::Drawn(kept) => (
            kept.vertices.as_ref().map_or(render.len(), Vec::len),
            kept.triangles_or(all).len(),
        ),
    };
    // Everything after the vertices is the same in every frame.
    let faces = match &layout {
        _ if options.every == 0 => ObjFaces::default(),
        Layout::Source(source) => source_faces(source, &options.out),
        Layout::Drawn(kept) => obj_faces(kept.triangles_or(all), built.texcoords()),
    };
    // The object the faces start in (without control characters), else
    // the preset's name.
    let object = faces
        .object
        .as_ref()
        .map_or_else(|| object_name(name), |o| o.replace(char::is_control, "_"));

    csv_file.set_len(0).map_err(write_err(&csv_path))?;
    let mut csv = BufWriter::new(csv_file);
    write_csv_header(&mut csv).map_err(write_err(&csv_path))?;

    // OBJ frames go to a writer thread through a short queue (back-pressure
    // keeps memory bounded if the disk is slower than the solver); their
    // buffers come back to be reused, so steady state allocates nothing.
    let (frames_tx, frames_rx) = mpsc::sync_channel::<(usize, Vec<Vec3>)>(8);
    let (spare_tx, spare_rx) = mpsc::channel::<Vec<Vec3>>();
    let (objs_written, write_result, summary) = std::thread::scope(|scope| {
        let text = &faces.text;
        let object = &object;
        let writer = scope.spawn(move || {
            let mut written = 0;
            let width = frame_digits(options.frames);
            for (frame, positions) in frames_rx {
                let path = options
                    .out
                    .join(format!("{}_{frame:0width$}.obj", options.stem));
                write_obj_frame(&path, name, object, frame, &positions, text)
                    .map_err(write_err(&path))?;
                written += 1;
                // The bake may be over and the receiver gone: nothing to reuse.
                let _ = spare_tx.send(positions);
            }
            Ok::<usize, BakeError>(written)
        });
        let send = |frame: usize, positions: &[Vec3]| {
            let mut buffer = spare_rx.try_recv().unwrap_or_default();
            buffer.clear();
            match &layout {
                Layout::Source(source) => source.positions_of(positions, &mut buffer),
                Layout::Drawn(Kept {
                    vertices: Some(vertices),
                    ..
                }) => buffer.extend(vertices.iter().map(|&v| positions[v as usize])),
                Layout::Drawn(_) => buffer.extend_from_slice(positions),
            }
            // In the mesh file's units, so the frames overlay it.
            if built.scale != 1.0 {
                let per_unit = built.scale.recip();
                buffer.iter_mut().for_each(|p| *p *= per_unit);
            }
            // A closed queue means the writer failed; its error is reported
            // when it is joined.
            frames_tx.send((frame, buffer)).is_ok()
        };
        // The last frame too: the sequence ends where the simulation did.
        let wants = |frame: usize| {
            options.every > 0 && (frame.is_multiple_of(options.every) || frame == options.frames)
        };
        if wants(0) {
            send(0, &render);
        }
        // Grown as frames come (a typo'd `--frames` is no allocation).
        let mut frame_ms = Vec::with_capacity(options.frames.min(1 << 16));
        let mut stopped = None;
        let mut energies = solver.energies(&state);
        let dt = built.params.dt;
        // Frame 0 too, so a plot starts from the energies the motion left.
        let mut csv_result =
            write_csv_row(&mut csv, 0, dt, &energies, None).and_then(|()| csv.flush());
        let stepping = Instant::now();
        for frame in 1..=options.frames {
            if stop.load(Ordering::Acquire) {
                stopped = Some(format!("interrupted after frame {}", frame - 1));
                break;
            }
            let t = Instant::now();
            let report = match solver.step(&mut state) {
                Ok(report) => report,
                Err(e) => {
                    stopped = Some(e.to_string());
                    break;
                }
            };
            frame_ms.push(t.elapsed().as_secs_f64() * 1e3);
            energies = report.energies;
            // Said as soon as the frame is simulated, before it is written:
            // a stop in between is one after this frame (said later, a
            // Ctrl-C just after frame 1's OBJ appeared was taken as one
            // before anything was simulated).
            progress(Progress {
                frame,
                frames: options.frames,
                elapsed: start.elapsed().as_secs_f64(),
                stepping: stepping.elapsed().as_secs_f64(),
            });
            // Flushed per frame: however the process ends, the file holds
            // every frame simulated (one short write per frame).
            csv_result = csv_result.and_then(|()| {
                write_csv_row(&mut csv, frame, dt, &energies, Some(&report.timings))?;
                csv.flush()
            });
            if wants(frame) {
                drawn_positions(model, &state.positions, colliders, &mut render);
                if !send(frame, &render) {
                    break;
                }
            }
        }
        // Stopped early, the last frame simulated ends the sequence too.
        let last = frame_ms.len();
        if stopped.is_some() && last > 0 && !wants(last) && options.every > 0 {
            drawn_positions(model, &state.positions, colliders, &mut render);
            send(last, &render);
        }
        drop(frames_tx);
        let written = writer.join().expect("the OBJ writer does not panic");
        // (A fold from +0: an empty sum is −0.)
        let solver_seconds = frame_ms.iter().fold(0.0, |sum, ms| sum + ms) / 1e3;
        let summary = BakeSummary {
            name: name.to_string(),
            frames_requested: options.frames,
            frames: frame_ms.len(),
            dt,
            objs_written: 0,
            earlier_objs_removed,
            obj_vertices,
            obj_faces: obj_face_count,
            obj_texcoords: faces.texcoords,
            sim_vertices: model.vertex_count(),
            warnings: built.warnings.clone(),
            stopped,
            seconds: 0.0,
            solver_seconds,
            frame_ms_median: median(&mut frame_ms),
            final_energies: energies,
            final_total: energies.total(),
            peak_resident_bytes: None,
        };
        (written, csv_result, summary)
    });
    let objs_written = objs_written?;
    write_result
        .and_then(|()| csv.flush())
        .map_err(write_err(&csv_path))?;
    let summary = BakeSummary {
        objs_written,
        seconds: start.elapsed().as_secs_f64(),
        peak_resident_bytes: crate::solver::memory::resident().map(|r| r.peak),
        ..summary
    };
    crate::fsutil::write_atomically(&summary_path, |w| {
        serde_json::to_writer_pretty(&mut *w, &summary).map_err(io::Error::other)?;
        w.write_all(b"\n")
    })
    .map_err(write_err(&summary_path))?;
    Ok(summary)
}

/// The digits of a bake's OBJ frame numbers: four, or the last frame's.
fn frame_digits(last: usize) -> usize {
    last.checked_ilog10().map_or(1, |d| d as usize + 1).max(4)
}

/// Checks that a bake can write into `out` (made if missing): not a file,
/// nor below one. (`create_dir_all` said "File exists", or "Not a
/// directory", after the set-up.)
///
/// # Errors
/// [`BakeError::NotADirectory`] naming the file on the way.
pub fn check_out(out: &Path) -> Result<(), BakeError> {
    match crate::fsutil::no_directory_there(out) {
        Some(why) => Err(BakeError::NotADirectory {
            out: out.to_owned(),
            why,
        }),
        None => Ok(()),
    }
}

/// The first line of every OBJ frame a bake writes begins with this.
const FRAME_HEADER: &str = "# Softbody Studio bake:";

/// The OBJ frames `{stem}_{frame:04}.obj` (four digits or more) in `out`,
/// those of an earlier bake, to remove: a shorter or sparser bake would
/// leave them after its own frames, where a sequence importer plays them.
/// Each comes with whether it counts as a frame: the hidden temporary files
/// a bake ended mid-frame (a second Ctrl-C) left,
/// `.{stem}_{frame:04}.obj.*.tmp`, are removed uncounted.
///
/// # Errors
/// [`BakeError::Foreign`] for a file named like a frame whose first line
/// is not [`FRAME_HEADER`] (the preset's own mesh, `scan_0001.obj` beside
/// `scan.toml`, used to be removed or overwritten); [`BakeError::Input`]
/// for one of `inputs` (one a bake wrote, kept as the mesh); else a read
/// error.
fn earlier_frames(options: &BakeOptions) -> Result<Vec<(PathBuf, bool)>, BakeError> {
    let (dir, stem) = (&options.out, &options.stem);
    // (By name first: a directory of long sequences holds thousands.)
    let is_input = |path: &Path| {
        (options.inputs.iter())
            .any(|i| i.file_name() == path.file_name() && crate::fsutil::same_file(i, path))
    };
    let frame_of = |name: &str| -> Option<bool> {
        let (hidden, name) = match name.strip_prefix('.') {
            Some(rest) => (true, rest),
            None => (false, name),
        };
        let rest = name.strip_prefix(stem)?.strip_prefix('_')?;
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let after = &rest[digits..];
        let whole = if hidden {
            after.starts_with(".obj.") && after.ends_with(".tmp")
        } else {
            after == ".obj"
        };
        (digits >= 4 && whole).then_some(!hidden)
    };
    let mut earlier = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_err(dir))? {
        let entry = entry.map_err(read_err(dir))?;
        let Some(counted) = entry.file_name().to_str().and_then(frame_of) else {
            continue;
        };
        let path = entry.path();
        if !entry.file_type().map_err(read_err(&path))?.is_file() {
            // A directory of that name: no frame can be written there.
            return Err(BakeError::Foreign(path));
        }
        if is_input(&path) {
            return Err(BakeError::Input(path));
        }
        let ours = !counted || written_by_a_bake(&path).map_err(read_err(&path))?;
        if !ours {
            return Err(BakeError::Foreign(path));
        }
        earlier.push((path, counted));
    }
    Ok(earlier)
}

/// Whether the file at `path` opens with [`FRAME_HEADER`].
fn written_by_a_bake(path: &Path) -> io::Result<bool> {
    opens_with(path, FRAME_HEADER.as_bytes())
}

/// Whether the file at `path` opens with `start`.
fn opens_with(path: &Path, start: &[u8]) -> io::Result<bool> {
    let mut read = Vec::with_capacity(start.len());
    io::Read::read_to_end(
        &mut io::Read::take(File::open(path)?, start.len() as u64),
        &mut read,
    )?;
    Ok(read == start)
}

/// The energy CSV at `path` (an earlier bake's, not yet emptied, or a new
/// one) under an exclusive lock, which the system releases however the
/// process ends; none where the file system has no locks.
///
/// # Errors
/// [`BakeError::Busy`] if another process holds it, [`BakeError::Write`]
/// if it cannot be opened.
fn lock_energy_csv(path: &Path) -> Result<File, BakeError> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(write_err(path))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(BakeError::Busy(path.to_owned())),
        Err(std::fs::TryLockError::Error(e)) if e.kind() == io::ErrorKind::Unsupported => Ok(file),
        Err(std::fs::TryLockError::Error(e)) => Err(write_err(path)(e)),
    }
}

/// Checks that the energy CSV and the summary a bake is about to replace,
/// where they exist, are an earlier bake's: the CSV opens with
/// [`CSV_HEADER_START`], the summary is a JSON object with a bake summary's
/// fields.
///
/// # Errors
/// [`BakeError::Foreign`] for a file that is not; else a read error.
fn check_earlier_outputs(csv: &Path, summary: &Path) -> Result<(), BakeError> {
    if csv.exists() {
        // (A directory first: read, it failed as "Is a directory", exit 1.)
        if !csv.is_file() {
            return Err(BakeError::Foreign(csv.to_owned()));
        }
        // (Empty: a bake stopped before its header; nothing to lose.)
        let empty = csv.metadata().map_err(read_err(csv))?.len() == 0;
        let ours = empty || opens_with(csv, CSV_HEADER_START.as_bytes()).map_err(read_err(csv))?;
        if !ours {
            return Err(BakeError::Foreign(csv.to_owned()));
        }
    }
    if summary.exists() {
        let ours = summary.is_file()
            && std::fs::read(summary)
                .map_err(read_err(summary))
                .map(|bytes| {
                    serde_json::from_slice::<serde_json::Value>(&bytes).is_ok_and(|v| {
                        ["frames_requested", "final_total"]
                            .iter()
                            .all(|k| v.get(k).is_some())
                    })
                })?;
        if !ours {
            return Err(BakeError::Foreign(summary.to_owned()));
        }
    }
    Ok(())
}

/// The median of `values` (sorts them); 0 for none.
fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_unstable_by(f64::total_cmp);
    values[values.len() / 2]
}

fn write_csv_header(w: &mut impl Write) -> io::Result<()> {
    write!(w, "{CSV_HEADER_START}")?;
    let names = Energies::default().series().map(|(name, _)| name);
    writeln!(w, "{},local_ms,global_ms,other_ms", names.join(","))
}

/// How every energy CSV a bake writes opens, whatever its series: how a
/// later bake knows the file for an earlier bake's (and not a person's).
const CSV_HEADER_START: &str = "frame,time,";

/// Maps a failed read of `path` to [`BakeError::Read`].
fn read_err(path: &Path) -> impl FnOnce(io::Error) -> BakeError {
    let path = path.to_owned();
    move |error| BakeError::Read { path, error }
}

/// Maps a failed write of `path` to [`BakeError::Write`].
fn write_err(path: &Path) -> impl FnOnce(io::Error) -> BakeError {
    let path = path.to_owned();
    move |error| BakeError::Write { path, error }
}

/// One row of the energy CSV, at time `frame × dt` (the state's summed time
/// drifts: 3.9999999999999907 s at frame 240 of 1/60 s); the timing fields
/// are left empty without `timings` (frame 0, which took no step), and
/// given to the nanosecond. Numbers are in shortest round-trip form, with an exponent below 1e-4 and from
/// 1e16 (`{:?}`: a kinetic energy of 6e-30 J at rest is not 30 zeros).
fn write_csv_row(
    w: &mut impl Write,
    frame: usize,
    dt: f64,
    energies: &Energies,
    timings: Option<&Timings>,
) -> io::Result<()> {
    write!(w, "{frame},{:?}", frame as f64 * dt)?;
    for (_, value) in energies.series() {
        write!(w, ",{value:?}")?;
    }
    match timings {
        Some(t) => {
            // To the nanosecond: the clock's sums in milliseconds read
            // `0.26155900000000004`.
            let ms = |v: f64| (v * 1e6).round() / 1e6;
            let [local, global, other] = [t.local_ms, t.global_ms, t.other_ms].map(ms);
            writeln!(w, ",{local:?},{global:?},{other:?}")
        }
        None => writeln!(w, ",,,"),
    }
}

/// What follows the vertices in every frame's OBJ.
#[derive(Default)]
struct ObjFaces {
    /// The `vt` lines, `s 1` and the triangle `f` lines.
    text: String,
    /// The `vt` lines among them.
    texcoords: usize,
    /// The object the faces start in, named at the top of the file (else
    /// the preset's name is).
    object: Option<String>,
}

/// The `vt` and triangle `f` lines of every frame's OBJ: `f v/vt` with
/// texture coordinates, else `f v`. One form for every face (an importer
/// may not take a face without among faces with): a triangle without
/// texture coordinates among triangles with gets an extra one at `(0, 0)`.
/// The faces are in smoothing group 1 (`s 1`): shaded smooth, as the
/// editor draws them (an importer such as Blender's shades faces outside
/// any group flat).
fn obj_faces(triangles: &[[u32; 3]], texcoords: Option<&TexCoords>) -> ObjFaces {
    use std::fmt::Write as _;
    let mut text = String::new();
    let coords = texcoords.map_or(&[][..], |t| &t.coords);
    // (Writing to a String cannot fail.)
    for [u, v] in coords {
        let _ = writeln!(text, "vt {u:?} {v:?}");
    }
    let blank = coords.len() as u32;
    if texcoords.is_some_and(TexCoords::some_untextured) {
        let _ = writeln!(text, "vt 0.0 0.0");
    }
    text.push_str("s 1\n");
    let corners = |t: usize| texcoords.map(|c| c.triangles[t].unwrap_or([blank; 3]));
    for (k, t) in triangles.iter().enumerate() {
        let _ = match corners(k) {
            Some(c) => writeln!(
                text,
                "f {}/{} {}/{} {}/{}",
                t[0] + 1,
                c[0] + 1,
                t[1] + 1,
                c[1] + 1,
                t[2] + 1,
                c[2] + 1
            ),
            None => writeln!(text, "f {} {} {}", t[0] + 1, t[1] + 1, t[2] + 1),
        };
    }
    ObjFaces {
        text,
        texcoords: texcoords.map_or(0, TexCoords::exported),
        object: None,
    }
}

/// How a bake's OBJ frames lay out their vertices and faces.
enum Layout<'a> {
    /// The source OBJ's own (a model built from one): its vertices in its
    /// order, its polygons and texture coordinates, so that each frame
    /// lines up with the asset vertex for vertex (the frames had the
    /// welded, triangulated surface: 3,241 vertices for the teapot's 3,644).
    Source(&'a SourceLayout),
    /// The drawn surface's (a grid, a tet file), over the vertices its
    /// triangles use.
    Drawn(Kept),
}

/// The `vt` and `f` lines of every frame's OBJ in the source's layout:
/// its texture coordinates in its order and its polygons as written, as
/// `f v/vt` where the file has texture coordinates (a polygon without them,
/// [`RawMesh::polygon_texcoords`](crate::mesh::RawMesh::polygon_texcoords),
/// or with one out of range, gets an extra one at `(0, 0)`: one form for
/// every face), else `f v`; in smoothing group 1 (see [`obj_faces`]).
/// The source's objects, groups and materials are set where they change,
/// and its material libraries named relative to `out`, the frames'
/// directory (`mtllib ../meshes/car.mtl`), so an importer finds them.
fn source_faces(source: &SourceLayout, out: &Path) -> ObjFaces {
    use std::fmt::Write as _;
    let raw = &source.raw;
    let mut text = String::new();
    for library in &raw.material_libraries {
        let _ = writeln!(text, "mtllib {}", relative_to(library, out).display());
    }
    let coords = &raw.texcoords;
    let polygons = 0..raw.polygon_count();
    let texcoords_of = |p: usize| {
        raw.polygon_texcoords(p)
            .filter(|t| t.iter().all(|&t| (t as usize) < coords.len()))
    };
    let textured = polygons.clone().any(|p| texcoords_of(p).is_some());
    let mut texcoords = 0;
    if textured {
        for [u, v] in coords {
            let _ = writeln!(text, "vt {u:?} {v:?}");
        }
        texcoords = coords.len();
        if polygons.clone().any(|p| texcoords_of(p).is_none()) {
            let _ = writeln!(text, "vt 0.0 0.0");
            texcoords += 1;
        }
    }
    text.push_str("s 1\n");
    let blank = coords.len() as u32;
    let (mut state, object) = ObjState::in_object_of(raw, 0);
    let object = object.map(str::to_owned);
    for p in polygons {
        state.write_changes(raw, p, &mut text);
        text.push('f');
        let corners = raw.polygon(p).iter().enumerate();
        for (c, v) in corners {
            let _ = match (textured, texcoords_of(p)) {
                (false, _) => write!(text, " {}", v + 1),
                (true, t) => write!(text, " {}/{}", v + 1, t.map_or(blank, |t| t[c]) + 1),
            };
        }
        text.push('\n');
    }
    ObjFaces {
        text,
        texcoords,
        object,
    }
}

/// The file `path` relative to the directory `dir`, or absolute where no
/// relative path leads there. Both folders are resolved first as the file
/// system does (`..`, symbolic links): made only absolute, `--out
/// out2/../ob9` named a library three folders up instead of one (QA). The
/// file keeps its name: a link is named, not the file it points to, beside
/// which its textures may not be.
fn relative_to(path: &Path, dir: &Path) -> PathBuf {
    let absolute = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_owned());
    let resolved = |p: &Path| p.canonicalize().unwrap_or_else(|_| absolute(p));
    let path = match (path.parent(), path.file_name()) {
        // (A bare name's folder is "", which neither resolves nor is made
        // absolute: `car.mtl` beside a preset baked from its folder was
        // written as it was, a file `out/` does not have.)
        (Some(folder), Some(name)) if folder.as_os_str().is_empty() => {
            resolved(Path::new(".")).join(name)
        }
        (Some(folder), Some(name)) => resolved(folder).join(name),
        _ => absolute(path),
    };
    pathdiff::diff_paths(&path, resolved(dir)).unwrap_or(path)
}

/// The vertices an OBJ frame keeps: those its triangles use, when some are
/// not (then the triangles renumbered over them).
struct Kept {
    /// The vertices kept, in order; `None` for all of them.
    vertices: Option<Vec<u32>>,
    /// The triangles over the kept vertices, if renumbered.
    triangles: Option<Vec<[u32; 3]>>,
}

impl Kept {
    /// The triangles over the kept vertices: renumbered, or `all` (the
    /// drawn ones) where every vertex is kept.
    fn triangles_or<'a>(&'a self, all: &'a [[u32; 3]]) -> &'a [[u32; 3]] {
        self.triangles.as_deref().unwrap_or(all)
    }

    /// The vertices of `vertices` that `triangles` use.
    fn of(triangles: &[[u32; 3]], vertices: usize) -> Self {
        let mut index = vec![u32::MAX; vertices];
        for &v in triangles.iter().flatten() {
            index[v as usize] = 0;
        }
        let mut kept = Vec::new();
        for (v, slot) in (0u32..).zip(&mut index) {
            if *slot == 0 {
                *slot = kept.len() as u32;
                kept.push(v);
            }
        }
        if kept.len() == vertices {
            return Self {
                vertices: None,
                triangles: None,
            };
        }
        let renumbered = triangles.iter().map(|t| t.map(|v| index[v as usize]));
        Self {
            triangles: Some(renumbered.collect()),
            vertices: Some(kept),
        }
    }
}

/// A preset's name as an OBJ object name: one word, without `#`, which
/// starts a comment in OBJ ("Denim Jacket #2" read back as `Denim_Jacket_`),
/// nor control characters (a NUL ended the name in importers reading C
/// strings, QA).
fn object_name(name: &str) -> String {
    name.replace(
        |c: char| c.is_whitespace() || c.is_control() || c == '#',
        "_",
    )
}

/// One frame as OBJ text: a header naming the preset `name`, an `o object`
/// statement, `v` lines, then `faces` ([`obj_faces`], [`source_faces`]).
fn write_obj_frame(
    path: &Path,
    name: &str,
    object: &str,
    frame: usize,
    positions: &[Vec3],
    faces: &str,
) -> io::Result<()> {
    // Replaced whole, so a bake stopped mid-frame (a second Ctrl-C) leaves
    // no truncated OBJ for an importer to choke on.
    crate::fsutil::write_replacing(path, |w| {
        // The name is one line: a newline in it would start OBJ statements.
        let comment = name.replace(char::is_control, " ");
        writeln!(w, "{FRAME_HEADER} {comment}, frame {frame}")?;
        writeln!(w, "o {object}")?;
        // Shortest round-trip form, with an exponent for the tiny: a skin
        // vertex at round-off from zero is `-4.4e-18`, not 18 zeros.
        for p in positions {
            writeln!(w, "v {:?} {:?} {:?}", p.x, p.y, p.z)?;
        }
        w.write_all(faces.as_bytes())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A library named by its bare name (a preset baked from its own
    /// folder) is named from the frames' folder like any other (QA: the
    /// frames said `mtllib car.mtl`, beside them, where there is none).
    #[test]
    fn a_bare_library_name_is_named_from_the_frames_folder() {
        // (Folders that exist, resolved alike under a symbolic link.)
        let out = Path::new("tests");
        let bare = relative_to(Path::new("car.mtl"), out);
        assert_eq!(bare, Path::new("../car.mtl"));
        let sub = Path::new("src/car.mtl");
        assert_eq!(relative_to(sub, out), Path::new("../src/car.mtl"));
    }

    #[test]
    fn an_object_name_is_one_word_of_printable_characters() {
        assert_eq!(object_name("Denim Jacket #2"), "Denim_Jacket__2");
        assert_eq!(object_name("a\nb\u{0}c\u{1b}d\u{7f}é"), "a_b_c_d_é");
    }

    /// The time left is the frames' pace times the frames left: a set-up
    /// of 8 s before two frames of 1 s leaves 8 s for eight more, not 40.
    #[test]
    fn the_time_left_leaves_the_set_up_out() {
        let progress = Progress {
            frame: 2,
            frames: 10,
            elapsed: 10.0,
            stepping: 2.0,
        };
        assert_eq!(progress.eta(), 8.0);
    }

    /// Every face has one form: among textured triangles, one without
    /// points at an extra `(0, 0)`; without texture coordinates, `f v`.
    #[test]
    fn every_face_has_the_same_form() {
        let triangles = [[0, 1, 2], [2, 1, 3]];
        let texcoords = TexCoords {
            coords: vec![[0.0, 0.0], [1.0, 0.0], [0.5, 1.0]],
            triangles: vec![Some([2, 1, 0]), None],
        };
        let faces = obj_faces(&triangles, Some(&texcoords));
        assert_eq!(
            faces.text,
            "vt 0.0 0.0\nvt 1.0 0.0\nvt 0.5 1.0\nvt 0.0 0.0\ns 1\nf 1/3 2/2 3/1\nf 3/4 2/4 4/4\n"
        );
        assert_eq!(faces.texcoords, 4);
        let textured = TexCoords {
            triangles: vec![Some([2, 1, 0]), Some([0, 1, 2])],
            ..texcoords
        };
        assert_eq!(obj_faces(&triangles, Some(&textured)).texcoords, 3);
        let plain = obj_faces(&triangles, None);
        assert_eq!(plain.text, "s 1\nf 1 2 3\nf 3 2 4\n");
        assert_eq!(plain.texcoords, 0);
    }

    /// The vertices no triangle uses (a tet file's interior nodes) are left
    /// out and the triangles renumbered; with every vertex used, nothing
    /// changes.
    #[test]
    fn only_the_vertices_the_faces_use_are_kept() {
        let kept = Kept::of(&[[4, 1, 3], [3, 1, 5]], 7);
        assert_eq!(kept.vertices, Some(vec![1, 3, 4, 5]));
        assert_eq!(kept.triangles, Some(vec![[2, 0, 1], [1, 0, 3]]));
        let all = Kept::of(&[[0, 1, 2], [2, 1, 3]], 4);
        assert_eq!((all.vertices, all.triangles), (None, None));
    }

    /// Frame numbers take four digits, or the last frame's: a bake of
    /// 10,001 frames named frame 10000 with one more digit than 9999, which
    /// sorts it between 0999 and 1000.
    #[test]
    fn frame_numbers_are_padded_to_the_last_frame() {
        for (last, digits) in [(0, 4), (240, 4), (9999, 4), (10_000, 5), (1_000_000, 7)] {
            assert_eq!(frame_digits(last), digits, "{last}");
        }
    }
}
