//! Commands that build or factorise a large model, applied on a copy of the
//! session ([`Session::fork`]) on a thread of their own, so the editor's
//! window and the terminal UI stay responsive meanwhile (tet100k: a new
//! system for a pin takes ~4 s, a weight ~2.6 s, a build from its mesh
//! longer). The front end takes the copy in once it is done and holds back
//! the changes asked for in between; the view shows the last frame until
//! then.

use std::thread::JoinHandle;

use crate::command::Command;
use crate::preset::{BuildKind, Preset};
use crate::session::{Applied, Session, SessionError};

/// What the session was before a command, for the editor's message and
/// clean-up of its outcome.
#[derive(Clone, Debug)]
pub struct Before {
    /// The file a [`Command::Load`] opens.
    pub loading: Option<std::path::PathBuf>,
    /// The model's vertices.
    pub vertices: usize,
    /// The build's kind.
    pub kind: BuildKind,
    /// For an undo or redo, "undid" or "redid" and the preset it starts
    /// from (to say what it changed).
    pub undoing: Option<(&'static str, Preset)>,
    /// "nothing to undo" or "nothing to redo" for an undo or redo with
    /// nothing to take back or do again.
    pub idle: Option<&'static str>,
    /// Whether the command pins or unpins (to say how many are pinned).
    pub pinning: bool,
}

impl Before {
    /// What `session` is before `command`.
    pub fn of(session: &Session, command: &Command) -> Self {
        Self {
            loading: match command {
                Command::Load(path) => Some(path.clone()),
                _ => None,
            },
            vertices: session.model().vertex_count(),
            kind: session.preset().build.kind,
            undoing: match command {
                Command::Undo => Some(("undid", session.preset().clone())),
                Command::Redo => Some(("redid", session.preset().clone())),
                _ => None,
            },
            idle: session.nothing_to_retrace(command),
            pinning: matches!(
                command,
                Command::SetPins(_) | Command::PinHard(_) | Command::PinSoft(_) | Command::Unpin(_)
            ),
        }
    }
}

/// Whether `command` runs in the background: a new document or build
/// always (its size is not known before), and every other preset change
/// when the session's model is slow to factorise (`slow`); playback, the
/// grab and saving never (they are quick, or a low-rank update).
pub fn in_background(command: &Command, slow: bool) -> bool {
    match command {
        Command::Load(_) | Command::SetBuild(_) => true,
        Command::SetWeight(..)
        | Command::SetDensity(_)
        | Command::SetParam(_)
        | Command::SetLimits(_)
        | Command::SetMaterial(_)
        | Command::PinHard(_)
        | Command::PinSoft(_)
        | Command::SetPins(_)
        | Command::Unpin(_)
        | Command::Restore(_)
        | Command::Undo
        | Command::Redo => slow,
        Command::Play
        | Command::Pause
        | Command::TogglePlay
        | Command::Step(_)
        | Command::Reset
        | Command::MoveSoftPinTarget { .. }
        | Command::Grab { .. }
        | Command::Drag { .. }
        | Command::Release
        | Command::Save(_)
        | Command::SaveAnyway(_) => false,
    }
}

/// A command applying on a copy of the session.
pub struct Work {
    thread: JoinHandle<(Session, Result<Applied, SessionError>)>,
    /// The session before it.
    pub before: Before,
    /// What it does, for the status bar ("loading x.obj").
    pub doing: String,
    /// Whether it changes the preset (not an undo or redo, which may go
    /// back to the file's, nor a file opened): a change not yet saved.
    pub changes: bool,
}

impl Work {
    /// Applies `command` to a copy of `session` on a new thread.
    pub fn spawn(session: &Session, command: Command) -> Self {
        let before = Before::of(session, &command);
        let doing = match &command {
            Command::Load(path) => format!("opening {}", path.display()),
            Command::SetBuild(_) => "building the model".to_owned(),
            _ => "factorising the system".to_owned(),
        };
        let changes = !matches!(command, Command::Load(_) | Command::Undo | Command::Redo);
        let mut copy = session.fork();
        let thread = std::thread::spawn(move || {
            let outcome = copy.apply(command);
            (copy, outcome)
        });
        Self {
            thread,
            before,
            doing,
            changes,
        }
    }

    /// Whether the command is done.
    pub fn is_finished(&self) -> bool {
        self.thread.is_finished()
    }

    /// Waits for the command and puts the session it made in `session`'s
    /// place ([`Session::replace_with`]) if it applied; returns its
    /// outcome. A command that failed left its copy as it was, so
    /// `session` stands, with what it did meanwhile (an accuracy
    /// measurement it runs goes on). If the command panicked, what to
    /// tell (`session` stands too).
    pub fn finish(
        self,
        session: &mut Session,
    ) -> Result<Result<Applied, SessionError>, &'static str> {
        let (copy, outcome) = self
            .thread
            .join()
            .map_err(|_| "error: the change failed; nothing was changed")?;
        if outcome.is_ok() {
            session.replace_with(copy);
        }
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A command that fails in the background leaves the session as it
    /// is, with the measurement it runs; one that applies replaces it.
    #[test]
    fn only_a_command_that_applied_replaces_the_session() {
        let mut session = Session::open(Path::new("presets/hanging_cloth.toml")).unwrap();
        session.apply(Command::Step(2)).unwrap();
        assert!(session.measure_accuracy());
        let missing = Command::Load("presets/no_such_preset.toml".into());
        let outcome = Work::spawn(&session, missing).finish(&mut session);
        assert!(
            matches!(outcome, Ok(Err(SessionError::Preset(_)))),
            "{outcome:?}"
        );
        assert!(
            session.is_measuring() || session.collect_accuracy().is_some_and(|r| r.is_ok()),
            "the failed load cancelled the measurement"
        );
        assert_eq!(session.state().frame, 2);

        let step = Work::spawn(&session, Command::Step(3)).finish(&mut session);
        assert!(matches!(step, Ok(Ok(_))), "{step:?}");
        assert_eq!(session.state().frame, 5, "the copy that stepped is in");
    }
}
