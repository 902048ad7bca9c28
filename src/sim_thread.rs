//! The front ends' simulation thread, so a slow frame never holds up
//! drawing or the keys (the editor's and the terminal UI's).
//!
//! The thread steps a clone of the session's [`Solver`] from the session's
//! [`State`] in real time and sends every frame back; each UI frame
//! [`SimWorker::collect`] feeds them into the session
//! ([`Session::accept_frame`]), which the panels and the view then draw.
//! Whenever a command changes the session, [`SimWorker::sync`] hands the
//! thread a fresh clone and state under a new epoch, and frames of an older
//! epoch still in flight are dropped. Dragging a grabbed vertex only moves
//! soft-pin targets, which [`SimWorker::targets`] forwards without a
//! restart. The states the session has done with go back to the thread,
//! whose next frames are copied into them instead of fresh allocations.
//! Each frame sent wakes the UI (the `wake` given to [`SimWorker::spawn`]),
//! so while playing the UI draws when there is a new frame to draw, instead
//! of as often as it can.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::mesh::Vec3;
use crate::param::FrameRate;
use crate::session::Session;
use crate::solver::{Solver, SolverError, State, StepReport};

/// Frames the thread may run ahead of the UI before it waits. The UI
/// collects every frame waiting at each of its own, so two cover a
/// simulation up to twice as fast as the UI draws; each one in flight is a
/// whole state (36 MB of Anderson's pairs on the 250 × 250 cloth: with 4,
/// a simulation at 25 frames/s against a UI at 18 peaked at 800–870 MB,
/// with 2 at 560–630 MB, 26–29 frames/s).
const AHEAD: usize = 2;

/// States the thread keeps to copy frames into (more come back after a
/// stall of the UI; they are freed).
const SPARES: usize = 2;

/// What the UI tells the thread.
enum Message {
    /// Start over from `solver` and `state`, stepping if `playing`.
    Sync {
        epoch: u64,
        solver: Box<Solver>,
        state: Box<State>,
        playing: bool,
    },
    /// New soft-pin targets (the grab moved).
    Targets(Vec<Vec3>),
    /// A state the session has done with, to copy a frame into.
    Recycle(Box<State>),
}

/// What the thread sends back.
enum Outcome {
    Frame {
        epoch: u64,
        state: Box<State>,
        report: StepReport,
    },
    BlewUp {
        epoch: u64,
        error: SolverError,
    },
}

/// The simulation thread of one editor or terminal UI.
pub struct SimWorker {
    messages: Option<Sender<Message>>,
    outcomes: Option<Receiver<Outcome>>,
    epoch: u64,
    /// Whether the thread was last told to play.
    playing: bool,
    thread: Option<JoinHandle<()>>,
    /// When the frames taken in arrived.
    rate: FrameRate,
}

impl SimWorker {
    /// Starts the thread (idle until the first [`SimWorker::sync`]); it
    /// calls `wake` after sending each frame (or blow-up), for
    /// [`SimWorker::collect`] to be called soon.
    pub fn spawn(wake: impl Fn() + Send + 'static) -> Self {
        let (messages, inbox) = mpsc::channel();
        let (outbox, outcomes) = mpsc::sync_channel(AHEAD);
        let thread = std::thread::Builder::new()
            .name("simulation".into())
            .spawn(move || run(&inbox, &outbox, &wake))
            .ok();
        Self {
            messages: Some(messages),
            outcomes: Some(outcomes),
            epoch: 0,
            playing: false,
            thread,
            rate: FrameRate::default(),
        }
    }

    /// Simulated frames per second taken in, over the last few seconds.
    pub fn sim_fps(&self) -> f64 {
        self.rate.per_second(Instant::now())
    }

    /// Whether the thread runs (it did start and has not ended: a panic
    /// ends it).
    pub fn is_running(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Drops the worker in `slot` if its thread does not run (it did not
    /// start, or a bug ended it), for the UI to step the session itself
    /// again; whether it did.
    pub fn drop_stopped(slot: &mut Option<Self>) -> bool {
        let stopped = slot.as_ref().is_some_and(|w| !w.is_running());
        if stopped {
            *slot = None;
        }
        stopped
    }

    /// Hands the thread the session's solver and state: it steps from them
    /// while the session plays. Frames stepped before are dropped. Nothing
    /// is handed over while the session is paused and the thread idle (it
    /// gets them anew when the session plays again): a clone of the
    /// solver per command cost the terminal UI 75 ms a key on the
    /// 105k-vertex body, stepping it frame by frame with `n`.
    pub fn sync(&mut self, session: &Session) {
        let playing = session.is_playing();
        if !playing && !self.playing {
            return;
        }
        self.playing = playing;
        if !playing {
            // Paused, no frame comes: the rate shown is 0, not one decaying
            // from the last frames (the UIs' own pacer forgets them too).
            self.rate.forget();
        }
        self.epoch += 1;
        self.send(Message::Sync {
            epoch: self.epoch,
            solver: Box::new(session.solver().clone()),
            state: Box::new(session.state().clone()),
            playing,
        });
    }

    /// Forwards the session's soft-pin targets (after a drag).
    pub fn targets(&self, session: &Session) {
        let targets = session.solver().model().pins.soft.iter().map(|a| a.target);
        self.send(Message::Targets(targets.collect()));
    }

    fn send(&self, message: Message) {
        if let Some(messages) = &self.messages {
            // A thread that is gone (it panicked) simply stops stepping.
            let _ = messages.send(message);
        }
    }

    /// Feeds the frames stepped since the last call into `session`;
    /// returns how many.
    pub fn collect(&mut self, session: &mut Session) -> usize {
        let mut frames = 0;
        if let Some(outcomes) = &self.outcomes {
            while let Ok(outcome) = outcomes.try_recv() {
                match outcome {
                    Outcome::Frame {
                        epoch,
                        state,
                        report,
                    } => {
                        let done = if epoch == self.epoch {
                            frames += 1;
                            session.accept_frame(*state, &report)
                        } else {
                            *state
                        };
                        self.send(Message::Recycle(Box::new(done)));
                    }
                    Outcome::BlewUp { epoch, error } if epoch == self.epoch => {
                        session.accept_blow_up(error);
                    }
                    _ => {}
                }
            }
        }
        self.rate.record(frames, Instant::now());
        frames
    }
}

impl Drop for SimWorker {
    fn drop(&mut self) {
        // Closing both channels ends the thread's loop wherever it waits.
        self.messages = None;
        self.outcomes = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The thread: waits for work, steps in real time, sends each frame and
/// wakes the UI.
fn run(inbox: &Receiver<Message>, outbox: &SyncSender<Outcome>, wake: &dyn Fn()) {
    let mut sim: Option<(u64, Solver, State)> = None;
    let mut spares: Vec<Box<State>> = Vec::with_capacity(SPARES);
    let mut playing = false;
    let mut due = Instant::now();
    loop {
        let message = if playing && sim.is_some() {
            match inbox.recv_timeout(due.saturating_duration_since(Instant::now())) {
                Ok(message) => Some(message),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        } else {
            match inbox.recv() {
                Ok(message) => Some(message),
                Err(_) => return,
            }
        };
        match message {
            Some(Message::Sync {
                epoch,
                solver,
                state,
                playing: play,
            }) => {
                // Another model's buffers would stay as large as it was.
                spares.retain(|spare| spare.positions.len() == state.positions.len());
                sim = Some((epoch, *solver, *state));
                playing = play;
                due = Instant::now();
                continue;
            }
            Some(Message::Targets(targets)) => {
                if let Some((_, solver, _)) = &mut sim {
                    // The count matches: only targets moved.
                    let _ = solver.set_attachment_targets(&targets);
                }
                continue;
            }
            Some(Message::Recycle(state)) => {
                let fits = sim.as_ref().is_some_and(|(_, _, current)| {
                    current.positions.len() == state.positions.len()
                });
                if fits && spares.len() < SPARES {
                    spares.push(state);
                }
                continue;
            }
            None => {}
        }
        let Some((epoch, solver, state)) = &mut sim else {
            continue;
        };
        let dt = Duration::from_secs_f64(solver.params().dt);
        let outcome = match solver.step(state) {
            Ok(report) => Outcome::Frame {
                epoch: *epoch,
                state: match spares.pop() {
                    Some(mut spare) => {
                        State::clone_from(&mut spare, state);
                        spare
                    }
                    None => Box::new(state.clone()),
                },
                report,
            },
            Err(error) => {
                playing = false;
                Outcome::BlewUp {
                    epoch: *epoch,
                    error,
                }
            }
        };
        if outbox.send(outcome).is_err() {
            return;
        }
        wake();
        // Real time, without catching up after a stall.
        due += dt;
        let now = Instant::now();
        if due + 4 * dt < now {
            due = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::command::Command;
    use crate::preset::{GridSpec, MeshSource, Preset};

    fn small() -> Session {
        let preset = Preset {
            mesh: MeshSource::Grid(GridSpec {
                n: 8,
                width: 1.0,
                horizontal: false,
            }),
            ..Preset::default()
        };
        Session::new(preset, None).unwrap()
    }

    /// Collects every 2 ms while `waiting` holds (for at most 5 s).
    fn collect_while(
        worker: &mut SimWorker,
        session: &mut Session,
        waiting: impl Fn(&SimWorker, &Session) -> bool,
    ) {
        let start = Instant::now();
        while waiting(worker, session) && start.elapsed() < Duration::from_secs(5) {
            worker.collect(session);
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Collects until `frames` frames arrived (or 5 s passed).
    fn collect_until(worker: &mut SimWorker, session: &mut Session, frames: u64) {
        collect_while(worker, session, |_, s| s.state().frame < frames);
    }

    /// Collects until `frames` frames arrived, then pauses; returns the
    /// frame the session paused at.
    fn pause_after(worker: &mut SimWorker, session: &mut Session, frames: u64) -> u64 {
        collect_until(worker, session, frames);
        session.apply(Command::Pause).unwrap();
        worker.sync(session);
        let paused = session.state().frame;
        assert!(paused >= frames);
        paused
    }

    #[test]
    fn the_thread_steps_exactly_as_the_session_would() {
        let mut threaded = small();
        let mut direct = small();
        let wakes = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&wakes);
        let mut worker = SimWorker::spawn(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        assert!(worker.is_running());
        threaded.apply(Command::Play).unwrap();
        worker.sync(&threaded);
        // A wake comes after its frame was sent: the frame is there to
        // collect once the UI is woken (more may have come since).
        let start = Instant::now();
        while wakes.load(Ordering::SeqCst) == 0 && start.elapsed() < Duration::from_secs(5) {
            std::hint::spin_loop();
        }
        assert!(worker.collect(&mut threaded) >= 1);
        let frames = pause_after(&mut worker, &mut threaded, 10);
        direct.apply(Command::Step(frames as usize)).unwrap();
        assert_eq!(threaded.state(), direct.state());
        assert_eq!(
            threaded.history().frames().len(),
            direct.history().frames().len()
        );
        // Paused: nothing more arrives.
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(worker.collect(&mut threaded), 0);
        // Every frame woke the UI (frames stepped after the pause and
        // dropped woke it too; the last may wake it a moment after it was
        // taken in).
        let start = Instant::now();
        while wakes.load(Ordering::SeqCst) < frames as usize {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "woken too few times"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Changed while paused (the thread idle, given nothing), the session
    /// plays on from where it was left.
    #[test]
    fn a_session_changed_while_paused_plays_on_from_there() {
        let mut threaded = small();
        let mut direct = small();
        let mut worker = SimWorker::spawn(|| {});
        worker.sync(&threaded);
        threaded.apply(Command::Step(3)).unwrap();
        worker.sync(&threaded);
        threaded.apply(Command::Play).unwrap();
        worker.sync(&threaded);
        let frames = pause_after(&mut worker, &mut threaded, 8);
        direct.apply(Command::Step(frames as usize)).unwrap();
        assert_eq!(threaded.state(), direct.state());
    }

    #[test]
    fn a_pause_shows_no_simulation_rate() {
        let mut session = small();
        let mut worker = SimWorker::spawn(|| {});
        session.apply(Command::Play).unwrap();
        worker.sync(&session);
        collect_while(&mut worker, &mut session, |w, _| w.sim_fps() == 0.0);
        assert!(worker.sim_fps() > 0.0, "frames came in over time");
        session.apply(Command::Pause).unwrap();
        worker.sync(&session);
        worker.collect(&mut session);
        assert_eq!(worker.sim_fps(), 0.0);
    }

    #[test]
    fn frames_of_an_older_sync_are_dropped() {
        let mut session = small();
        let mut worker = SimWorker::spawn(|| {});
        session.apply(Command::Play).unwrap();
        worker.sync(&session);
        std::thread::sleep(Duration::from_millis(60));
        // A reset before collecting: the frames stepped from the old state
        // must not come back.
        session.apply(Command::Reset).unwrap();
        worker.sync(&session);
        worker.collect(&mut session);
        let history = session.history().frames();
        assert!(
            history
                .iter()
                .zip(history.iter().skip(1))
                .all(|(a, b)| b.frame == a.frame + 1),
            "the history runs on frame by frame"
        );
        assert_eq!(history.front().unwrap().frame, 0);
    }

    #[test]
    fn a_blow_up_on_the_thread_pauses_the_session() {
        let mut session = small();
        let mut worker = SimWorker::spawn(|| {});
        session
            .apply(Command::SetParam(crate::command::Param::Gravity(
                Vec3::new(0.0, -1e12, 0.0),
            )))
            .unwrap();
        session.apply(Command::Play).unwrap();
        worker.sync(&session);
        collect_while(&mut worker, &mut session, |_, s| s.is_playing());
        assert!(!session.is_playing());
        assert!(session.warning().is_some());
        assert!(
            session
                .state()
                .positions
                .iter()
                .all(|p| p.iter().all(|c| c.is_finite()))
        );
    }
}
