//! Crash recovery. While the open preset has unsaved changes, a front end
//! writes it every [`INTERVAL`] to an autosave file ([`Autosave::tick`]);
//! saving, or ending cleanly, removes it. If a run ends without that — a
//! crash, a killed process, a lost SSH session — the next start finds the
//! file ([`Autosave::recovery`]) and offers it back.
//!
//! The autosave is the preset's TOML (written atomically) beside a small
//! JSON note of the file it came from. Mesh paths relative to that file stay
//! relative (the recovered preset is put back in force on that file); an
//! untitled preset's relative paths are made absolute, since the next run
//! may start elsewhere.
//!
//! Every run writes its own slot, `autosave-{pid}-{start}-{k}.toml` and
//! `.json`, and from its first write to its end holds an advisory lock on
//! the slot's `.lock` file, so two editors or terminal UIs open at once do
//! not overwrite, offer or remove each other's changes: a start offers only
//! a slot whose lock it can take (its run has ended), the newest first, and
//! holds that lock while it offers it. The single `autosave.toml` of
//! earlier versions is such a slot too. (Where the file system has no
//! locks, every slot counts as ended, as before there were slots.)

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::fsutil::same_file;
use crate::preset::{MeshSource, Preset, PresetError};
use crate::session::{Session, SessionError, digest};

/// How often unsaved changes are written.
pub const INTERVAL: Duration = Duration::from_secs(30);

/// The environment variable that overrides [`Autosave::default_dir`].
pub const DIR_VARIABLE: &str = "SOFTBODY_AUTOSAVE_DIR";

/// The extensions of a slot's files: the preset, its note, its lock.
const PRESET: &str = "toml";
const NOTE: &str = "json";
const LOCK: &str = "lock";

/// How old a lock file without a note must be before a start removes it
/// (a crash after a save left it): far longer than a run takes between
/// creating its lock file and locking it.
const STALE_LOCK: Duration = Duration::from_secs(60);

/// Where the autosave came from.
#[derive(Debug, Serialize, Deserialize)]
struct Note {
    /// The preset's own file, if it had one.
    origin: Option<PathBuf>,
    /// When it was written, seconds since the Unix epoch.
    written_at: u64,
    /// The digest of the origin's bytes as the run last read or wrote
    /// them (none: unknown, or an autosave of an earlier version).
    #[serde(default)]
    base: Option<u64>,
}

/// The files of one run's autosave: `{dir}/{stem}.toml`, `.json`, `.lock`.
#[derive(Clone, Debug, PartialEq)]
struct Slot {
    dir: PathBuf,
    stem: String,
}

impl Slot {
    fn file(&self, extension: &str) -> PathBuf {
        self.dir.join(format!("{}.{extension}", self.stem))
    }

    /// Removes the slot's note (first: a slot is only offered with its
    /// note) and preset. Absent files are fine.
    fn remove_files(&self) {
        for extension in [NOTE, PRESET] {
            let _ = std::fs::remove_file(self.file(extension));
        }
    }

    /// Removes the whole slot, its lock file last.
    fn remove(&self) {
        self.remove_files();
        let _ = std::fs::remove_file(self.file(LOCK));
    }

    /// The lock of a slot whose run has ended, taken so another starting
    /// run does not offer it too (a slot of an earlier version gets a lock
    /// file for this); `None` while a live run holds it.
    fn claim(&self) -> Option<Option<File>> {
        let Ok(file) = File::options()
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.file(LOCK))
        else {
            // Cannot even open one: offer it, as before slots had locks.
            return Some(None);
        };
        match file.try_lock() {
            Ok(()) => Some(Some(file)),
            Err(TryLockError::WouldBlock) => None,
            // Locks unsupported here: offer it, as before slots had locks.
            Err(TryLockError::Error(_)) => Some(None),
        }
    }
}

/// A slot and the lock taken on it (if locks work here).
type Claimed = (Slot, Option<Arc<File>>);

/// A preset found in the autosave directory at start-up.
#[derive(Clone, Debug)]
pub struct Recovery {
    /// The preset with the unsaved changes.
    pub preset: Preset,
    /// The file it belongs to (`None`: untitled).
    pub origin: Option<PathBuf>,
    /// When it was written.
    pub written_at: SystemTime,
    /// What became of the origin file since the ended run last read or
    /// wrote it.
    pub origin_since: OriginSince,
    slot: Slot,
    /// The ended run's lock, held while this (or a clone) is offered.
    lock: Option<Arc<File>>,
}

/// What became of a [`Recovery`]'s origin file since the ended run last
/// read or wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OriginSince {
    /// Unchanged (or untitled, or not known).
    Unchanged,
    /// Saved with other contents (by another run): recovering replaces them
    /// when saved. (The whole preset was restored over a later save in
    /// silence.)
    Changed,
    /// Removed or moved: a save writes it again.
    Gone,
    /// No longer a preset that loads (edited elsewhere), or gone with its
    /// folder: recovered untitled, its file left as it is. (The offer said
    /// it was saved since, and the recovered session then was untitled
    /// unsaid.)
    Broken,
}

impl Recovery {
    /// The name a recovery offer shows (see [`Session::name`]).
    pub fn name(&self) -> std::borrow::Cow<'_, str> {
        crate::preset::shown_name(&self.preset.name, self.origin.as_deref())
    }

    /// What a recovery offer says of the origin file, if anything.
    pub fn caveat(&self) -> Option<&'static str> {
        match self.origin_since {
            OriginSince::Unchanged => None,
            OriginSince::Changed => Some(
                "Its file was saved since, with other changes: recovering replaces them when saved.",
            ),
            OriginSince::Gone => Some("Its file is gone: a save writes it again."),
            OriginSince::Broken => Some(
                "Its file no longer opens (edited or moved elsewhere?): recovered untitled, a \
                 save asks where, and the file stays as it is.",
            ),
        }
    }
}

impl PartialEq for Recovery {
    fn eq(&self, other: &Self) -> bool {
        (&self.preset, &self.origin, self.written_at, &self.slot)
            == (&other.preset, &other.origin, other.written_at, &other.slot)
    }
}

impl Recovery {
    /// The session to continue in: the origin file opened (else an untitled
    /// default, the preset's mesh path made to name the same file from
    /// there) with the recovered preset put in force as one undoable,
    /// unsaved change.
    ///
    /// # Errors
    /// As [`Session::apply`] when the recovered preset does not build (its
    /// mesh moved, say).
    pub fn into_session(self) -> Result<Session, SessionError> {
        let mut preset = self.preset;
        if let (OriginSince::Gone, Some(origin)) = (self.origin_since, &self.origin) {
            // Its path kept (untitled, a save offered to save beside the
            // mesh); its mesh paths are relative to it.
            let mut session = Session::new(Preset::default(), Some(origin.clone()))?;
            session.apply(crate::command::Command::Restore(Box::new(preset)))?;
            return Ok(session);
        }
        let opened = self.origin.as_deref().and_then(|path| {
            Session::open(path)
                .inspect_err(|_| {
                    // A relative mesh path resolved against the working
                    // directory found another mesh of that name, or none.
                    Session::rebase_to_untitled(&mut preset, path);
                })
                .ok()
        });
        let mut session = match opened {
            Some(session) => session,
            // Untitled: the document its preset was started as, which undo
            // goes back to (it went to the hanging cloth, unchanged, and a
            // quit then asked nothing and dropped the autosave of an OBJ's
            // work).
            None => Session::new(started_as(&preset), None)?,
        };
        session.apply(crate::command::Command::Restore(Box::new(preset)))?;
        Ok(session)
    }

    /// Discards this: removes the ended run's slot.
    pub fn decline(self) {
        self.slot.remove();
    }

    /// Recovers this: the session to continue in (see
    /// [`Recovery::into_session`]), written at once to `autosave`'s slot
    /// (this run's); the ended run's slot, kept locked meanwhile, is
    /// removed once that write succeeds (if it fails, by the first that
    /// does, or when the changes are saved).
    ///
    /// # Errors
    /// As [`Recovery::into_session`] (the ended run's slot stays). A failed
    /// write is not one: the next [`Autosave::tick`] retries and reports it.
    pub fn resume(self, autosave: Option<&mut Autosave>) -> Result<Session, SessionError> {
        let ended = (self.slot.clone(), self.lock.clone());
        let session = self.into_session()?;
        take_over(autosave, ended, &session);
        Ok(session)
    }

    /// [`Recovery::resume`] with the session built on a thread of its own
    /// (the editor's: a large model's build and factorisation took seconds,
    /// in which its window froze); [`Resuming::finish`] takes it in.
    pub fn resume_in_background(self) -> Resuming {
        let ended = (self.slot.clone(), self.lock.clone());
        Resuming {
            thread: std::thread::spawn(move || self.into_session()),
            ended,
        }
    }
}

/// Hands the ended run's slot `ended` over to `autosave` (this run's),
/// writing `session`, the recovered one, to it at once (see
/// [`Recovery::resume`]).
fn take_over(autosave: Option<&mut Autosave>, ended: Claimed, session: &Session) {
    if let Some(autosave) = autosave {
        autosave.ended = Some(ended);
        // An error leaves `last` unset: the next tick writes again.
        let _ = autosave.write(session);
    }
}

/// A recovery building its session in the background
/// ([`Recovery::resume_in_background`]).
#[derive(Debug)]
pub struct Resuming {
    thread: std::thread::JoinHandle<Result<Session, SessionError>>,
    /// The ended run's slot, locked until the session is in.
    ended: Claimed,
}

impl Resuming {
    /// Whether the session is built.
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Waits for the session and takes it over as [`Recovery::resume`]
    /// does.
    ///
    /// # Errors
    /// As [`Recovery::resume`], said in words, or that the build panicked
    /// (the ended run's slot stays either way).
    pub fn finish(self, autosave: Option<&mut Autosave>) -> Result<Session, String> {
        let session = match self.thread.join() {
            Ok(built) => built.map_err(|e| e.to_string())?,
            Err(_) => return Err("building the recovered session failed (a bug)".to_owned()),
        };
        take_over(autosave, self.ended, &session);
        Ok(session)
    }
}

/// The untitled document `preset` was started as: its OBJ opened, else
/// the default preset.
fn started_as(preset: &Preset) -> Preset {
    match &preset.mesh {
        MeshSource::Obj(path) => Preset::for_obj(path),
        _ => Preset::default(),
    }
}

/// The autosave of one front end's session.
#[derive(Debug)]
pub struct Autosave {
    slot: Slot,
    interval: Duration,
    last: Option<Instant>,
    /// The slot's lock, held from the first write to the end of the run.
    lock: Option<File>,
    /// Whether the slot's preset and note are on disk.
    written: bool,
    /// A recovered run's slot, removed after this run's next write.
    ended: Option<Claimed>,
    /// The file this run was started on, whose autosaves alone it offers
    /// ([`Autosave::opening`]); none: any.
    opened: Option<PathBuf>,
}

impl Autosave {
    /// Autosaves into a slot of its own in `dir` (created when first
    /// written) every `interval`.
    pub fn new(dir: PathBuf, interval: Duration) -> Self {
        static MADE: AtomicUsize = AtomicUsize::new(0);
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let k = MADE.fetch_add(1, Ordering::Relaxed);
        Self {
            slot: Slot {
                dir,
                stem: format!("autosave-{}-{started}-{k}", std::process::id()),
            },
            interval,
            last: None,
            lock: None,
            written: false,
            ended: None,
            opened: None,
        }
    }

    /// This autosave for a run started on `file` (a preset or an OBJ named
    /// on the command line): [`Autosave::recovery`] offers only the changes
    /// an ended run left to that file (a preset's, or an untitled one's
    /// built from that OBJ). Another document's are for a start that names
    /// it, or names none: `softbody tui spot.obj` offered the cotton preset's
    /// changes, and recovering them replaced the cow.
    #[must_use]
    pub fn opening(mut self, file: Option<&Path>) -> Self {
        self.opened = file.map(Path::to_owned);
        self
    }

    /// `$SOFTBODY_AUTOSAVE_DIR`, else `$XDG_STATE_HOME/softbody`, else
    /// `~/.local/state/softbody`, else the temporary directory's `softbody`.
    pub fn default_dir() -> PathBuf {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        var(DIR_VARIABLE)
            .or_else(|| var("XDG_STATE_HOME").map(|d| d.join("softbody")))
            .or_else(|| var("HOME").map(|h| h.join(".local/state/softbody")))
            .unwrap_or_else(|| std::env::temp_dir().join("softbody"))
    }

    /// The directory autosaves go to.
    pub fn dir(&self) -> &Path {
        &self.slot.dir
    }

    /// Called every UI frame: writes the preset when it has unsaved changes
    /// and the interval has passed since the last write; removes the
    /// autosave once nothing is unsaved. Returns whether it wrote.
    ///
    /// # Errors
    /// The write's error (the front end reports it; the next tick retries).
    pub fn tick(&mut self, session: &Session) -> Result<bool, PresetError> {
        if !session.is_dirty() {
            if self.written || self.ended.is_some() {
                self.clear();
            }
            return Ok(false);
        }
        let due = self.last.is_none_or(|t| t.elapsed() >= self.interval);
        if !due {
            return Ok(false);
        }
        self.last = Some(Instant::now());
        self.write(session)?;
        Ok(true)
    }

    /// Writes the session's preset now.
    ///
    /// # Errors
    /// If the directory cannot be made or a file cannot be written.
    pub fn write(&mut self, session: &Session) -> Result<(), PresetError> {
        let preset_path = self.slot.file(PRESET);
        let io = |e: std::io::Error| {
            PresetError::new(
                &preset_path,
                crate::preset::PresetErrorKind::Write(e.to_string()),
            )
        };
        if self.lock.is_none() {
            std::fs::create_dir_all(&self.slot.dir).map_err(io)?;
            let lock = File::create(self.slot.file(LOCK)).map_err(io)?;
            // Nobody else takes a fresh lock file without a note (see
            // STALE_LOCK). Where locks are unsupported, another start may
            // offer this slot while it runs, as before slots had locks.
            let _ = lock.try_lock();
            self.lock = Some(lock);
        }
        let mut preset = session.preset().clone();
        if session.path().is_none() {
            absolutise(&mut preset);
        }
        preset.save(&preset_path)?;
        let note = Note {
            origin: session
                .path()
                .map(|p| p.canonicalize().unwrap_or_else(|_| p.to_owned())),
            written_at: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            base: session.on_disk(),
        };
        let json = serde_json::to_vec_pretty(&note).map_err(|e| io(e.into()))?;
        crate::fsutil::write_atomically(&self.slot.file(NOTE), |out| {
            std::io::Write::write_all(out, &json)
        })
        .map_err(io)?;
        self.written = true;
        if let Some((ended, _lock)) = self.ended.take() {
            ended.remove();
        }
        Ok(())
    }

    /// Removes this run's autosave (after a save or a clean exit), and a
    /// recovered run's slot not yet removed. The lock file stays, locked,
    /// until the run ends.
    pub fn clear(&mut self) {
        self.slot.remove_files();
        self.written = false;
        self.last = None;
        if let Some((ended, _lock)) = self.ended.take() {
            ended.remove();
        }
    }

    /// The newest autosave an ended run left, if any still loads (slots
    /// of runs still open are not offered; with [`Autosave::opening`], only
    /// that file's). Answer it with
    /// [`Recovery::resume`] or [`Recovery::decline`]; dropped unanswered,
    /// it stays for the next start.
    pub fn recovery(&self) -> Option<Recovery> {
        let entries = std::fs::read_dir(&self.slot.dir).ok()?;
        let mut found: Option<Recovery> = None;
        for entry in entries.flatten() {
            let path = entry.path();
            let (Some(stem), Some(extension)) = (
                path.file_stem().and_then(|s| s.to_str()),
                path.extension().and_then(|e| e.to_str()),
            ) else {
                continue;
            };
            if extension == LOCK {
                remove_if_stale(&path);
            }
            if extension != NOTE {
                continue;
            }
            let slot = Slot {
                dir: self.slot.dir.clone(),
                stem: stem.to_owned(),
            };
            if slot == self.slot || !stem.starts_with("autosave") {
                continue;
            }
            let newer = |note: &Note| found.as_ref().is_none_or(|r| r.written_at < at(note));
            let Some(note) = std::fs::read(&path)
                .ok()
                .and_then(|bytes| serde_json::from_slice::<Note>(&bytes).ok())
                .filter(newer)
            else {
                continue;
            };
            let Some(lock) = slot.claim() else {
                continue;
            };
            let Ok(preset) = Preset::load(&slot.file(PRESET)) else {
                continue;
            };
            if let Some(opened) = &self.opened {
                let of_it = match (&note.origin, &preset.mesh) {
                    (Some(origin), _) => same_file(origin, opened),
                    (None, MeshSource::Obj(mesh)) => same_file(mesh, opened),
                    (None, _) => false,
                };
                if !of_it {
                    continue;
                }
            }
            let origin_since = match &note.origin {
                // (Its folder gone too, a save could not write it again:
                // recovered untitled, as one that no longer opens.)
                Some(origin) if !origin.exists() => {
                    if origin.parent().is_some_and(Path::is_dir) {
                        OriginSince::Gone
                    } else {
                        OriginSince::Broken
                    }
                }
                Some(origin) if note.base.is_some_and(|b| digest(origin) != Some(b)) => {
                    if Preset::load(origin).is_ok() {
                        OriginSince::Changed
                    } else {
                        OriginSince::Broken
                    }
                }
                _ => OriginSince::Unchanged,
            };
            found = Some(Recovery {
                preset,
                written_at: at(&note),
                origin_since,
                origin: note.origin,
                slot,
                lock: lock.map(Arc::new),
            });
        }
        found
    }
}

impl Drop for Autosave {
    /// The run ends: its lock file goes unless it guards a written slot
    /// (unsaved changes left for the next start).
    fn drop(&mut self) {
        if self.lock.is_some() && !self.written {
            let _ = std::fs::remove_file(self.slot.file(LOCK));
        }
    }
}

/// Removes the lock file at `path` if no slot note is beside it, nobody
/// holds it, and it is older than [`STALE_LOCK`].
fn remove_if_stale(path: &Path) {
    let old = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age > STALE_LOCK);
    if old
        && !path.with_extension(NOTE).exists()
        && let Ok(file) = File::options().write(true).open(path)
        && file.try_lock().is_ok()
    {
        let _ = std::fs::remove_file(path);
    }
}

/// When `note` was written.
fn at(note: &Note) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(note.written_at)
}

/// Makes the preset's relative mesh path absolute (from the working
/// directory).
fn absolutise(preset: &mut Preset) {
    if let MeshSource::Obj(path) | MeshSource::TetFile(path) = &mut preset.mesh
        && path.is_relative()
        && let Ok(cwd) = std::env::current_dir()
    {
        *path = cwd.join(&*path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Command, WeightKind};

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("softbody-autosave-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// A new test directory for `name`, its autosave directory in it, and
    /// the default preset saved in it as `work/cloth.toml`.
    fn saved_preset(name: &str) -> (PathBuf, PathBuf, PathBuf) {
        let dir = temp_dir(name);
        let preset_file = dir.join("work").join("cloth.toml");
        std::fs::create_dir_all(preset_file.parent().unwrap()).unwrap();
        Preset::default().save(&preset_file).unwrap();
        (dir.clone(), dir.join("state"), preset_file)
    }

    /// The slots' preset files in `dir`.
    fn presets_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".toml"))
            .collect();
        names.sort();
        names
    }

    /// An offer says when the file was saved since with other changes
    /// (another run's save, which recovering replaces: QA lost an edit so)
    /// and when it is gone; recovered then, the session keeps its path
    /// (it offered to save beside the mesh) and a save writes it again.
    #[test]
    fn an_offer_says_what_became_of_the_file_since() {
        let (dir, state, preset_file) = saved_preset("since");
        let ended_with_change = || {
            let mut session = Session::open(&preset_file).unwrap();
            session
                .apply(Command::SetWeight(WeightKind::Bending, 3.5))
                .unwrap();
            let mut autosave = Autosave::new(state.clone(), INTERVAL);
            assert!(autosave.tick(&session).unwrap());
            // Ended without a clean exit: its slot stays.
            drop(autosave);
        };
        ended_with_change();
        let mut other = Session::open(&preset_file).unwrap();
        other
            .apply(Command::SetWeight(WeightKind::Shear, 7.5))
            .unwrap();
        other.apply(Command::Save(None)).unwrap();
        let recovery = Autosave::new(state.clone(), INTERVAL).recovery().unwrap();
        assert_eq!(recovery.origin_since, OriginSince::Changed);
        assert!(recovery.caveat().unwrap().contains("saved since"));
        recovery.decline();

        // A file that no longer loads is said to, and stays as it is.
        ended_with_change();
        let good = std::fs::read_to_string(&preset_file).unwrap();
        std::fs::write(&preset_file, "version = 1\n[mesh\n").unwrap();
        let recovery = Autosave::new(state.clone(), INTERVAL).recovery().unwrap();
        assert_eq!(recovery.origin_since, OriginSince::Broken);
        assert!(recovery.caveat().unwrap().contains("no longer opens"));
        let recovered = recovery.into_session().unwrap();
        assert_eq!(recovered.path(), None);
        assert_eq!(recovered.preset().material.weights.bending, 3.5);
        drop(recovered);
        std::fs::write(&preset_file, good).unwrap();
        let recovery = Autosave::new(state.clone(), INTERVAL).recovery().unwrap();
        recovery.decline();

        ended_with_change();
        std::fs::remove_file(&preset_file).unwrap();
        let recovery = Autosave::new(state.clone(), INTERVAL).recovery().unwrap();
        assert_eq!(recovery.origin_since, OriginSince::Gone);
        assert!(recovery.caveat().unwrap().contains("gone"));
        let mut recovered = recovery.into_session().unwrap();
        assert_eq!(recovered.path(), Some(preset_file.as_path()));
        assert!(recovered.is_dirty());
        recovered.apply(Command::Save(None)).unwrap();
        let saved = Preset::load(&preset_file).unwrap();
        assert_eq!(saved.material.weights.bending, 3.5);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unsaved_changes_are_written_on_the_interval_and_cleared_when_saved() {
        let (dir, state, preset_file) = saved_preset("cycle");
        let mut session = Session::open(&preset_file).unwrap();
        // An hour, then none: with a short interval, a write and its fsyncs
        // on a loaded host could outlast it (a test of wall time).
        let mut autosave = Autosave::new(state.clone(), Duration::from_secs(3600));
        // Nothing unsaved: nothing written.
        assert!(!autosave.tick(&session).unwrap());
        assert!(Autosave::new(state.clone(), INTERVAL).recovery().is_none());
        session
            .apply(Command::SetWeight(WeightKind::Bending, 3.5))
            .unwrap();
        assert!(autosave.tick(&session).unwrap());
        // Within the interval: not again.
        session
            .apply(Command::SetWeight(WeightKind::Bending, 4.5))
            .unwrap();
        assert!(!autosave.tick(&session).unwrap());
        autosave.interval = Duration::ZERO;
        assert!(autosave.tick(&session).unwrap());
        // Not offered to another run while this one is open...
        let mut next = Autosave::new(state.clone(), Duration::from_millis(50));
        assert!(next.recovery().is_none());
        // ... but once it has ended without a clean exit.
        drop(autosave);
        let recovery = next.recovery().expect("an autosave");
        assert_eq!(recovery.preset, *session.preset());
        assert_eq!(recovery.origin, Some(preset_file.canonicalize().unwrap()));
        assert_eq!(recovery.origin_since, OriginSince::Unchanged);
        assert_eq!(recovery.caveat(), None);
        // The recovered session is the file with the change in force,
        // unsaved, and undo goes back to the file's preset; it is in the
        // recovering run's slot at once, the ended run's slot gone.
        let ended = presets_in(&state);
        let mut recovered = recovery.resume(Some(&mut next)).unwrap();
        assert_eq!(recovered.preset(), session.preset());
        assert!(recovered.is_dirty());
        let now = presets_in(&state);
        assert_eq!(now.len(), 1);
        assert_ne!(now, ended);
        recovered.apply(Command::Undo).unwrap();
        assert_eq!(recovered.preset(), &Preset::default());
        // Saving makes the autosave go on the next tick.
        recovered.apply(Command::Save(None)).unwrap();
        assert!(!next.tick(&recovered).unwrap());
        assert!(presets_in(&state).is_empty());
        drop(next);
        assert!(Autosave::new(state, INTERVAL).recovery().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_untitled_preset_is_recovered_with_absolute_mesh_paths() {
        let dir = temp_dir("untitled");
        let obj = Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes/box.obj");
        let relative = pathdiff(&obj);
        let mut session = Session::new(Preset::for_obj(&relative), None).unwrap();
        session.apply(Command::SetDensity(0.3)).unwrap();
        let mut autosave = Autosave::new(dir.clone(), INTERVAL);
        assert!(autosave.tick(&session).unwrap());
        drop(autosave);
        let next = Autosave::new(dir.clone(), INTERVAL);
        let recovery = next.recovery().unwrap();
        assert_eq!(recovery.origin, None);
        let MeshSource::Obj(path) = &recovery.preset.mesh else {
            panic!("an OBJ preset")
        };
        assert!(path.is_absolute(), "{}", path.display());
        let path = path.clone();
        let mut recovered = recovery.into_session().unwrap();
        assert!(recovered.is_dirty());
        assert_eq!(recovered.preset().material.density, 0.3);
        assert_eq!(
            recovered.model().vertex_count(),
            session.model().vertex_count()
        );
        // Undone: the OBJ as opened, not the hanging cloth.
        recovered.apply(Command::Undo).unwrap();
        assert_eq!(recovered.preset(), &Preset::for_obj(&path));
        assert_eq!(
            recovered.model().vertex_count(),
            session.model().vertex_count()
        );
        // Declined: gone.
        next.recovery().unwrap().decline();
        assert!(next.recovery().is_none());
        assert!(presets_in(&dir).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A preset whose file no longer opens (a syntax error since) is
    /// recovered untitled with its mesh path still naming its mesh, not one
    /// of the same relative name from the working directory.
    #[test]
    fn a_preset_whose_file_broke_keeps_its_mesh() {
        let dir = temp_dir("broken-origin");
        std::fs::create_dir_all(dir.join("proj/p")).unwrap();
        std::fs::create_dir_all(dir.join("proj/m")).unwrap();
        let obj = dir.join("proj/m/box.obj");
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes/box.obj"),
            &obj,
        )
        .unwrap();
        let file = dir.join("proj/p/box.toml");
        Preset::for_obj(Path::new("../m/box.obj"))
            .save(&file)
            .unwrap();
        let mut session = Session::open(&file).unwrap();
        session.apply(Command::SetDensity(0.3)).unwrap();
        let state = dir.join("state");
        let mut autosave = Autosave::new(state.clone(), INTERVAL);
        assert!(autosave.tick(&session).unwrap());
        drop(autosave);
        std::fs::write(&file, "version = 1\n[mesh\n").unwrap();
        let recovery = Autosave::new(state, INTERVAL).recovery().unwrap();
        let recovered = recovery.into_session().unwrap();
        assert_eq!(recovered.path(), None);
        let MeshSource::Obj(mesh) = &recovered.preset().mesh else {
            panic!("an OBJ preset")
        };
        assert_eq!(mesh.canonicalize().unwrap(), obj.canonicalize().unwrap());
        assert_eq!(recovered.preset().material.density, 0.3);
        assert_eq!(
            recovered.model().vertex_count(),
            session.model().vertex_count()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Two front ends open at once: neither offers, overwrites or removes
    /// the other's unsaved changes; a start offers the newest slot of the
    /// runs that have ended, an earlier version's single autosave included.
    #[test]
    fn runs_open_at_once_keep_their_own_autosaves() {
        let dir = temp_dir("concurrent");
        let edit = |density: f64| {
            let mut session = Session::new(Preset::default(), None).unwrap();
            session.apply(Command::SetDensity(density)).unwrap();
            session
        };
        let (one, two) = (edit(0.25), edit(0.5));
        let mut first = Autosave::new(dir.clone(), INTERVAL);
        let mut second = Autosave::new(dir.clone(), INTERVAL);
        assert!(first.tick(&one).unwrap() && second.tick(&two).unwrap());
        assert_eq!(presets_in(&dir).len(), 2);
        assert!(first.recovery().is_none() && second.recovery().is_none());
        // The first saves or exits cleanly: the second's changes stay.
        first.clear();
        assert_eq!(presets_in(&dir).len(), 1);
        drop(first);
        // An earlier version's autosave, older than the second run's.
        let mut legacy = edit(0.75).preset().clone();
        legacy.name = "legacy".into();
        legacy.save(&dir.join("autosave.toml")).unwrap();
        std::fs::write(
            dir.join("autosave.json"),
            r#"{"origin": null, "written_at": 1000}"#,
        )
        .unwrap();
        let third = Autosave::new(dir.clone(), INTERVAL);
        assert!(third.recovery().is_some_and(|r| r.preset.name == "legacy"));
        // The second run ends without a clean exit: its slot is the newest.
        drop(second);
        let recovery = third.recovery().expect("two ended runs");
        assert_eq!(recovery.preset.material.density, 0.5);
        // While one start holds the offer, another does not offer it too.
        let fourth = Autosave::new(dir.clone(), INTERVAL);
        assert!(fourth.recovery().is_some_and(|r| r.preset.name == "legacy"));
        drop(recovery);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A recovery whose first write fails keeps the ended run's slot (its
    /// changes are nowhere else on disk) until a write succeeds; a run's
    /// lock file goes when the run ends with nothing unsaved, and one a
    /// crash after a save left is swept once it is old.
    #[test]
    fn an_ended_slot_goes_only_once_its_changes_are_written_again() {
        let dir = temp_dir("resume-fails");
        let mut session = Session::new(Preset::default(), None).unwrap();
        session.apply(Command::SetDensity(0.4)).unwrap();
        Autosave::new(dir.clone(), INTERVAL)
            .write(&session)
            .unwrap();
        let mut next = Autosave::new(dir.clone(), INTERVAL);
        let ended = presets_in(&dir);
        // A directory where this run's preset goes: its write fails.
        let blocker = next.slot.file(PRESET);
        std::fs::create_dir_all(&blocker).unwrap();
        let recovered = next.recovery().unwrap().resume(Some(&mut next)).unwrap();
        assert_eq!(recovered.preset().material.density, 0.4);
        assert_eq!(presets_in(&dir), ended, "the ended slot stays");
        std::fs::remove_dir(&blocker).unwrap();
        assert!(next.tick(&recovered).unwrap(), "due again at once");
        let now = presets_in(&dir);
        assert_eq!(now.len(), 1);
        assert_ne!(now, ended, "written here, the ended slot gone");
        next.clear();
        let lock = next.slot.file(LOCK);
        assert!(lock.exists(), "kept while the run lasts");
        drop(next);
        assert!(!lock.exists(), "nothing unsaved: gone with the run");
        // A crash after a save leaves a lock file without a note.
        std::fs::create_dir_all(&dir).unwrap();
        let stale = dir.join("autosave-1-2-3.lock");
        let file = File::create(&stale).unwrap();
        let scan = || Autosave::new(dir.clone(), INTERVAL).recovery();
        assert!(scan().is_none() && stale.exists(), "young: kept");
        file.set_modified(SystemTime::now() - 2 * STALE_LOCK)
            .unwrap();
        drop(file);
        assert!(scan().is_none() && !stale.exists(), "old: swept");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `path` relative to the working directory (the tests run in the
    /// crate's directory).
    fn pathdiff(path: &Path) -> PathBuf {
        let cwd = std::env::current_dir().unwrap();
        path.strip_prefix(&cwd)
            .map_or_else(|_| path.to_owned(), Path::to_owned)
    }

    /// A run started on a file offers only the changes left to that file:
    /// a preset's by its origin, an untitled one's by the OBJ it was built
    /// from; a run started on none offers any.
    #[test]
    fn a_run_on_a_file_offers_only_that_file_s_changes() {
        let dir = temp_dir("opening");
        let state = dir.join("state");
        let cloth = dir.join("cloth.toml");
        std::fs::create_dir_all(&dir).unwrap();
        Preset::default().save(&cloth).unwrap();
        let obj = Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes/box.obj");
        let other = Path::new(env!("CARGO_MANIFEST_DIR")).join("meshes/sphere.obj");
        let offered = |opened: Option<&Path>| {
            Autosave::new(state.clone(), INTERVAL)
                .opening(opened)
                .recovery()
                .map(|r| r.preset.name)
        };
        for (session, name) in [
            (Session::open(&cloth).unwrap(), "Hanging cloth"),
            (Session::new(Preset::for_obj(&obj), None).unwrap(), "box"),
        ] {
            let mut session = session;
            session.apply(Command::SetDensity(0.3)).unwrap();
            let mut autosave = Autosave::new(state.clone(), INTERVAL);
            assert!(autosave.tick(&session).unwrap());
            assert_eq!(session.preset().name, name);
        }
        // (Both runs have ended: their autosaves were dropped.)
        assert_eq!(offered(Some(&cloth)).as_deref(), Some("Hanging cloth"));
        assert_eq!(offered(Some(&pathdiff(&obj))).as_deref(), Some("box"));
        assert_eq!(offered(Some(&other)), None);
        assert_eq!(offered(Some(&dir.join("elsewhere.toml"))), None);
        assert!(offered(None).is_some());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_damaged_autosave_is_not_offered() {
        let dir = temp_dir("damaged");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("autosave.toml"), "version = 1\nname = ").unwrap();
        std::fs::write(dir.join("autosave.json"), "{}").unwrap();
        assert!(Autosave::new(dir.clone(), INTERVAL).recovery().is_none());
        // A sound note does not make the damaged preset offered either.
        let note = r#"{"origin": null, "written_at": 5}"#;
        std::fs::write(dir.join("autosave.json"), note).unwrap();
        assert!(Autosave::new(dir.clone(), INTERVAL).recovery().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
