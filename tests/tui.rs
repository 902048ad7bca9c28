//! Terminal UI: renders of the main screen and the help overlay on a
//! `TestBackend`, and every key's action and its effect on the session.
#![cfg(feature = "tui")]

use std::f64::consts::TAU;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use softbody::command::{Command, Param, WeightKind};
use softbody::mesh::Vec3;
use softbody::preset::{Build, BuildKind, MeshSource, PinSpec, Preset, Selector};
use softbody::session::Session;
use softbody::tui::app::{Action, After, App, KEYS, Mode, PIN_KEYS, ParamId, format_value};
use softbody::tui::ui;

mod common;
use common::{DUPLICATED_FACE_OBJ, scratch_dir};

const CLOTH: &str = "presets/hanging_cloth.toml";

/// The terminal UI on `session`, changes always applied live: whether
/// they are is decided by the last factorisation's wall time, which a
/// loaded host can stretch past the threshold (the tests of slow
/// factorisations set their own).
fn app_on(session: Session) -> App {
    let mut app = App::new(session, "presets".into());
    app.live_refactor_ms = f64::INFINITY;
    // As on a colour terminal that draws braille, whatever TERM and
    // NO_COLOR the tests run under.
    (app.braille, app.no_color) = (true, false);
    app
}

/// The terminal UI on the preset at `path`.
fn opened(path: &str) -> App {
    app_on(Session::open(Path::new(path)).unwrap())
}

fn cloth() -> App {
    opened(CLOTH)
}

fn untitled() -> App {
    app_on(Session::new(Preset::default(), None).unwrap())
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ch(c: char) -> KeyEvent {
    key(KeyCode::Char(c))
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

/// Presses each key of `text` in turn, expecting no action.
fn type_text(app: &mut App, text: &str) {
    for c in text.chars() {
        assert_eq!(app.handle_key(ch(c)), Action::None, "typing {c:?}");
    }
}

/// The screen as text, one line per row.
fn screen(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| ui::render(frame, app)).unwrap();
    let buffer = terminal.backend().buffer();
    (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buffer[(x, y)].symbol())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn assert_shows(screen: &str, texts: &[&str]) {
    for text in texts {
        assert!(screen.contains(text), "{text:?} not on screen:\n{screen}");
    }
}

#[test]
fn main_screen_at_80_by_24() {
    let mut app = cloth();
    let paused = screen(&app, 80, 24);
    assert_shows(
        &paused,
        &[
            "Hanging cloth",
            "paused",
            "frame 0 ",
            "Parameters",
            "structural",
            "1000",
            "shear",
            "500",
            "bending",
            "gravity y",
            "-9.8",
            "Preview",
            "Energy (J)",
            "Convergence",
            "FPS",
            "q quit",
        ],
    );
    assert!(!paused.contains("strain"), "no tet weights for cloth");
    // The file `s` saves to stays in the header; the mesh's counts give way.
    assert!(
        paused
            .lines()
            .next()
            .unwrap()
            .contains("hanging_cloth.toml │ 900 v 1682…"),
        "{paused}"
    );
    assert!(app.on_key(ch('n')));
    assert!(app.on_key(ch(' ')));
    let playing = screen(&app, 80, 24);
    assert_shows(&playing, &["playing", "frame 1 ", "in 10 it", "error  "]);
    // The convergence sparkline has rows of its own even at this size.
    assert!(
        playing.contains(['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█']),
        "no convergence bars:\n{playing}"
    );
}

#[test]
fn main_screen_at_120_by_40() {
    let mut app = cloth();
    app.apply(Command::Step(3));
    let text = screen(&app, 120, 40);
    assert_shows(
        &text,
        &[
            "Hanging cloth",
            "paused",
            "frame 3 ",
            "900 v 1682 tri",
            "hanging_cloth.toml",
            "attachment",
            "density",
            "0.15",
            "dt",
            "0.0167",
            "iterations",
            "damping",
            "Energy (J)",
            "kin ",
            "grav ",
            "elast ",
            "total ",
            "local",
            "global",
        ],
    );
    // The preview draws the mesh in braille.
    assert!(text.chars().any(|c| ('\u{2801}'..='\u{28ff}').contains(&c)));
}

/// The memory the process holds is on screen once the loop has read it
/// (on Linux), where the convergence sparkline keeps two rows.
#[test]
fn the_memory_held_is_shown_where_there_is_room() {
    let mut app = cloth();
    assert_eq!(app.memory(), None, "not read before the loop runs");
    app.advance(Duration::ZERO);
    if !cfg!(target_os = "linux") {
        return;
    }
    let m = app
        .memory()
        .expect("Linux reports the memory a process holds");
    assert!(m.current > 0 && m.peak >= m.current, "{m:?}");
    let tall = screen(&app, 120, 40);
    let line = tall
        .lines()
        .find_map(|l| l.find("mem ").map(|at| l[at..].split('│').next().unwrap()))
        .unwrap_or_else(|| panic!("no memory line:\n{tall}"));
    // `mem 161 MB peak 161 MB`: two sizes, each a number and a unit.
    let words: Vec<&str> = line.split_whitespace().collect();
    let size = |k: usize| words[k].parse::<f64>().is_ok() && ["MB", "GB"].contains(&words[k + 1]);
    assert!(
        words.len() >= 6 && words[0] == "mem" && size(1) && words[3] == "peak" && size(4),
        "{line}"
    );
    // Too short for both: the sparkline keeps its rows.
    let short = screen(&app, 80, 20);
    assert!(!short.contains("mem "), "{short}");
}

#[test]
fn small_and_resized_terminals_render() {
    let mut app = cloth();
    for mode in [Mode::Normal, Mode::Help { top: 0 }, Mode::Pins] {
        app.mode = mode;
        for (w, h) in [(80, 24), (40, 12), (200, 60), (10, 5), (1, 1)] {
            screen(&app, w, h);
        }
    }
    // A menu cut short says so (at 40 × 10 the pin menu lost its last
    // keys, Esc's among them, unsaid); a whole one does not.
    app.mode = Mode::Pins;
    assert_shows(&screen(&app, 40, 10), &["more lines: enlarge the terminal"]);
    assert!(!screen(&app, 80, 30).contains("enlarge the terminal"));
    // At 60 × 15 the energy chart has three rows inside its borders: the
    // curves get them all (its axes left them one).
    app.mode = Mode::Normal;
    app.apply(Command::Step(30));
    let text = screen(&app, 60, 15);
    let lines: Vec<&str> = text.lines().collect();
    let title = lines.iter().position(|l| l.contains("Energy (J)")).unwrap();
    let energy_box = |l: &str| l.split('│').nth(1).unwrap_or("").to_owned();
    for row in &lines[title + 1..title + 4] {
        let inside = energy_box(row);
        assert!(
            inside
                .chars()
                .any(|c| ('\u{2801}'..='\u{28ff}').contains(&c)),
            "no curve in {row:?}\n{text}"
        );
        assert!(!inside.contains('└'), "an axis in {row:?}\n{text}");
    }
}

#[test]
fn a_parameter_list_too_long_for_the_screen_counts_its_rows() {
    let mut app = cloth();
    let n = app.params().len();
    let whole = screen(&app, 80, 40);
    assert!(!whole.contains(&format!(" of {n} ")), "{whole}");
    // Cut short, the bottom border says which rows are in view, and
    // follows the selection to the last one.
    let short = screen(&app, 80, 16);
    let first = " 1–";
    assert!(
        short.contains(first) && short.contains(&format!(" of {n} ")),
        "{short}"
    );
    for _ in 0..n {
        app.handle_key(key(KeyCode::Down));
    }
    let end = screen(&app, 80, 16);
    assert!(end.contains(&format!("–{n} of {n} ")), "{end}");
    assert!(!end.contains(first), "{end}");
}

/// A rebuild says what changed: a new scale said "built as tetrahedra" of
/// a body built so before (QA).
#[test]
fn a_rebuild_says_what_changed() {
    let mut app = opened("presets/soft_rubber.toml");
    let build = app.session.preset().build;
    app.apply(Command::SetBuild(Build {
        scale: 2.0 * build.scale,
        ..build
    }));
    assert!(
        app.status.starts_with("scale 2 m per file unit"),
        "{}",
        app.status
    );
    let build = app.session.preset().build;
    app.apply(Command::SetBuild(Build {
        resolution: Some(8),
        ..build
    }));
    assert!(
        app.status.starts_with("built at tet resolution 8"),
        "{}",
        app.status
    );
}

#[test]
fn help_overlay_lists_every_key() {
    let mut app = cloth();
    assert_eq!(app.handle_key(ch('?')), Action::None);
    assert_eq!(app.mode, Mode::Help { top: 0 });
    let text = screen(&app, 80, 24);
    assert_shows(&text, &["Help"]);
    for (key, what) in KEYS {
        assert_shows(&text, &[key, what]);
    }
    // Any key closes it without acting, the arrows too where it fits.
    assert_eq!(app.handle_key(ch('q')), Action::None);
    assert_eq!(app.mode, Mode::Normal);
    app.handle_key(ch('?'));
    screen(&app, 80, 24);
    assert_eq!(app.handle_key(key(KeyCode::Down)), Action::None);
    assert_eq!(app.mode, Mode::Normal);
}

/// In a terminal too short for the help, the arrows and pages scroll it
/// to every key, its borders say so and where it is, and any other key
/// closes it.
#[test]
fn help_scrolls_in_a_short_terminal() {
    let mut app = cloth();
    app.handle_key(ch('?'));
    let (rows, count) = (12, KEYS.len());
    let visible = usize::from(rows) - 2;
    let first = screen(&app, 80, rows);
    assert_shows(&first, &["scroll", &format!("1–{visible} of {count}")]);
    let (last_key, last_what) = KEYS[count - 1];
    assert!(!first.contains(last_what), "{first}");
    let mut seen: Vec<&str> = Vec::new();
    let mut text = first;
    for _ in 0..count {
        seen.extend(
            KEYS.iter()
                .filter(|(_, w)| text.contains(w))
                .map(|(_, w)| *w),
        );
        app.handle_key(key(KeyCode::Down));
        assert!(
            matches!(app.mode, Mode::Help { .. }),
            "closed: {:?}",
            app.mode
        );
        text = screen(&app, 80, rows);
    }
    // Scrolled to the end, and no further: the last key on the last row.
    let hidden = count - visible;
    assert_eq!(app.mode, Mode::Help { top: hidden });
    assert_shows(
        &text,
        &[
            last_key,
            last_what,
            &format!("{}–{count} of {count}", hidden + 1),
        ],
    );
    for (_, what) in KEYS {
        assert!(seen.contains(what), "{what:?} never shown");
    }
    // One step up shows the line before again: no overscroll to wind back.
    app.handle_key(key(KeyCode::Up));
    assert_eq!(app.mode, Mode::Help { top: hidden - 1 });
    app.handle_key(key(KeyCode::Home));
    assert_eq!(app.mode, Mode::Help { top: 0 });
    app.handle_key(key(KeyCode::PageDown));
    assert!(
        matches!(app.mode, Mode::Help { top } if top > 1),
        "{:?}",
        app.mode
    );
    app.handle_key(key(KeyCode::End));
    assert_eq!(app.mode, Mode::Help { top: hidden });
    assert_eq!(app.handle_key(ch('x')), Action::None);
    assert_eq!(app.mode, Mode::Normal);
}

/// A header or a status message of wide characters (CJK: two columns
/// each) is cut at the screen's edge with its "…" on screen: counted by
/// characters, the cut text still ran past the edge and the "…" with it.
#[test]
fn wide_characters_are_cut_at_the_screen_s_edge() {
    let preset = Preset {
        name: "布のシミュレーション".repeat(4),
        ..Preset::default()
    };
    let mut app = app_on(Session::new(preset, None).unwrap());
    app.status = "保存できません：".repeat(20);
    for width in [30, 41, 80] {
        let text = screen(&app, width, 12);
        let rows: Vec<&str> = text.lines().collect();
        // (The status line then says how to read it whole.)
        for (row, end) in [(rows[0], "…"), (rows[11], "…[w]")] {
            assert!(row.trim_end().ends_with(end), "{width}: {row:?}\n{text}");
        }
    }
}

/// In a narrow terminal a popup's title and the header end in "…" where
/// they are cut, and the help's descriptions wrap at their words onto
/// lines of their own instead of being cut at the border.
#[test]
fn narrow_terminals_cut_titles_with_an_ellipsis_and_wrap_the_help() {
    let mut app = cloth();
    let text = screen(&app, 30, 24);
    let header = text.lines().next().unwrap();
    assert!(header.trim_end().ends_with('…'), "{header:?}");
    app.handle_key(ch('?'));
    let text = screen(&app, 20, 60);
    let top = text.lines().find(|l| l.contains("Help")).unwrap();
    assert!(top.ends_with("…┐"), "{top:?}\n{text}");
    // At 40 columns every word of every description is on screen, whole.
    let text = screen(&app, 40, 80);
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == '│')
        .collect();
    for (_, what) in KEYS {
        for word in what.split(' ') {
            assert!(
                words.contains(&word),
                "{word:?} of {what:?} not whole:\n{text}"
            );
        }
    }
}

#[test]
fn playback_keys_map_to_commands() {
    let mut app = cloth();
    for (c, command) in [
        (' ', Command::TogglePlay),
        ('n', Command::Step(1)),
        ('r', Command::Reset),
        ('u', Command::Undo),
        ('U', Command::Redo),
        ('s', Command::Save(None)),
    ] {
        assert_eq!(app.handle_key(ch(c)), Action::Apply(command), "key {c:?}");
        assert_eq!(app.mode, Mode::Normal);
    }
    assert_eq!(app.handle_key(ch('q')), Action::Quit);
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(app.handle_key(ctrl_c), Action::Quit);
}

#[test]
fn playback_keys_drive_the_session() {
    let mut app = cloth();
    assert!(app.on_key(ch('n')));
    assert_eq!(app.session.state().frame, 1);
    assert!(app.on_key(ch(' ')));
    assert!(app.session.is_playing());
    app.session.tick().unwrap();
    assert!(app.on_key(ch(' ')));
    assert!(!app.session.is_playing());
    assert!(app.on_key(ch('r')));
    assert_eq!(app.session.state().frame, 0);
    assert!(!app.on_key(ch('q')));
}

#[test]
fn m_cycles_the_acceleration_and_a_measures_the_accuracy() {
    use softbody::solver::Acceleration;
    let mut app = cloth();
    assert_eq!(
        app.session.preset().sim.acceleration,
        Acceleration::Anderson
    );
    assert_shows(
        &screen(&app, 120, 40),
        &["anderson, extrapolated", "error  – (a: measure)"],
    );
    // Each says what it set, the guess with it (it said nothing: QA).
    for (expected, says) in [
        (
            Acceleration::Plain,
            "plain acceleration, inertial initial guess",
        ),
        (
            Acceleration::Chebyshev,
            "chebyshev acceleration, inertial initial guess",
        ),
        (
            Acceleration::Anderson,
            "anderson acceleration, extrapolated initial guess",
        ),
    ] {
        assert!(app.on_key(ch('m')));
        assert_eq!(app.session.preset().sim.acceleration, expected);
        assert_eq!(app.session.solver().acceleration(), expected);
        assert_eq!(app.status, says);
    }
    assert!(app.on_key(ch('u')));
    assert_eq!(
        app.session.preset().sim.acceleration,
        Acceleration::Chebyshev
    );
    // `e` switches the extrapolated initial guess, shown under the
    // convergence plot (by default on with Anderson only).
    assert_shows(&screen(&app, 120, 40), &["chebyshev, inertial"]);
    assert!(app.on_key(ch('e')));
    assert_eq!(app.status, "extrapolated initial guess");
    assert_eq!(app.session.preset().sim.extrapolate, Some(true));
    assert!(app.session.solver().params().extrapolates());
    assert_shows(&screen(&app, 120, 40), &["chebyshev, extrapolated"]);
    assert!(app.on_key(ch('e')));
    assert_eq!(app.session.preset().sim.extrapolate, Some(false));

    // A swinging cloth: the measured error is real, and the screen shows it.
    assert!(app.on_key(ch('m')));
    for _ in 0..5 {
        assert!(app.on_key(ch('n')));
    }
    // `a` starts a measurement, `a` again cancels it (the measurement is
    // taken in only as the UI advances, so it is still running here).
    assert_eq!(app.handle_key(ch('a')), Action::None);
    assert!(app.session.is_measuring());
    assert_eq!(app.handle_key(ch('a')), Action::None);
    assert!(!app.session.is_measuring());
    assert_eq!(app.status, "accuracy measurement cancelled");
    // Its thread ends at the Newton solve's next factorisation.
    let start = std::time::Instant::now();
    while app.session.is_stopping() {
        assert!(start.elapsed().as_secs() < 60, "it never stopped");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_shows(&screen(&app, 120, 40), &["error  – (a: measure)"]);
    assert_eq!(app.handle_key(ch('a')), Action::None);
    // It runs on its own thread; the UI keeps going meanwhile.
    assert!(app.session.is_measuring());
    assert_shows(&screen(&app, 120, 40), &["error  measuring… "]);
    let start = std::time::Instant::now();
    while app.session.is_measuring() {
        assert!(
            start.elapsed().as_secs() < 60,
            "the measurement never ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
        app.advance(std::time::Duration::ZERO);
    }
    let (frame, accuracy) = app.session.accuracy().expect("measured");
    assert_eq!(frame, 5);
    assert!(accuracy.error() > 0.0 && accuracy.error() < 1.0);
    assert!(app.status.starts_with("accuracy: error "), "{}", app.status);
    assert_eq!(app.session.state().frame, 5, "measuring does not step");
    assert_shows(
        &screen(&app, 120, 40),
        &[&format!("error  {:.1e} @5", accuracy.error())],
    );
}

#[test]
fn arrows_select_and_plus_minus_step_on_a_log_scale() {
    let mut app = cloth();
    let params = app.params();
    assert_eq!(params[0], ParamId::Weight(WeightKind::Structural));
    assert_eq!(app.handle_key(key(KeyCode::Up)), Action::None);
    assert_eq!(app.selected, 0);
    assert_eq!(
        app.handle_key(ch('+')),
        Action::Apply(Command::SetWeight(WeightKind::Structural, 1778.28))
    );
    app.handle_key(key(KeyCode::Down));
    assert_eq!(app.selected_param(), ParamId::Weight(WeightKind::Shear));
    assert_eq!(
        app.handle_key(ch('-')),
        Action::Apply(Command::SetWeight(WeightKind::Shear, 281.171))
    );
    for _ in 0..params.len() + 3 {
        app.handle_key(key(KeyCode::Down));
    }
    assert_eq!(app.selected, params.len() - 1);
    assert_eq!(app.selected_param(), ParamId::GravityY);
    let g = app.session.preset().sim.gravity;
    assert_eq!(
        app.handle_key(ch('+')),
        Action::Apply(Command::SetParam(Param::Gravity(Vec3::new(
            g.x,
            g.y + 0.5,
            g.z
        ))))
    );
    app.handle_key(key(KeyCode::Up));
    assert_eq!(app.selected_param(), ParamId::Damping);
    assert_eq!(
        app.handle_key(ch('+')),
        Action::Apply(Command::SetParam(Param::Damping(0.02)))
    );
    // At a bound a step says so (the scale at 1,000 left the last status).
    app.apply(Command::SetParam(Param::Damping(1.0)));
    assert_eq!(app.handle_key(ch('+')), Action::None);
    assert_eq!(app.status, "damping is at its largest, 1");
}

#[test]
fn weight_steps_undo_and_redo_in_the_session() {
    let mut app = cloth();
    app.on_key(ch('+'));
    app.on_key(ch('+'));
    let weight = |app: &App| app.session.preset().material.weights.structural;
    assert_eq!(weight(&app), 3162.28);
    assert!(app.session.is_dirty());
    app.on_key(ch('u'));
    assert_eq!(weight(&app), 1778.28);
    app.on_key(ch('U'));
    assert_eq!(weight(&app), 3162.28);
    app.on_key(ch('-'));
    app.on_key(ch('-'));
    assert!((weight(&app) - 1000.0).abs() < 1e-9);
}

/// On a model whose factorisation is slow (a large body: ~2.6 s on the
/// 105k-vertex one), `+` and `-` pressed in a row only move the value
/// shown, and apply as one refactorisation once the keys stop (or another
/// key comes), instead of one each: a held key queues dozens.
#[test]
fn steps_on_a_slow_factorisation_apply_once_when_the_keys_stop() {
    let mut app = cloth();
    // Every factorisation counts as slow.
    app.live_refactor_ms = 0.0;
    let weight = |app: &App| app.session.preset().material.weights.structural;
    let refactors = |app: &App| app.session.solver().factor_stats().refactors;
    let param = ParamId::Weight(WeightKind::Structural);
    let before = refactors(&app);
    for _ in 0..3 {
        assert!(app.on_key(ch('+')));
    }
    assert_eq!(weight(&app), 1000.0);
    assert_eq!(refactors(&app), before);
    let held = app.value(param);
    assert_eq!(held, 5623.42);
    assert_shows(&screen(&app, 80, 24), &[&format_value(held)]);
    // Not quiet for long enough yet.
    app.settle(Duration::from_secs(3600));
    assert_eq!(weight(&app), 1000.0);
    app.settle(Duration::ZERO);
    assert_eq!(weight(&app), held);
    assert_eq!(refactors(&app), before + 1);
    assert_eq!(app.session.undo_len(), 1);

    // Stepped back, applied by the next key: exactly the value before.
    for _ in 0..3 {
        app.on_key(ch('-'));
    }
    assert_eq!(weight(&app), held);
    app.on_key(key(KeyCode::Down));
    assert_eq!(weight(&app), 1000.0);
    assert!(!app.session.is_dirty());
    assert_eq!(refactors(&app), before + 2);

    // Leaving on a signal (the autosave's turn) takes the steps in too.
    app.on_key(key(KeyCode::Up));
    app.on_key(ch('+'));
    assert_eq!(weight(&app), 1000.0);
    let _ = app.keep_unsaved();
    assert_eq!(weight(&app), 1778.28);
}

/// `-` then `+` (or any steps undone by as many opposite ones) returns to
/// exactly the value before, so nothing is left unsaved: 1000 ÷ 10^¼ × 10^¼
/// is 1000.0000000000001 in floating point, which marked the preset dirty.
#[test]
fn stepping_back_returns_exactly_to_the_value_before() {
    let mut app = cloth();
    let weight = |app: &App| app.session.preset().material.weights.structural;
    app.on_key(ch('-'));
    assert!(app.session.is_dirty());
    app.on_key(ch('+'));
    assert_eq!(weight(&app), 1000.0);
    assert!(!app.session.is_dirty());
    for c in "--+-++".chars() {
        app.on_key(ch(c));
    }
    assert_eq!(weight(&app), 1000.0);
    assert!(!app.session.is_dirty());
    // A typed value starts afresh; at zero, `-` stays and `+` leaves it.
    app.on_key(key(KeyCode::Enter));
    type_text(&mut app, "0");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(weight(&app), 0.0);
    app.on_key(ch('-'));
    app.on_key(ch('+'));
    assert_eq!(
        weight(&app),
        1000.0,
        "a zero weight steps up to its default"
    );
    // And back to zero: the step was not cut short by a bound.
    app.on_key(ch('-'));
    assert_eq!(weight(&app), 0.0);
    app.on_key(ch('+'));
    // Any other change forgets the steps: after an undo (back to 0) and the
    // same value typed again, `-` steps down from it (it undid the first
    // step, back to 0).
    app.on_key(ch('u'));
    assert_eq!(weight(&app), 0.0);
    app.on_key(key(KeyCode::Enter));
    type_text(&mut app, "1000");
    app.on_key(key(KeyCode::Enter));
    app.on_key(ch('-'));
    assert_eq!(weight(&app), 562.341);
}

/// Ctrl or Alt with a letter is not the letter: Ctrl-U undid and Ctrl-R
/// reset silently (Ctrl-U clears a prompt, so it is pressed by habit), and
/// Ctrl-D at the quit question discarded the changes. Only the editor's
/// chords act: Ctrl-S saves, Ctrl-Z undoes, Ctrl-Y and Ctrl-Shift-Z redo.
/// Undo, redo and reset say what they did.
#[test]
fn control_chords_are_not_their_letters() {
    let alt = |c| KeyEvent::new(KeyCode::Char(c), KeyModifiers::ALT);
    let mut app = cloth();
    let weight = |app: &App| app.session.preset().material.weights.structural;
    app.on_key(ch('+'));
    app.on_key(ch('n'));
    let stepped = weight(&app);
    assert_eq!(app.handle_key(ctrl('u')), Action::None);
    assert_eq!(app.handle_key(ctrl('r')), Action::None);
    assert!(app.status.contains("does nothing"), "{}", app.status);
    let alt_u = KeyEvent::new(KeyCode::Char('u'), KeyModifiers::ALT);
    assert_eq!(app.handle_key(alt_u), Action::None);
    assert_eq!(weight(&app), stepped);
    assert_eq!(app.session.state().frame, 1);
    assert_eq!(
        app.handle_key(ctrl('s')),
        Action::Apply(Command::Save(None))
    );
    // The editor's undo and redo chords are undo and redo here too (Alt-z
    // is not).
    assert_eq!(app.handle_key(alt('z')), Action::None);
    assert_eq!(weight(&app), stepped);
    app.on_key(ctrl('z'));
    assert_eq!(weight(&app), 1000.0);
    assert!(app.status.starts_with("undid "), "{}", app.status);
    app.on_key(ctrl('y'));
    assert_eq!(weight(&app), stepped);
    app.on_key(ctrl('z'));
    let ctrl_shift_z = KeyEvent::new(
        KeyCode::Char('Z'),
        KeyModifiers::CONTROL | KeyModifiers::SHIFT,
    );
    app.on_key(ctrl_shift_z);
    assert_eq!(weight(&app), stepped);
    // In the pin-group field Ctrl-U clears, as in every text field, and
    // Ctrl+Alt (AltGr on some keyboards) types its character.
    app.on_key(ch('p'));
    app.on_key(ch('g'));
    type_text(&mut app, "lft");
    app.on_key(ctrl('u'));
    assert_eq!(
        app.mode,
        Mode::PinGroup {
            text: String::new()
        }
    );
    let altgr = KeyEvent::new(
        KeyCode::Char('@'),
        KeyModifiers::CONTROL | KeyModifiers::ALT,
    );
    app.handle_key(altgr);
    assert_eq!(
        app.mode,
        Mode::PinGroup {
            text: "@".to_owned()
        }
    );
    // Readline habits in a field: Ctrl-A, Ctrl-E and Alt-x type nothing
    // (they typed their letters), Ctrl-H deletes a character and Ctrl-W a
    // word.
    type_text(&mut app, "left ar");
    for key in [ctrl('a'), ctrl('e'), alt('x')] {
        app.handle_key(key);
    }
    app.handle_key(ctrl('h'));
    assert_eq!(
        app.mode,
        Mode::PinGroup {
            text: "@left a".to_owned()
        }
    );
    app.handle_key(ctrl('w'));
    assert_eq!(
        app.mode,
        Mode::PinGroup {
            text: "@left ".to_owned()
        }
    );
    app.mode = Mode::Normal;
    // At the quit question, Ctrl-D is not `d` (discard).
    app.on_key(ch('q'));
    assert_eq!(app.mode, Mode::ConfirmQuit);
    assert_eq!(app.handle_key(ctrl('d')), Action::None);
    app.mode = Mode::Normal;
    app.on_key(ch('r'));
    assert_eq!(app.status, "back to rest");
    app.on_key(ch('u'));
    // Undo and redo name what they took back and did again.
    let undid = app.status.clone();
    assert!(
        undid.starts_with("undid structural weight from ") && undid.ends_with(" to 1000"),
        "{undid}"
    );
    assert_eq!(weight(&app), 1000.0);
    app.on_key(ch('u'));
    assert_eq!(app.status, "nothing to undo");
    app.on_key(ch('U'));
    let changed = undid.strip_prefix("undid structural weight from ").unwrap();
    let (to, from) = changed.split_once(" to ").unwrap();
    assert_eq!(
        app.status,
        format!("redid structural weight from {from} to {to}")
    );
    app.on_key(ch('U'));
    assert_eq!(app.status, "nothing to redo");
}

/// An iteration count must be a whole number: `-0.1` is refused as
/// such (it used to round to 0 and read "must be at least 1, found 0").
#[test]
fn a_typed_iteration_count_must_be_whole() {
    let mut app = cloth();
    app.selected = app
        .params()
        .iter()
        .position(|p| *p == ParamId::Iterations)
        .unwrap();
    for (typed, says) in [
        ("-0.1", "not a whole number"),
        ("2.5", "not a whole number"),
        ("-7", "iterations must lie in [1, 10000]: '-7'"),
        (
            "99999999999999999999",
            "iterations must lie in [1, 10000]: '99999999999999999999'",
        ),
    ] {
        app.handle_key(key(KeyCode::Enter));
        type_text(&mut app, typed);
        assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::None);
        assert!(app.status.starts_with(says), "{typed}: {}", app.status);
        app.handle_key(key(KeyCode::Esc));
    }
    app.handle_key(key(KeyCode::Enter));
    type_text(&mut app, "12");
    assert!(app.on_key(key(KeyCode::Enter)));
    assert_eq!(app.session.preset().sim.iterations, 12);
}

/// A message longer than the screen is wide wraps onto more rows (it was
/// cut: `…must not be negative, foun`), and a typed value's error names the
/// field, not the preset's file, which is not at fault.
#[test]
fn a_long_message_wraps_instead_of_being_cut() {
    let mut app = cloth();
    app.on_key(key(KeyCode::Enter));
    type_text(&mut app, "-5");
    app.on_key(key(KeyCode::Enter));
    assert_eq!(
        app.status,
        "error: material.weights.structural: must not be negative, found -5"
    );
    let shown = screen(&app, 40, 24).replace('\n', "");
    assert!(shown.contains("must not be negative, found -5"), "{shown}");
    // In a short terminal it keeps to one row, cut with "…", and the
    // energy chart keeps rows to plot in (three rows of message left it
    // its borders only).
    let short = screen(&app, 40, 14);
    let last = short.lines().last().unwrap();
    assert!(
        last.starts_with(" error: material") && last.ends_with("…[w]"),
        "{short}"
    );
    let lines: Vec<&str> = short.lines().collect();
    let title = lines.iter().position(|l| l.contains("Energy")).unwrap();
    assert!(!lines[title + 1].contains('└'), "no plot rows:\n{short}");
    // Past three rows, cut with "…" (the third row ended mid-sentence).
    app.status = format!("the mesh: {}", "a long warning, ".repeat(12));
    let tall = screen(&app, 40, 24);
    let rows: Vec<&str> = tall.lines().rev().take(3).collect();
    assert!(rows[0].trim_end().ends_with("…[w]"), "{tall}");
    assert!(rows[2].starts_with(" the mesh: a long"), "{tall}");
}

/// With nothing to say, the status line names the main keys that fit, `?`
/// (help) and `q` (quit) always: at 60 columns it was cut after "s save".
#[test]
fn the_key_hint_keeps_help_and_quit_in_a_narrow_terminal() {
    let mut app = cloth();
    app.status.clear();
    for width in [100, 60, 40, 24] {
        let shown = screen(&app, width, 24);
        let last = shown.lines().last().unwrap();
        assert!(last.starts_with(" ? help"), "{width}: {last}");
        assert!(last.trim_end().ends_with("q quit"), "{width}: {last}");
        assert!(!last.contains('…'), "{width}: {last}");
    }
    let wide = screen(&app, 100, 24);
    assert!(wide.lines().last().unwrap().contains("S save as"));
}

/// `w` shows the messages whole, which the status line cuts in a small
/// terminal and which over SSH could not be read otherwise: the last
/// outcome, and every note on the mesh (the status line says the first and
/// sent the user to the editor or the command line for the rest).
#[test]
fn w_shows_every_message_whole() {
    let dir = scratch_dir("tui-messages");
    let file = dir.join("three.obj");
    std::fs::write(
        &file,
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nv 5 5 5\nv 0.5 0 0\n\
         f 1 2 3\nf 2 4 3\nf 1 2 3\nf 1 2 6\n",
    )
    .unwrap();
    let (session, _) = Session::open_or_default(Some(&file)).unwrap();
    let mut app = app_on(session);
    assert_eq!(
        app.status,
        "the mesh: dropped 1 zero-area triangle (line 10) (and 2 more: w lists them)"
    );
    let status = screen(&app, 40, 14);
    assert!(!status.contains("no face uses"), "{status}");
    assert!(app.on_key(ch('w')));
    assert_eq!(app.mode, Mode::Messages { top: 0 });
    let shown = screen(&app, 60, 24);
    assert_shows(
        &shown,
        &[
            "Messages (any key closes)",
            "status",
            "mesh    dropped 1 zero-area triangle (line 10)",
            "mesh    dropped 1 duplicate triangle",
            "mesh    dropped 2 vertices no face uses",
        ],
    );
    // In a terminal too short for them they scroll, as the help does.
    let short = screen(&app, 40, 8);
    assert!(short.contains("Messages (↑↓ PgUp PgDn scroll"), "{short}");
    app.on_key(key(KeyCode::End));
    assert!(matches!(app.mode, Mode::Messages { top } if top > 0));
    let end = screen(&app, 40, 8);
    assert!(end.contains("no face"), "{end}");
    // Any other key closes it.
    app.on_key(ch('x'));
    assert_eq!(app.mode, Mode::Normal);
    // With nothing to say, it says so.
    let mut app = cloth();
    app.status.clear();
    app.on_key(ch('w'));
    assert!(screen(&app, 80, 24).contains("no outcome, warning or note on the mesh"));
}

#[test]
fn enter_types_a_value() {
    let mut app = cloth();
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::None);
    assert_eq!(
        app.mode,
        Mode::Edit {
            param: ParamId::Weight(WeightKind::Structural),
            text: String::new()
        }
    );
    type_text(&mut app, "2.5e4");
    app.handle_key(key(KeyCode::Backspace));
    assert_shows(&screen(&app, 80, 24), &["structural (now 1000)", "2.5e█"]);
    type_text(&mut app, "3");
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        Action::Apply(Command::SetWeight(WeightKind::Structural, 2500.0))
    );
    assert_eq!(app.mode, Mode::Normal);

    // Not a number: nothing applied, the status says why, and the field
    // stays open with the text to correct.
    let field = |text: &str| Mode::Edit {
        param: ParamId::Weight(WeightKind::Structural),
        text: text.to_owned(),
    };
    app.handle_key(key(KeyCode::Enter));
    type_text(&mut app, "1e4x");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::None);
    assert!(app.status.contains("not a number"), "{}", app.status);
    assert_eq!(app.mode, field("1e4x"));
    // Past f64 (it read "not a number").
    app.handle_key(ctrl('u'));
    type_text(&mut app, "1e400");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::None);
    assert!(
        app.status.starts_with("not a finite number"),
        "{}",
        app.status
    );
    app.handle_key(ctrl('u'));
    type_text(&mut app, "1e4x");
    app.handle_key(key(KeyCode::Backspace));
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        Action::Apply(Command::SetWeight(WeightKind::Structural, 1e4))
    );

    // Esc cancels, and an empty field closes too, with what the field
    // said before (a rejected value) gone from the status line.
    app.handle_key(key(KeyCode::Enter));
    assert_eq!(app.handle_key(key(KeyCode::Esc)), Action::None);
    assert_eq!(app.mode, Mode::Normal);
    app.handle_key(key(KeyCode::Enter));
    type_text(&mut app, "abc");
    app.handle_key(key(KeyCode::Enter));
    assert!(app.status.contains("not a number"), "{}", app.status);
    app.handle_key(ctrl('u'));
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::None);
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.status, "");

    // A value the session refuses is reported, the app keeps running, and
    // the field opens again with the value; a good one then applies.
    app.handle_key(key(KeyCode::Enter));
    type_text(&mut app, "-1");
    assert!(app.on_key(key(KeyCode::Enter)));
    assert!(app.status.starts_with("error:"), "{}", app.status);
    assert_eq!(app.mode, field("-1"));
    app.handle_key(key(KeyCode::Backspace));
    app.handle_key(key(KeyCode::Backspace));
    type_text(&mut app, "1");
    assert!(app.on_key(key(KeyCode::Enter)));
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(app.session.preset().material.weights.structural, 1.0);
}

#[test]
fn save_and_save_as() {
    let mut app = untitled();
    // No file yet: `s` asks for a path.
    assert_eq!(app.handle_key(ch('s')), Action::None);
    assert_eq!(
        app.mode,
        Mode::SaveAs {
            text: "hanging_cloth.toml".to_owned(),
            after: After::Stay,
        }
    );
    app.handle_key(key(KeyCode::Esc));

    let mut app = cloth();
    app.on_key(ch('+'));
    assert_eq!(app.handle_key(ch('S')), Action::None);
    assert_eq!(
        app.mode,
        Mode::SaveAs {
            text: CLOTH.to_owned(),
            after: After::Stay,
        }
    );
    assert_shows(&screen(&app, 80, 24), &["Save as", CLOTH]);
    let ctrl_u = ctrl('u');
    assert_eq!(app.handle_key(ctrl_u), Action::None);
    assert_eq!(
        app.mode,
        Mode::SaveAs {
            text: String::new(),
            after: After::Stay,
        }
    );
    let dir = scratch_dir("tui-save");
    let file = dir.join("saved.toml");
    type_text(&mut app, &file.display().to_string());
    assert!(app.on_key(key(KeyCode::Enter)));
    assert!(app.status.starts_with("saved"), "{}", app.status);
    assert!(!app.session.is_dirty());
    assert_eq!(app.session.path(), Some(file.as_path()));
    let saved = Preset::load(&file).unwrap();
    assert_eq!(saved.material.weights.structural, 1778.28);
    // Now `s` saves there directly.
    assert_eq!(app.handle_key(ch('s')), Action::Apply(Command::Save(None)));
}

/// Save as expands a leading `~` to the home directory, as a shell would
/// (`~/l3` failed with "No such file or directory").
#[test]
fn save_as_expands_the_home_directory() {
    let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) else {
        return;
    };
    let mut app = untitled();
    app.handle_key(ch('S'));
    app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
    type_text(&mut app, "~/softbody-no-such-preset.toml");
    let expected = Path::new(&home).join("softbody-no-such-preset.toml");
    assert!(!expected.exists());
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        Action::Apply(Command::Save(Some(expected)))
    );
}

#[test]
fn open_chooses_a_preset() {
    let mut app = cloth();
    assert_eq!(app.handle_key(ch('o')), Action::None);
    let Mode::Open { files, selected } = app.mode.clone() else {
        panic!("not choosing: {:?}", app.mode);
    };
    assert_eq!(files[selected], Path::new(CLOTH));
    assert!(files.contains(&PathBuf::from("presets/cotton.toml")));
    assert_shows(
        &screen(&app, 80, 24),
        &["Open preset", "presets/cotton.toml"],
    );
    let cotton = files
        .iter()
        .position(|f| f.ends_with("cotton.toml"))
        .unwrap();
    for _ in cotton..selected {
        app.handle_key(key(KeyCode::Up));
    }
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        Action::Apply(Command::Load(PathBuf::from("presets/cotton.toml")))
    );
    // In a short terminal the list scrolls to keep the highlighted entry
    // in view.
    app.handle_key(key(KeyCode::Esc));
    app.handle_key(ch('o'));
    for _ in 0..files.len() {
        app.handle_key(key(KeyCode::Down));
    }
    let last = files[files.len() - 1].display().to_string();
    let short = screen(&app, 80, 6);
    assert_shows(&short, &[&last]);
    assert!(!short.contains(&files[0].display().to_string()), "{short}");
    app.handle_key(key(KeyCode::Esc));
    app.apply(Command::Load(PathBuf::from("presets/cotton.toml")));
    assert_eq!(app.session.path(), Some(Path::new("presets/cotton.toml")));
    assert!(app.status.starts_with("opened"), "{}", app.status);
    // Esc leaves the chooser without loading.
    app.handle_key(ch('o'));
    assert_eq!(app.handle_key(key(KeyCode::Esc)), Action::None);
    assert_eq!(app.mode, Mode::Normal);
    // A directory without presets is named in full, not as the relative
    // path it was given (tests run in the package's directory).
    let empty = PathBuf::from(format!("target/tui-no-presets-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    app.preset_dir = empty.clone();
    app.handle_key(ch('o'));
    std::fs::remove_dir(&empty).unwrap();
    // It asks for a path instead, starting in that directory.
    assert_eq!(
        app.mode,
        Mode::OpenPath {
            text: format!("{}/", empty.display())
        }
    );
    let full = std::env::current_dir().unwrap().join(&empty);
    assert_eq!(
        app.status,
        format!(
            "no presets (.toml files) in {}: type the path of a preset or an OBJ",
            full.display()
        )
    );
}

/// `/` in the list of presets types the path of any preset or OBJ to open
/// (the list offered only the `.toml` files of `presets/`, so an OBJ or a
/// preset kept elsewhere could not be opened once the UI ran), asking
/// first when there are unsaved changes.
#[test]
fn open_takes_a_typed_path() {
    let mut app = cloth();
    app.handle_key(ch('o'));
    assert_shows(&screen(&app, 80, 24), &["/ types a path"]);
    app.handle_key(ch('/'));
    assert_eq!(
        app.mode,
        Mode::OpenPath {
            text: "presets/".into()
        }
    );
    assert_shows(&screen(&app, 80, 24), &["an OBJ: its path", "presets/█"]);
    // Ctrl-U clears the field, as in the other fields.
    app.handle_key(ctrl('u'));
    type_text(&mut app, "meshes/torus.obj");
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        Action::Apply(Command::Load(PathBuf::from("meshes/torus.obj")))
    );
    app.apply(Command::Load(PathBuf::from("meshes/torus.obj")));
    assert_eq!(app.session.name(), "torus");
    // A path that is not there is the session's to report, and the
    // preset stays open.
    app.handle_key(ch('o'));
    app.handle_key(key(KeyCode::Tab));
    type_text(&mut app, "nothing-here.toml");
    let action = app.handle_key(key(KeyCode::Enter));
    let missing = PathBuf::from("presets/nothing-here.toml");
    assert_eq!(action, Action::Apply(Command::Load(missing.clone())));
    app.apply(Command::Load(missing));
    assert!(app.status.starts_with("error: "), "{}", app.status);
    assert!(app.status.contains("nothing-here.toml"), "{}", app.status);
    assert_eq!(app.session.name(), "torus");
    // With unsaved changes it asks first, as the list does.
    app.apply(Command::SetParam(softbody::command::Param::Iterations(12)));
    app.handle_key(ch('o'));
    app.handle_key(ch('/'));
    app.handle_key(ctrl('u'));
    type_text(&mut app, "presets/silk.toml");
    assert_eq!(app.handle_key(key(KeyCode::Enter)), Action::None);
    assert_eq!(
        app.mode,
        Mode::ConfirmOpen {
            path: PathBuf::from("presets/silk.toml")
        }
    );
    // A presets directory that cannot be listed (gone) asks for a path too.
    app.handle_key(key(KeyCode::Esc));
    app.preset_dir = PathBuf::from("target/no-such-presets-dir");
    app.handle_key(ch('o'));
    assert!(matches!(app.mode, Mode::OpenPath { .. }), "{:?}", app.mode);
    assert!(app.status.starts_with("cannot list"), "{}", app.status);
}

/// On a body that is no grid the pin menu leaves out the grid's rules
/// (they could only fail), and keeps the planes.
#[test]
fn the_pin_menu_offers_the_grid_rules_on_a_grid_only() {
    let mut app = opened("presets/jelly.toml");
    app.handle_key(ch('p'));
    let text = screen(&app, 80, 24);
    assert_shows(&text, &["top plane", "bottom plane", "a group"]);
    for (key, what) in PIN_KEYS.iter().filter(|(_, w)| w.contains("(grids)")) {
        assert!(!text.contains(what), "{key} {what} offered:\n{text}");
    }
    // Silk lies flat at rest: no planes, which would hold all of it.
    let mut silk = opened("presets/silk.toml");
    silk.handle_key(ch('p'));
    let text = screen(&silk, 80, 24);
    assert_shows(&text, &["top edge", "top corners", "a group"]);
    assert!(!text.contains("plane"), "{text}");
}

#[test]
fn pin_menu_sets_pin_rules() {
    let mut app = cloth();
    assert_eq!(app.handle_key(ch('p')), Action::None);
    assert_eq!(app.mode, Mode::Pins);
    let text = screen(&app, 80, 24);
    for (key, what) in PIN_KEYS {
        assert_shows(&text, &[key, what]);
    }
    // It says what holds now, which a key replaces.
    assert_shows(&text, &["hard-pinned now: the top corners"]);
    let hard = |selector| {
        Action::Apply(Command::SetPins(PinSpec {
            hard: vec![selector],
            ..PinSpec::default()
        }))
    };
    assert_eq!(app.handle_key(ch('t')), hard(Selector::TopEdge));
    app.handle_key(ch('p'));
    assert_eq!(app.handle_key(ch('c')), hard(Selector::TopCorners));
    app.handle_key(ch('p'));
    assert_eq!(
        app.handle_key(ch('x')),
        Action::Apply(Command::SetPins(PinSpec::default()))
    );
    app.handle_key(ch('p'));
    app.handle_key(ch('g'));
    type_text(&mut app, "sleeve");
    assert_eq!(
        app.handle_key(key(KeyCode::Enter)),
        hard(Selector::Group("sleeve".to_owned()))
    );

    // Silk lies flat until played: its top plane would hold it all.
    let mut silk = opened("presets/silk.toml");
    let before = silk.session.model().pins.hard_vertices().len();
    silk.on_key(ch('p'));
    silk.on_key(ch('y'));
    assert!(
        silk.status.starts_with("the model lies flat"),
        "{}",
        silk.status
    );
    assert_eq!(silk.session.model().pins.hard_vertices().len(), before);

    // In the session: the top edge pins the grid's whole top row, the top
    // plane the same vertices; undo goes back to the corners.
    app.on_key(ch('p'));
    app.on_key(ch('t'));
    assert_eq!(app.session.model().pins.hard_vertices().len(), 30);
    assert_eq!(app.status, "30 vertices pinned");
    app.on_key(ch('p'));
    app.on_key(ch('y'));
    assert_eq!(app.session.model().pins.hard_vertices().len(), 30);
    assert!(matches!(
        app.session.preset().pins.hard[..],
        [Selector::Plane { .. }]
    ));
    app.on_key(ch('u'));
    app.on_key(ch('u'));
    assert_eq!(app.session.model().pins.hard_vertices().len(), 2);
    app.on_key(ch('p'));
    app.on_key(ch('x'));
    assert_eq!(app.status, "no vertex is pinned");
    app.on_key(ch('u'));
    // A group the grid lacks is an error in the status line.
    app.on_key(ch('p'));
    app.on_key(ch('g'));
    type_text(&mut app, "sleeve");
    assert!(app.on_key(key(KeyCode::Enter)));
    assert!(app.status.starts_with("error:"), "{}", app.status);
}

#[test]
fn arrows_and_brackets_rotate_the_preview() {
    let mut app = cloth();
    // It starts looking as the preset's camera does: from above and to
    // the right (looked at level, a cloth lying flat was a line).
    let (yaw, pitch) = (app.yaw, app.pitch);
    assert!(pitch > 0.1 && (yaw - (-1.2f64).atan2(1.9).rem_euclid(TAU)).abs() < 1e-12);
    assert_eq!(app.handle_key(key(KeyCode::Right)), Action::None);
    assert!(app.yaw != yaw);
    assert_eq!(app.handle_key(ch(']')), Action::None);
    assert!(app.pitch > pitch);
    app.handle_key(key(KeyCode::Left));
    app.handle_key(ch('['));
    assert!((app.yaw - yaw).abs() < 1e-12 && (app.pitch - pitch).abs() < 1e-12);
}

#[test]
fn advance_steps_only_while_playing() {
    let mut app = cloth();
    let budget = std::time::Duration::from_millis(50);
    app.advance(budget);
    assert_eq!(app.session.state().frame, 0);
    app.on_key(ch(' '));
    for _ in 0..3 {
        app.advance(budget);
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(app.session.state().frame > 0);
}

/// Advances `app` until `done` holds (at most 10 s); whether it did.
fn advance_until(app: &mut App, done: impl Fn(&App) -> bool) -> bool {
    let start = std::time::Instant::now();
    while !done(app) && start.elapsed() < Duration::from_secs(10) {
        app.advance(Duration::ZERO);
        std::thread::sleep(Duration::from_millis(2));
    }
    done(app)
}

/// With the simulation on a thread of its own (as `softbody tui` runs it),
/// the keys' commands reach it: play steps, a reset plays on from frame 0
/// without the old frames coming back, pause stops, and a blow-up
/// pauses with its message.
#[test]
fn a_simulation_thread_follows_the_keys() {
    let mut app = cloth().with_worker(|| {});
    app.on_key(ch(' '));
    assert!(advance_until(&mut app, |a| a.session.state().frame >= 5));
    assert!(app.sim_fps() > 0.0);
    app.on_key(ch('r'));
    assert_eq!(app.session.state().frame, 0);
    assert!(app.session.is_playing(), "a reset plays on");
    assert!(advance_until(&mut app, |a| a.session.state().frame >= 3));
    let frames: Vec<u64> = app
        .session
        .history()
        .frames()
        .iter()
        .map(|f| f.frame)
        .collect();
    assert_eq!(
        frames,
        (0..frames.len() as u64).collect::<Vec<_>>(),
        "from rest, one by one"
    );
    app.on_key(ch(' '));
    app.advance(Duration::ZERO);
    let paused = app.session.state().frame;
    std::thread::sleep(Duration::from_millis(100));
    app.advance(Duration::ZERO);
    assert_eq!(app.session.state().frame, paused);

    let mut preset = Preset::default();
    preset.sim.gravity = Vec3::new(0.0, -1.0e12, 0.0);
    let mut app = app_on(Session::new(preset, None).unwrap()).with_worker(|| {});
    app.on_key(ch(' '));
    assert!(advance_until(&mut app, |a| !a.session.is_playing()));
    assert!(app.session.warning().is_some());
    assert!(app.status.starts_with("blew up: "), "{}", app.status);
}

/// A blow-up while playing is told in the status line and the header; a
/// later outcome (a save) shows in the status line while the header keeps
/// the blow-up (its warning used to hide every later message until play,
/// reset or open).
#[test]
fn a_blow_up_does_not_hide_later_messages() {
    let mut preset = Preset::default();
    preset.sim.gravity = Vec3::new(0.0, -1.0e12, 0.0);
    let mut app = app_on(Session::new(preset, None).unwrap());
    app.on_key(ch(' '));
    // (A budget a loaded host cannot use up before the frame owed: the
    // blow-up pauses the play.)
    app.advance(std::time::Duration::from_secs(5));
    assert!(app.session.warning().is_some());
    assert!(!app.session.is_playing());
    assert!(app.status.starts_with("blew up: "), "{}", app.status);
    assert_shows(&screen(&app, 120, 40), &["blew up, paused", " blew up: "]);
    let dir = scratch_dir("tui-blow-up");
    let file = dir.join("saved.toml");
    app.on_key(ch('S'));
    let ctrl_u = ctrl('u');
    app.handle_key(ctrl_u);
    type_text(&mut app, &file.display().to_string());
    assert!(app.on_key(key(KeyCode::Enter)));
    assert!(app.status.starts_with("saved"), "{}", app.status);
    let shown = screen(&app, 120, 40);
    assert_shows(&shown, &["blew up, paused", " saved "]);
    // Reset ends the blow-up.
    app.apply(Command::Reset);
    assert!(!screen(&app, 120, 40).contains("blew up"));
}

#[test]
fn a_tet_model_lists_the_tet_weights() {
    let preset = Preset {
        mesh: MeshSource::TetFile(PathBuf::from("tests/data/tetgen_cube.1.node")),
        build: Build {
            kind: BuildKind::Tets,
            ..Build::default()
        },
        pins: PinSpec::default(),
        ..Preset::default()
    };
    let mut app = app_on(Session::new(preset, None).unwrap());
    let weights: Vec<ParamId> = app
        .params()
        .into_iter()
        .filter(|p| matches!(p, ParamId::Weight(_)))
        .collect();
    assert!(weights.contains(&ParamId::Weight(WeightKind::Strain)));
    assert!(weights.contains(&ParamId::Weight(WeightKind::StrainLimit)));
    assert!(weights.contains(&ParamId::Weight(WeightKind::Volume)));
    assert!(!weights.contains(&ParamId::Weight(WeightKind::Shear)));
    assert_shows(&screen(&app, 80, 24), &["strain", "volume", "tets"]);
    // The bottom plane pins the lowest vertices.
    app.on_key(ch('p'));
    app.on_key(ch('b'));
    let pinned = app.session.model().pins.hard_vertices().len();
    assert!(pinned > 1);
    assert_eq!(app.status, format!("{pinned} vertices pinned"));
}

/// A save over the preset's file that changed on disk since it was opened
/// asks first: `y` overwrites it, `r` reopens it, any other key leaves it
/// unsaved; on the way out, quitting waits for the answer.
#[test]
fn a_save_over_a_file_changed_elsewhere_asks_first() {
    let dir = scratch_dir("tui-changed-on-disk");
    let file = dir.join("cloth.toml");
    std::fs::copy(CLOTH, &file).unwrap();
    let change = |density: &str| {
        let text = std::fs::read_to_string(&file).unwrap();
        let (before, after) = text.split_once("density = ").unwrap();
        let rest = after.split_once('\n').unwrap().1;
        std::fs::write(&file, format!("{before}density = {density}\n{rest}")).unwrap();
    };
    let mut app = opened(file.to_str().unwrap());
    app.on_key(ch('+'));
    change("0.25");
    assert!(app.on_key(ch('s')));
    assert!(matches!(&app.mode, Mode::ChangedOnDisk { path, after: After::Stay } if *path == file));
    assert!(
        app.status
            .ends_with("changed on disk since it was opened or saved here"),
        "{}",
        app.status
    );
    assert_shows(
        &screen(&app, 100, 30),
        &["changed on disk", "overwrite it", "reopen it"],
    );
    // Any other key: left as it was changed.
    assert!(app.on_key(key(KeyCode::Esc)));
    assert_eq!(app.mode, Mode::Normal);
    assert!(app.session.is_dirty());
    assert_eq!(Preset::load(&file).unwrap().material.density, 0.25);
    // `y` overwrites.
    app.on_key(ch('s'));
    assert!(app.on_key(ch('y')));
    assert!(app.status.starts_with("saved"), "{}", app.status);
    assert!(!app.session.is_dirty());
    assert_eq!(Preset::load(&file).unwrap(), *app.session.preset());
    // `r` reopens, with the change.
    app.on_key(ch('+'));
    change("0.35");
    app.on_key(ch('s'));
    assert!(app.on_key(ch('r')));
    assert_eq!(app.session.preset().material.density, 0.35);
    assert!(!app.session.is_dirty());
    // Save and quit: the question first, then the quit once saved.
    app.on_key(ch('+'));
    change("0.45");
    app.on_key(ch('q'));
    assert!(app.on_key(ch('s')), "asked, not quit");
    assert!(
        matches!(
            app.mode,
            Mode::ChangedOnDisk {
                after: After::Quit,
                ..
            }
        ),
        "{:?}",
        app.mode
    );
    assert!(!app.on_key(ch('y')), "saved, so it quits");
    assert_eq!(Preset::load(&file).unwrap(), *app.session.preset());
}

#[test]
fn quitting_with_unsaved_changes_asks_first() {
    // Nothing unsaved: q quits at once.
    let mut app = cloth();
    assert_eq!(app.handle_key(ch('q')), Action::Quit);
    // Unsaved: q asks; any other key stays; d discards and quits.
    app.apply(Command::SetWeight(WeightKind::Bending, 3.0));
    assert_eq!(app.handle_key(ch('q')), Action::None);
    assert_eq!(app.mode, Mode::ConfirmQuit);
    assert!(screen(&app, 100, 30).contains("Unsaved changes"));
    assert_eq!(app.handle_key(key(KeyCode::Esc)), Action::None);
    assert_eq!(app.mode, Mode::Normal);
    app.handle_key(ch('q'));
    assert_eq!(app.handle_key(ch('d')), Action::Quit);
    // s saves and quits when the preset has a file...
    let dir = scratch_dir("tui-quit");
    let file = dir.join("cloth.toml");
    let mut app = cloth();
    app.apply(Command::Save(Some(file.clone())));
    app.apply(Command::SetWeight(WeightKind::Bending, 3.0));
    app.handle_key(ch('q'));
    assert!(!app.on_key(ch('s')), "saved, so it quits");
    assert_eq!(Preset::load(&file).unwrap().material.weights.bending, 3.0);
    // ...and asks for one when it has none (see
    // `save_and_quit_asks_for_a_path_when_there_is_no_file`).
    let mut app = untitled();
    app.apply(Command::SetWeight(WeightKind::Bending, 3.0));
    app.handle_key(ch('q'));
    assert!(app.on_key(ch('s')), "no file: it asks");
    assert!(matches!(app.mode, Mode::SaveAs { .. }), "{:?}", app.mode);
}

/// The offer says when the preset's file was saved since with other
/// changes, which recovering replaces.
#[test]
fn an_offer_says_the_file_was_saved_since() {
    use softbody::autosave::{Autosave, INTERVAL};
    let dir = scratch_dir("tui-recover-since");
    let file = dir.join("cloth.toml");
    std::fs::copy(CLOTH, &file).unwrap();
    let mut crashed = opened(file.to_str().unwrap());
    crashed.apply(Command::SetWeight(WeightKind::Bending, 7.0));
    let state = dir.join("state");
    Autosave::new(state.clone(), INTERVAL)
        .write(&crashed.session)
        .unwrap();
    let mut other = opened(file.to_str().unwrap());
    other.apply(Command::SetWeight(WeightKind::Shear, 70.0));
    other.apply(Command::Save(None));
    let app = opened(file.to_str().unwrap()).with_autosave(Autosave::new(state, INTERVAL));
    assert!(matches!(app.mode, Mode::Recover(_)));
    let text = screen(&app, 100, 30);
    assert_shows(&text, &["Its file was saved since, with other changes:"]);
}

#[test]
fn an_autosave_left_by_a_crash_is_offered_at_start() {
    use softbody::autosave::{Autosave, INTERVAL};
    let dir = scratch_dir("tui-recover");
    // A run that changed the bending weight, autosaved, and died.
    let mut crashed = cloth();
    crashed.apply(Command::SetWeight(WeightKind::Bending, 7.0));
    let crash = || {
        // Written, and the run's lock released as it ends.
        Autosave::new(dir.to_path_buf(), INTERVAL)
            .write(&crashed.session)
            .unwrap()
    };
    crash();

    let mut app = cloth().with_autosave(Autosave::new(dir.to_path_buf(), INTERVAL));
    assert!(matches!(app.mode, Mode::Recover(_)));
    assert!(screen(&app, 100, 30).contains("Recover unsaved changes?"));
    // Other keys keep the question up.
    assert_eq!(app.handle_key(ch(' ')), Action::None);
    assert!(matches!(app.mode, Mode::Recover(_)));
    // `r` says what it does before the model builds (seconds on a large
    // one, which showed the old values with nothing said), and a key
    // pressed before it is done is not acted on (an undo took the recovery
    // back: QA).
    app.handle_key(ch('r'));
    assert_eq!(app.mode, Mode::Normal);
    assert!(
        app.status.starts_with("recovering the autosaved changes"),
        "{}",
        app.status
    );
    assert_eq!(app.session.preset().material.weights.bending, 20.0);
    assert!(app.on_key(ch('u')));
    assert!(app.recover_chosen());
    assert!(!app.recover_chosen());
    app.dropped_keys(1);
    assert_eq!(
        app.status,
        "recovered the autosaved changes (2 keys pressed meanwhile ignored)"
    );
    assert_eq!(app.session.preset().material.weights.bending, 7.0);
    assert!(app.session.is_dirty());
    // Still unsaved: now in this run's autosave (the ended run's is gone),
    // which another start does not offer while this run is open; a clean
    // exit removes it.
    app.tick_autosave();
    assert_eq!(autosaves_in(&dir), 1);
    assert!(
        Autosave::new(dir.to_path_buf(), INTERVAL)
            .recovery()
            .is_none()
    );
    app.finish();
    assert_eq!(autosaves_in(&dir), 0);
    // Esc, as in every other question, decides nothing: the changes stay
    // for the next start (it used to discard them).
    crash();
    let mut app = cloth().with_autosave(Autosave::new(dir.to_path_buf(), INTERVAL));
    assert!(screen(&app, 100, 30).contains("decide at the next start"));
    app.handle_key(key(KeyCode::Esc));
    assert_eq!(app.mode, Mode::Normal);
    assert!(app.status.contains("kept"), "{}", app.status);
    assert_eq!(app.session.preset().material.weights.bending, 20.0);
    app.finish();
    drop(app);
    assert_eq!(autosaves_in(&dir), 1);
    // Declined with x: gone.
    let mut app = cloth().with_autosave(Autosave::new(dir.to_path_buf(), INTERVAL));
    assert!(matches!(app.mode, Mode::Recover(_)));
    app.handle_key(ch('x'));
    assert_eq!(app.session.preset().material.weights.bending, 20.0);
    assert!(
        Autosave::new(dir.to_path_buf(), INTERVAL)
            .recovery()
            .is_none()
    );
    assert_eq!(autosaves_in(&dir), 0);
}

/// The autosaved presets in `dir`.
fn autosaves_in(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "toml"))
        .count()
}

/// Ctrl-C is `q`: with unsaved changes it asks first, and a second Ctrl-C
/// at the question leaves with the changes kept in the autosave, which the
/// next run offers (it used to quit at once and delete the autosave).
#[test]
fn ctrl_c_asks_first_and_a_second_keeps_the_changes() {
    use softbody::autosave::{Autosave, INTERVAL};
    let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert_eq!(cloth().handle_key(ctrl_c), Action::Quit, "nothing unsaved");

    let dir = scratch_dir("tui-ctrl-c");
    let mut app = cloth().with_autosave(Autosave::new(dir.to_path_buf(), INTERVAL));
    app.apply(Command::SetWeight(WeightKind::Bending, 3.0));
    assert_eq!(app.handle_key(ctrl_c), Action::None);
    assert_eq!(app.mode, Mode::ConfirmQuit);
    assert!(screen(&app, 100, 30).contains("keeping them for the next run"));
    assert_eq!(app.farewell(), None);
    assert!(!app.on_key(ctrl_c), "the second Ctrl-C quits");
    assert_eq!(app.farewell(), Some(softbody::tui::app::KEPT_IN_AUTOSAVE));
    app.finish();
    let recovery = Autosave::new(dir.to_path_buf(), INTERVAL).recovery();
    let recovery = recovery.expect("the changes are kept for the next run");
    assert_eq!(recovery.preset.material.weights.bending, 3.0);
    // (An offer holds the ended run's lock, so no other start offers it.)
    drop(recovery);

    // Ctrl-C while the recovery is offered leaves it for the next run too.
    let mut app = cloth().with_autosave(Autosave::new(dir.to_path_buf(), INTERVAL));
    assert!(matches!(app.mode, Mode::Recover(_)));
    assert!(!app.on_key(ctrl_c));
    app.finish();
    drop(app);
    assert!(
        Autosave::new(dir.to_path_buf(), INTERVAL)
            .recovery()
            .is_some()
    );
}

/// Opening another preset with unsaved changes asks first: stay, discard
/// and open, or save and open.
#[test]
fn opening_with_unsaved_changes_asks_first() {
    let cotton = PathBuf::from("presets/cotton.toml");
    let choose_cotton = |app: &mut App| {
        app.handle_key(ch('o'));
        let Mode::Open { files, selected } = app.mode.clone() else {
            panic!("not choosing: {:?}", app.mode);
        };
        let at = files.iter().position(|f| *f == cotton).unwrap();
        for _ in at..selected {
            app.handle_key(key(KeyCode::Up));
        }
        for _ in selected..at {
            app.handle_key(key(KeyCode::Down));
        }
        app.handle_key(key(KeyCode::Enter))
    };
    let mut app = cloth();
    app.apply(Command::SetWeight(WeightKind::Bending, 3.0));
    assert_eq!(choose_cotton(&mut app), Action::None);
    assert_eq!(
        app.mode,
        Mode::ConfirmOpen {
            path: cotton.clone()
        }
    );
    assert!(screen(&app, 100, 30).contains("discard the changes and open"));
    // Any other key stays, changes intact.
    assert_eq!(app.handle_key(key(KeyCode::Esc)), Action::None);
    assert_eq!(app.session.path(), Some(Path::new(CLOTH)));
    assert!(app.session.is_dirty());
    // d discards and opens.
    choose_cotton(&mut app);
    assert_eq!(
        app.handle_key(ch('d')),
        Action::Apply(Command::Load(cotton.clone()))
    );
    // s saves, then opens.
    let dir = scratch_dir("tui-open-save");
    let file = dir.join("cloth.toml");
    let mut app = cloth();
    app.apply(Command::Save(Some(file.clone())));
    app.apply(Command::SetWeight(WeightKind::Bending, 3.0));
    choose_cotton(&mut app);
    assert!(app.on_key(ch('s')));
    assert_eq!(app.session.path(), Some(cotton.as_path()));
    assert_eq!(Preset::load(&file).unwrap().material.weights.bending, 3.0);
    // A preset without a file yet asks where to save it first (`s` used
    // to fail with "no file yet"); a save that fails stays on the changes.
    let mut app = untitled();
    app.apply(Command::SetWeight(WeightKind::Bending, 3.0));
    choose_cotton(&mut app);
    assert!(screen(&app, 100, 30).contains("save as…, then open"));
    assert!(app.on_key(ch('s')));
    assert!(matches!(&app.mode, Mode::SaveAs { after: After::Open(p), .. } if *p == cotton));
    assert!(screen(&app, 100, 30).contains("then open presets/cotton.toml"));
    app.handle_key(ctrl('u'));
    type_text(&mut app, &dir.join("sub/").display().to_string());
    assert!(app.on_key(key(KeyCode::Enter)));
    assert!(app.status.starts_with("error"), "{}", app.status);
    assert!(app.session.is_dirty());
    assert_eq!(app.session.path(), None);
    let named = dir.join("named.toml");
    choose_cotton(&mut app);
    app.on_key(ch('s'));
    app.handle_key(ctrl('u'));
    type_text(&mut app, &named.display().to_string());
    assert!(app.on_key(key(KeyCode::Enter)));
    assert_eq!(app.session.path(), Some(cotton.as_path()));
    assert_eq!(Preset::load(&named).unwrap().material.weights.bending, 3.0);
}

/// Quitting an untitled preset with unsaved changes: `s` asks where to
/// save it, then quits once it is saved (it used to fail with "no file
/// yet" and stay).
#[test]
fn save_and_quit_asks_for_a_path_when_there_is_no_file() {
    let mut app = untitled();
    app.apply(Command::SetWeight(WeightKind::Bending, 3.0));
    assert!(app.on_key(ch('q')));
    assert_eq!(app.mode, Mode::ConfirmQuit);
    assert!(screen(&app, 100, 30).contains("save as…, then quit"));
    assert!(app.on_key(ch('s')));
    assert_eq!(
        app.mode,
        Mode::SaveAs {
            text: "hanging_cloth.toml".to_owned(),
            after: After::Quit,
        }
    );
    assert!(screen(&app, 100, 30).contains("Save as, then quit"));
    let dir = scratch_dir("tui-save-quit");
    let file = dir.join("kept.toml");
    app.handle_key(ctrl('u'));
    type_text(&mut app, &file.display().to_string());
    assert!(!app.on_key(key(KeyCode::Enter)), "saved, then quits");
    assert_eq!(Preset::load(&file).unwrap().material.weights.bending, 3.0);
    assert!(!app.session.is_dirty());

    // Onto an existing preset: asked first, then saved and quit.
    let mut app = untitled();
    app.apply(Command::SetWeight(WeightKind::Bending, 4.0));
    app.on_key(ch('q'));
    app.on_key(ch('s'));
    app.handle_key(ctrl('u'));
    type_text(&mut app, &file.display().to_string());
    assert!(app.on_key(key(KeyCode::Enter)));
    assert_eq!(
        app.mode,
        Mode::ConfirmOverwrite {
            path: file.clone(),
            after: After::Quit,
        }
    );
    assert!(!app.on_key(ch('y')));
    assert_eq!(Preset::load(&file).unwrap().material.weights.bending, 4.0);
}

/// Save-as never replaces a file of another kind (the mesh), adds `.toml`
/// to a bare name, and asks before replacing another existing preset.
#[test]
fn save_as_protects_other_files() {
    let dir = scratch_dir("tui-save-as");
    let mesh = dir.join("sphere.obj");
    std::fs::copy("meshes/sphere.obj", &mesh).unwrap();
    let other = dir.join("other.toml");
    std::fs::write(&other, "version = 1\n").unwrap();
    let save_as = |app: &mut App, path: &Path| {
        app.handle_key(ch('S'));
        app.handle_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        type_text(app, &path.display().to_string());
        app.on_key(key(KeyCode::Enter))
    };
    let mut app = cloth();
    app.apply(Command::SetWeight(WeightKind::Bending, 3.0));
    save_as(&mut app, &mesh);
    assert!(
        app.status
            .contains("a preset file needs a name ending in .toml"),
        "{}",
        app.status
    );
    assert_eq!(
        std::fs::read(&mesh).unwrap(),
        std::fs::read("meshes/sphere.obj").unwrap()
    );
    // A bare name becomes a .toml preset.
    save_as(&mut app, &dir.join("bare"));
    assert_eq!(app.session.path(), Some(dir.join("bare.toml").as_path()));
    assert!(Preset::load(&dir.join("bare.toml")).is_ok());
    // Another existing preset: asked; any key but y keeps it.
    app.apply(Command::SetWeight(WeightKind::Bending, 4.0));
    save_as(&mut app, &other);
    assert_eq!(
        app.mode,
        Mode::ConfirmOverwrite {
            path: other.clone(),
            after: After::Stay,
        }
    );
    assert!(screen(&app, 100, 30).contains("replace it"));
    app.on_key(ch('n'));
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "version = 1\n");
    assert_eq!(
        app.status,
        format!("not saved: {} is kept", other.display())
    );
    save_as(&mut app, &other);
    app.on_key(ch('y'));
    assert_eq!(Preset::load(&other).unwrap().material.weights.bending, 4.0);
    // Its own file: saved without a question.
    app.apply(Command::SetWeight(WeightKind::Bending, 5.0));
    save_as(&mut app, &other);
    assert_eq!(app.mode, Mode::Normal);
    assert_eq!(Preset::load(&other).unwrap().material.weights.bending, 5.0);
    // `.toml` alone is no name (it saved as `.toml.toml`), and a file on
    // the way is named as such (it said "File exists").
    save_as(&mut app, &dir.join(".toml"));
    assert!(
        app.status
            .contains(".toml: a preset file needs a name ending in .toml"),
        "{}",
        app.status
    );
    assert!(!dir.join(".toml.toml").exists());
    // A read-only preset: refused at once (it asked whether to replace it,
    // then refused).
    let kept = dir.join("kept.toml");
    std::fs::write(&kept, "version = 1\n").unwrap();
    let mut permissions = std::fs::metadata(&kept).unwrap().permissions();
    permissions.set_readonly(true);
    std::fs::set_permissions(&kept, permissions).unwrap();
    save_as(&mut app, &kept);
    assert_eq!(app.mode, Mode::Normal);
    assert!(
        app.status.contains("the file is read-only"),
        "{}",
        app.status
    );
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "version = 1\n");
    save_as(&mut app, &other.join("x.toml"));
    assert!(
        app.status
            .contains(&format!("{} is a file, not a directory", other.display())),
        "{}",
        app.status
    );
}

/// Steps waiting on a slow model go to the background when another key
/// comes, and that key waits for them: a quit right after `-` asks about
/// the unsaved change, an undo undoes the steps (it used to act on the
/// session before them: the quit left without asking, losing the change).
#[test]
fn a_key_after_steps_in_the_background_sees_them() {
    let mut app = cloth();
    app.background = true;
    app.live_refactor_ms = 0.0;
    let weight = |app: &App| app.session.preset().material.weights.structural;
    assert!(app.on_key(ch('-')));
    assert!(app.on_key(ch('q')), "the quit waits for the step");
    assert!(app.is_busy());
    until_idle(&mut app);
    assert!(weight(&app) < 1000.0);
    assert!(app.session.is_dirty());
    assert!(
        matches!(app.mode, Mode::ConfirmQuit),
        "asks about the unsaved change: {:?}",
        app.mode
    );
    app.on_key(key(KeyCode::Esc));

    let stepped = weight(&app);
    for _ in 0..2 {
        assert!(app.on_key(ch('-')));
    }
    assert!(app.on_key(ch('u')));
    until_idle(&mut app);
    assert_eq!(weight(&app), stepped, "the undo took back the two steps");
    assert!(app.on_key(ch('U')));
    until_idle(&mut app);
    assert!(weight(&app) < stepped, "and redo brings them back");
}

/// Steps `app`'s background work until it is in (at most 30 s).
fn until_idle(app: &mut App) {
    let start = std::time::Instant::now();
    while app.is_busy() {
        assert!(start.elapsed().as_secs() < 30, "still busy");
        assert!(app.collect_work());
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// With background work on (the terminal UI's `run` has it), a change that
/// factorises a slow model applies on a copy of the session on a thread of
/// its own: the session stays as it was, keys pressed meanwhile wait and
/// are handled after it, in order; opening a preset goes there too.
#[test]
fn slow_changes_apply_in_the_background_and_keys_wait() {
    let mut app = cloth();
    app.background = true;
    // Every factorisation counts as slow.
    app.live_refactor_ms = 0.0;
    let refactors = app.session.solver().factor_stats().refactors;
    assert!(app.apply(Command::SetWeight(WeightKind::Structural, 250.0)));
    assert!(app.is_busy());
    // A frame step and undo wait; nothing changes meanwhile.
    assert!(app.on_key(ch('n')));
    assert!(app.on_key(ch('u')));
    app.advance(Duration::from_millis(50));
    assert_eq!(app.session.state().frame, 0);
    assert_eq!(app.session.preset().material.weights.structural, 1000.0);
    until_idle(&mut app);
    // The weight came in, then the step, then the undo (itself in the
    // background, being a preset change on a slow model).
    assert_eq!(app.session.state().frame, 1);
    assert_eq!(app.session.preset().material.weights.structural, 1000.0);
    assert_eq!(app.session.solver().factor_stats().refactors, refactors + 2);
    assert!(
        app.status.starts_with("undid structural weight "),
        "{}",
        app.status
    );

    // A typed value the session refuses there opens its field again with
    // it, as it does when refused at once.
    app.on_key(key(KeyCode::Enter));
    type_text(&mut app, "-1");
    assert!(app.on_key(key(KeyCode::Enter)));
    assert!(app.is_busy());
    until_idle(&mut app);
    assert!(app.status.starts_with("error:"), "{}", app.status);
    assert_eq!(
        app.mode,
        Mode::Edit {
            param: ParamId::Weight(WeightKind::Structural),
            text: "-1".to_owned(),
        }
    );
    app.on_key(key(KeyCode::Esc));

    app.live_refactor_ms = f64::INFINITY;
    assert!(app.apply(Command::Load("presets/jelly.toml".into())));
    assert!(app.is_busy());
    // A quit pressed meanwhile quits once it is in.
    assert!(app.on_key(ch('q')));
    let start = std::time::Instant::now();
    let mut quit = false;
    while app.is_busy() {
        assert!(start.elapsed().as_secs() < 30, "still busy");
        quit = !app.collect_work();
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(quit, "the held q quits");
    assert_eq!(app.status, "opened Jelly");
    assert!(!app.session.model().tets.is_empty());
}

/// In a narrow terminal a parameter's label gives way to its value (the
/// value was cut silently: the jelly's strain weight 20000 read "2000"),
/// and the energy legend keeps every name (its values go first).
#[test]
fn a_narrow_terminal_cuts_labels_not_values() {
    let app = opened("presets/jelly.toml");
    let wide = screen(&app, 120, 40);
    assert!(wide.contains("strain       20000"), "{wide}");
    for width in [20, 24, 30] {
        let text = screen(&app, width, 12);
        assert!(text.contains("20000"), "{width} columns:\n{text}");
        assert!(!text.contains("2000 "), "{width} columns:\n{text}");
    }
    let text = screen(&app, 60, 20);
    assert_shows(&text, &["kin", "grav", "elast", "total"]);
    // Narrower still, the names that do not fit give way to "…" (the
    // legend read "kin grav ela").
    let text = screen(&app, 40, 12);
    assert!(
        text.contains("kin grav …") && !text.contains(" ela"),
        "{text}"
    );
}

/// A mesh's import warnings are on the status line when it opens (they
/// were never shown), and after "opened" when another opens.
#[test]
fn the_meshs_warnings_are_on_the_status_line() {
    let dir = scratch_dir("tui-mesh-note");
    let file = dir.join("twice.obj");
    std::fs::write(&file, DUPLICATED_FACE_OBJ).unwrap();
    let (session, _) = Session::open_or_default(Some(&file)).unwrap();
    let app = app_on(session);
    assert_eq!(app.status, "the mesh: dropped 1 duplicate triangle");
    let mut app = cloth();
    app.apply(Command::Load(file));
    assert_eq!(
        app.status,
        "opened twice; the mesh: dropped 1 duplicate triangle"
    );
}

/// `M` steps through the library's materials for the build kind, as the
/// editor's buttons apply them; `B` builds the mesh as tetrahedra or as
/// springs, saying what the tetrahedraliser guessed.
#[test]
fn materials_and_the_build_kind_switch_from_the_keyboard() {
    let mut app = cloth();
    assert!(app.on_key(ch('M')));
    assert_eq!(app.status, "denim material");
    let denim = softbody::preset::library::materials()
        .iter()
        .find(|m| m.name == "denim")
        .unwrap();
    assert!(denim.is_in(app.session.preset()));
    assert!(app.session.is_dirty());
    app.on_key(ch('u'));
    assert_eq!(app.session.preset().material.density, 0.15);
    // A grid is cloth: no tets, and the reason.
    assert!(app.on_key(ch('B')));
    assert!(app.status.contains("a grid is cloth"), "{}", app.status);
    assert_eq!(app.session.preset().build.kind, BuildKind::Springs);

    let (session, _) = Session::open_or_default(Some(Path::new("meshes/sleeve.obj"))).unwrap();
    let mut app = app_on(session);
    assert!(app.on_key(ch('B')));
    assert_eq!(app.session.preset().build.kind, BuildKind::Tets);
    assert!(
        app.status
            .starts_with("built as tetrahedra; the mesh: the surface is open"),
        "{}",
        app.status
    );
    assert!(app.on_key(ch('M')));
    assert_eq!(app.status, "jelly material");
    assert!(app.on_key(ch('B')));
    assert_eq!(app.session.preset().build.kind, BuildKind::Springs);
    assert_eq!(app.status, "built as springs");
    // A shipped tet preset, with its own resolution, goes to springs too
    // (it said the resolution applies only to tets).
    let mut app = opened("presets/jelly.toml");
    assert!(app.on_key(ch('B')));
    assert_eq!(
        app.session.preset().build.kind,
        BuildKind::Springs,
        "{}",
        app.status
    );
}

/// A mesh file's scale is the last entry of the list (a grid has none):
/// `-` divides it by ten, shown at once and built once the keys stop, the
/// body a tenth its size.
#[test]
fn the_scale_steps_by_ten_and_builds_once_the_keys_stop() {
    assert!(!cloth().params().contains(&ParamId::Scale));
    let (session, _) = Session::open_or_default(Some(Path::new("meshes/sphere.obj"))).unwrap();
    let mut app = app_on(session);
    let params = app.params();
    assert_eq!(params.last(), Some(&ParamId::Scale));
    for _ in 1..params.len() {
        app.on_key(key(KeyCode::Down));
    }
    assert_eq!(app.selected_param(), ParamId::Scale);
    let width = |app: &App| {
        let x = app.session.model().rest.iter().map(|p| p.x);
        x.clone().fold(f64::MIN, f64::max) - x.fold(f64::MAX, f64::min)
    };
    let before = width(&app);
    app.on_key(ch('-'));
    assert_eq!(app.value(ParamId::Scale), 0.1);
    assert_eq!(app.session.preset().build.scale, 1.0, "not built per key");
    assert_eq!(
        app.status,
        "scale 0.1: applies when the keys stop (the model is built again)"
    );
    assert_shows(&screen(&app, 80, 24), &["scale"]);
    app.settle(Duration::ZERO);
    assert_eq!(app.session.preset().build.scale, 0.1);
    assert!(
        (width(&app) - 0.1 * before).abs() < 1e-12,
        "{}",
        width(&app)
    );
    assert_eq!(app.session.undo_len(), 1);
}

/// A step its bound cut short is not retraced: the scale stepped from 500
/// up to its largest, 1,000, steps down from there to 100 (it went back to
/// 500, QA), while an exact step still comes back to where it was.
#[test]
fn a_step_cut_short_by_its_bound_steps_back_from_the_bound() {
    let (session, _) = Session::open_or_default(Some(Path::new("meshes/sphere.obj"))).unwrap();
    let mut app = app_on(session);
    for _ in 1..app.params().len() {
        app.on_key(key(KeyCode::Down));
    }
    assert_eq!(app.selected_param(), ParamId::Scale);
    app.on_key(key(KeyCode::Enter));
    type_text(&mut app, "500");
    app.on_key(key(KeyCode::Enter));
    app.settle(Duration::ZERO);
    assert_eq!(app.value(ParamId::Scale), 500.0);
    app.on_key(ch('+'));
    assert_eq!(app.value(ParamId::Scale), 1000.0);
    app.on_key(ch('-'));
    assert_eq!(app.value(ParamId::Scale), 100.0);
    app.on_key(ch('+'));
    assert_eq!(app.value(ParamId::Scale), 1000.0);
    app.on_key(ch('-'));
    app.on_key(ch('-'));
    app.on_key(ch('+'));
    assert_eq!(app.value(ParamId::Scale), 100.0);
}

/// A text field edits at its cursor, as readline does: ← → Home End (and
/// Ctrl-A, Ctrl-E) move it, typing inserts there, Backspace and Delete take
/// the character before and after, Ctrl-U all before and Ctrl-K all after;
/// the cursor shows on its character, and the next field opens at the end.
#[test]
fn a_text_field_edits_at_its_cursor() {
    let mut app = untitled();
    app.handle_key(ch('s'));
    let text = |app: &App| match &app.mode {
        Mode::SaveAs { text, .. } => text.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(text(&app), "hanging_cloth.toml");
    app.handle_key(key(KeyCode::Home));
    type_text(&mut app, "my_");
    assert_eq!(text(&app), "my_hanging_cloth.toml");
    app.handle_key(key(KeyCode::End));
    for _ in 0..5 {
        app.handle_key(key(KeyCode::Left));
    }
    type_text(&mut app, "2");
    assert_eq!(text(&app), "my_hanging_cloth2.toml");
    // The cursor on the `.`, reversed.
    let buffer = {
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        terminal.draw(|frame| ui::render(frame, &app)).unwrap();
        terminal.backend().buffer().clone()
    };
    let reversed: Vec<&str> = buffer
        .content()
        .iter()
        .filter(|c| c.modifier.contains(ratatui::style::Modifier::REVERSED))
        .map(|c| c.symbol())
        .collect();
    assert!(reversed.contains(&"."), "{reversed:?}");
    app.handle_key(key(KeyCode::Delete));
    assert_eq!(text(&app), "my_hanging_cloth2toml");
    app.handle_key(key(KeyCode::Backspace));
    assert_eq!(text(&app), "my_hanging_clothtoml");
    app.handle_key(key(KeyCode::Right));
    app.handle_key(ctrl('k'));
    assert_eq!(text(&app), "my_hanging_clotht");
    app.handle_key(ctrl('a'));
    app.handle_key(key(KeyCode::Right));
    app.handle_key(ctrl('w'));
    assert_eq!(text(&app), "y_hanging_clotht");
    app.handle_key(ctrl('e'));
    app.handle_key(key(KeyCode::Left));
    app.handle_key(ctrl('u'));
    assert_eq!(text(&app), "t");
    app.handle_key(key(KeyCode::Esc));
    app.handle_key(ch('s'));
    type_text(&mut app, "x");
    assert_eq!(text(&app), "hanging_cloth.tomlx", "a new field at its end");
}

/// Steps waiting to apply, and then applying in the background, show
/// their value and mark the preset unsaved (QA: on the 100,000-vertex body
/// the list went back to the old value for the 3 s its refactorisation
/// took, and the header lost its `*`, as if the change were undone).
#[test]
fn steps_applying_in_the_background_show_their_value_and_a_star() {
    let mut app = cloth();
    app.background = true;
    // Every factorisation counts as slow.
    app.live_refactor_ms = 0.0;
    let param = ParamId::Weight(WeightKind::Structural);
    let header = |app: &App| screen(app, 80, 24).lines().next().unwrap().to_owned();
    assert!(
        header(&app).starts_with(" Hanging cloth │"),
        "{}",
        header(&app)
    );
    for _ in 0..3 {
        app.on_key(ch('+'));
    }
    let stepped = app.value(param);
    assert_eq!(stepped, 5623.42);
    assert!(
        header(&app).starts_with(" Hanging cloth* │"),
        "{}",
        header(&app)
    );
    app.settle(Duration::ZERO);
    assert!(app.is_busy());
    assert_eq!(app.session.preset().material.weights.structural, 1000.0);
    assert_eq!(app.value(param), stepped);
    assert!(
        header(&app).starts_with(" Hanging cloth* │"),
        "{}",
        header(&app)
    );
    assert_shows(&screen(&app, 80, 24), &[&format_value(stepped)]);
    until_idle(&mut app);
    assert_eq!(app.session.preset().material.weights.structural, stepped);
    assert_eq!(app.value(param), stepped);
    // Undone: clean again.
    app.on_key(ch('u'));
    until_idle(&mut app);
    assert_eq!(app.value(param), 1000.0);
    assert!(
        header(&app).starts_with(" Hanging cloth │"),
        "{}",
        header(&app)
    );
}

/// A text field longer than the screen scrolls to keep its cursor and the
/// end of its text in view, marking where it is cut (QA: at 60 columns the
/// end of a long path and the cursor were hidden, and a typo there was
/// saved unseen).
#[test]
fn a_long_text_field_keeps_its_cursor_in_view() {
    let mut app = untitled();
    app.handle_key(ch('S'));
    app.handle_key(ctrl('u'));
    type_text(
        &mut app,
        "out/some/long/directory/name/for/testing/my_preset_final.toml",
    );
    for _ in 0..5 {
        app.handle_key(key(KeyCode::Backspace));
    }
    type_text(&mut app, "json");
    let field_row = |app: &App, width: u16| {
        let shown = screen(app, width, 15);
        let mut rows = shown.lines().skip_while(|l| !l.contains("Save as"));
        let row = rows.nth(1).map(str::to_owned);
        row.unwrap_or_else(|| panic!("no field in\n{shown}"))
    };
    // The end typed, then the cursor's block after it, in the box.
    let row = field_row(&app, 60);
    assert!(
        row.contains("…me/long/directory/name/for/testing/my_preset_finaljson█ │"),
        "{row}"
    );
    // At its start, the start shows, cut after.
    app.handle_key(key(KeyCode::Home));
    let row = field_row(&app, 60);
    assert!(row.contains("│ out/some/long/"), "{row}");
    assert!(row.trim_end().ends_with("… │"), "{row}");
    assert!(!row.contains("finaljson"), "{row}");
    // In the middle of a text longer than the field, some of what comes
    // before the cursor shows too (what Backspace and Ctrl-W delete).
    for _ in 0.."out/some/long/directory/".len() {
        app.handle_key(key(KeyCode::Right));
    }
    let row = field_row(&app, 40);
    assert!(row.starts_with("│ …rectory/name/for/"), "{row}");
    assert!(row.trim_end().ends_with("… │"), "{row}");
}

/// The pin-group field lists the mesh's groups to choose from (a wrong name
/// used to be the only way to learn them).
#[test]
fn the_pin_group_field_lists_the_groups() {
    let (session, _) = Session::open_or_default(Some(Path::new("meshes/sphere.obj"))).unwrap();
    let mut app = app_on(session);
    app.handle_key(ch('p'));
    app.handle_key(ch('g'));
    assert_shows(&screen(&app, 80, 24), &["Pin group", "groups: sphere"]);
    let mut app = cloth();
    app.handle_key(ch('p'));
    app.handle_key(ch('g'));
    assert_shows(&screen(&app, 80, 24), &["the mesh has no groups"]);
}

/// Without colours (`NO_COLOR`) the energy series differ by their markers,
/// named in the legend; with colours they keep the braille lines.
#[test]
fn without_colours_the_energy_series_differ_by_marker() {
    let mut app = cloth();
    app.session.apply(Command::Step(20)).unwrap();
    let coloured = screen(&app, 100, 30);
    assert!(coloured.contains("└kin "), "{coloured}");
    assert!(!coloured.contains('•'), "{coloured}");
    app.no_color = true;
    let plain = screen(&app, 100, 30);
    assert_shows(&plain, &["•kin", "▄grav", "█elast", "⠶total"]);
    // The kinetic line is drawn in dots, the elastic one in blocks (not in
    // the half blocks of the gravitational one's bars).
    let chart: String = plain.lines().skip(17).collect();
    assert!(chart.contains('•'), "{plain}");
    assert!(chart.matches('█').count() > 1, "{plain}");
    assert!(!chart.contains('▀'), "{plain}");
}

/// A text field's keys fit the screen, shorter where it is narrow (at 40
/// columns the hint was cut after "Home En": QA), and a path's field says
/// how to start a whole path again.
#[test]
fn a_field_s_hint_fits_the_screen() {
    let mut app = cloth();
    app.on_key(key(KeyCode::Enter));
    assert_shows(
        &screen(&app, 100, 30),
        &["Enter confirm, Esc cancel, ←→ Home End move, Ctrl-U clear"],
    );
    assert_shows(
        &screen(&app, 50, 24),
        &["Enter confirm, Esc cancel, Ctrl-U clear"],
    );
    assert_shows(&screen(&app, 40, 24), &["Enter, Esc, Ctrl-U clear"]);
    app.on_key(key(KeyCode::Esc));
    app.on_key(ch('S'));
    assert_shows(&screen(&app, 40, 24), &["// starts again at /, ~/ at home"]);
}

/// On the Linux console (`TERM=linux`), whose fonts have no braille, the
/// preview and the energy lines plot in half blocks (QA: both were braille,
/// which such a console cannot show).
#[test]
fn without_braille_the_plots_are_drawn_in_half_blocks() {
    let mut app = cloth();
    app.session.apply(Command::Step(20)).unwrap();
    let is_braille = |c: char| ('\u{2800}'..='\u{28ff}').contains(&c);
    let shown = screen(&app, 100, 30);
    assert!(shown.chars().any(is_braille), "{shown}");
    app.braille = false;
    let shown = screen(&app, 100, 30);
    assert!(!shown.chars().any(is_braille), "{shown}");
    let [preview, chart] = [2..15, 17..27]
        .map(|rows| (shown.lines().skip(rows.start).take(rows.len())).collect::<String>());
    for plot in [&preview, &chart] {
        assert!(plot.contains(['▀', '▄', '█']), "{shown}");
    }
    app.no_color = true;
    let plain = screen(&app, 100, 30);
    assert!(!plain.chars().any(is_braille), "{plain}");
    assert_shows(&plain, &["•kin", "▄grav", "█elast", "+total"]);
    let chart: String = plain.lines().skip(17).take(10).collect();
    assert!(chart.contains('+') && !chart.contains('▀'), "{plain}");
}
/// However short the terminal, the header (playing or paused) and the
/// status line (a save's outcome) stay on screen: below 10 rows the body's
/// 8 took both.
#[test]
fn a_short_terminal_keeps_the_header_and_the_status_line() {
    let mut app = cloth();
    app.status = "saved here".into();
    for (width, height) in [(30, 8), (20, 5), (80, 6), (80, 3)] {
        let text = screen(&app, width, height);
        let rows: Vec<&str> = text.lines().collect();
        assert!(rows[0].contains("❚❚"), "{width}x{height}:\n{text}");
        assert!(
            rows[rows.len() - 1].starts_with(" saved here"),
            "{width}x{height}:\n{text}"
        );
    }
}
