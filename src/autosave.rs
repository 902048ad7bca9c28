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

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::preset::{MeshSource, Preset, PresetError};
use crate::session::Session;

/// How often unsaved changes are written.
pub const INTERVAL: Duration = Duration::from_secs(30);

/// The environment variable that overrides [`Autosave::default_dir`].
pub const DIR_VARIABLE: &str = "SOFTBODY_AUTOSAVE_DIR";

const PRESET_FILE: &str = "autosave.toml";
const NOTE_FILE: &str = "autosave.json";

/// Where the autosave came from.
#[derive(Debug, Serialize, Deserialize)]
struct Note {
    /// The preset's own file, if it had one.
    origin: Option<PathBuf>,
    /// When it was written, seconds since the Unix epoch.
    written_at: u64,
}

/// A preset found in the autosave directory at start-up.
#[derive(Clone, Debug, PartialEq)]
pub struct Recovery {
    /// The preset with the unsaved changes.
    pub preset: Preset,
    /// The file it belongs to (`None`: untitled).
    pub origin: Option<PathBuf>,
    /// When it was written.
    pub written_at: SystemTime,
}

impl Recovery {
    /// The session to continue in: the origin file opened (else an untitled
    /// default) with the recovered preset put in force as one undoable,
    /// unsaved change.
    ///
    /// # Errors
    /// As [`Session::apply`] when the recovered preset does not build (its
    /// mesh moved, say).
    pub fn into_session(self) -> Result<Session, crate::session::SessionError> {
        let mut session = match &self.origin {
            Some(path) => Session::open(path).or_else(|_| Session::new(Preset::default(), None))?,
            None => Session::new(Preset::default(), None)?,
        };
        session.apply(crate::command::Command::Restore(Box::new(self.preset)))?;
        Ok(session)
    }
}

/// The autosave of one front end's session.
#[derive(Debug)]
pub struct Autosave {
    dir: PathBuf,
    interval: Duration,
    last: Option<Instant>,
    written: bool,
}

impl Autosave {
    /// Autosaves into `dir` (created when first written) every `interval`.
    pub fn new(dir: PathBuf, interval: Duration) -> Self {
        Self {
            dir,
            interval,
            last: None,
            written: false,
        }
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
        &self.dir
    }

    /// Called every UI frame: writes the preset when it has unsaved changes
    /// and the interval has passed since the last write; removes the
    /// autosave once nothing is unsaved. Returns whether it wrote.
    ///
    /// # Errors
    /// The write's error (the front end reports it; the next tick retries).
    pub fn tick(&mut self, session: &Session) -> Result<bool, PresetError> {
        if !session.is_dirty() {
            if self.written {
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
        let preset_path = self.dir.join(PRESET_FILE);
        let io = |e: std::io::Error| {
            PresetError::new(
                &preset_path,
                crate::preset::PresetErrorKind::Write(e.to_string()),
            )
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
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
        };
        let json = serde_json::to_vec_pretty(&note).map_err(|e| io(e.into()))?;
        crate::fsutil::write_atomically(&self.dir.join(NOTE_FILE), |out| {
            std::io::Write::write_all(out, &json)
        })
        .map_err(io)?;
        self.written = true;
        Ok(())
    }

    /// Removes the autosave (after a save, a clean exit, or once the
    /// person declined to recover it).
    pub fn clear(&mut self) {
        for file in [PRESET_FILE, NOTE_FILE] {
            // Absent already is fine.
            let _ = std::fs::remove_file(self.dir.join(file));
        }
        self.written = false;
        self.last = None;
    }

    /// The autosave a previous run left, if any and if it still loads.
    pub fn recovery(&self) -> Option<Recovery> {
        let preset = Preset::load(&self.dir.join(PRESET_FILE)).ok()?;
        let note: Note = std::fs::read(self.dir.join(NOTE_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())?;
        Some(Recovery {
            preset,
            origin: note.origin,
            written_at: UNIX_EPOCH + Duration::from_secs(note.written_at),
        })
    }
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

    #[test]
    fn unsaved_changes_are_written_on_the_interval_and_cleared_when_saved() {
        let dir = temp_dir("cycle");
        let preset_file = dir.join("work").join("cloth.toml");
        std::fs::create_dir_all(preset_file.parent().unwrap()).unwrap();
        Preset::default().save(&preset_file).unwrap();
        let mut session = Session::open(&preset_file).unwrap();
        let mut autosave = Autosave::new(dir.join("state"), Duration::from_millis(50));
        // Nothing unsaved: nothing written.
        assert!(!autosave.tick(&session).unwrap());
        assert!(autosave.recovery().is_none());
        session
            .apply(Command::SetWeight(WeightKind::Bending, 3.5))
            .unwrap();
        assert!(autosave.tick(&session).unwrap());
        // Within the interval: not again.
        session
            .apply(Command::SetWeight(WeightKind::Bending, 4.5))
            .unwrap();
        assert!(!autosave.tick(&session).unwrap());
        std::thread::sleep(Duration::from_millis(60));
        assert!(autosave.tick(&session).unwrap());
        let recovery = autosave.recovery().expect("an autosave");
        assert_eq!(recovery.preset, *session.preset());
        assert_eq!(recovery.origin, Some(preset_file.canonicalize().unwrap()));
        // The recovered session is the file with the change in force,
        // unsaved, and undo goes back to the file's preset.
        let mut recovered = recovery.into_session().unwrap();
        assert_eq!(recovered.preset(), session.preset());
        assert!(recovered.is_dirty());
        recovered.apply(Command::Undo).unwrap();
        assert_eq!(recovered.preset(), &Preset::default());
        // Saving makes the autosave go on the next tick.
        session.apply(Command::Save(None)).unwrap();
        assert!(!autosave.tick(&session).unwrap());
        assert!(autosave.recovery().is_none());
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
        let recovery = autosave.recovery().unwrap();
        assert_eq!(recovery.origin, None);
        let MeshSource::Obj(path) = &recovery.preset.mesh else {
            panic!("an OBJ preset")
        };
        assert!(path.is_absolute(), "{}", path.display());
        let recovered = recovery.into_session().unwrap();
        assert!(recovered.is_dirty());
        assert_eq!(recovered.preset().material.density, 0.3);
        assert_eq!(
            recovered.model().vertex_count(),
            session.model().vertex_count()
        );
        autosave.clear();
        assert!(autosave.recovery().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `path` relative to the working directory (the tests run in the
    /// crate's directory).
    fn pathdiff(path: &Path) -> PathBuf {
        let cwd = std::env::current_dir().unwrap();
        path.strip_prefix(&cwd)
            .map_or_else(|_| path.to_owned(), Path::to_owned)
    }

    #[test]
    fn a_damaged_autosave_is_not_offered() {
        let dir = temp_dir("damaged");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(PRESET_FILE), "version = 1\nname = ").unwrap();
        std::fs::write(dir.join(NOTE_FILE), "{}").unwrap();
        assert!(Autosave::new(dir.clone(), INTERVAL).recovery().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
