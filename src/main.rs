//! The `softbody` binary: parses the command line and dispatches.
//!
//! Exit codes: 0 success, 1 runtime failure, 2 bad input, 128 + the
//! signal's number when stopped by one (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP).

use std::process::ExitCode;

use clap::Parser;
use softbody::mesh::{self, ImportOptions, ValidateOptions};
use softbody::model::Springs;

mod cli;

use cli::{Cli, Command};

/// A failure with the exit code it maps to.
enum Failure {
    BadInput(anyhow::Error),
    Runtime(anyhow::Error),
    /// Stopped by a signal ([`softbody::signals`]), cleanly: what became of
    /// the work.
    Stopped(String),
    /// Standard output was closed by its reader (`softbody bench | head -1`):
    /// nothing more to say, as for any Unix filter.
    Closed,
}

impl Failure {
    /// A failed write to standard output.
    fn output(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Self::Closed
        } else {
            Self::Runtime(anyhow::anyhow!("cannot write to standard output: {e}"))
        }
    }
}

/// `print!` that returns a failed write (a closed pipe) as a [`Failure`]
/// instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        write!(std::io::stdout().lock(), $($arg)*).map_err(Failure::output)?;
    }};
}

/// `println!` that returns a failed write as a [`Failure`] (see [`out!`]).
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*).map_err(Failure::output)?;
    }};
}

/// `eprintln!` that ignores a failed write: a standard error whose reader
/// has gone (a log pipe that died: a broken pipe) must not end a command, let alone
/// a bake, with a panic.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

fn main() -> ExitCode {
    // Before any other thread starts (see `signals::take`).
    if let Err(e) = softbody::signals::take() {
        errln!("error: cannot take the stop signals: {e}");
        return ExitCode::from(1);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return mistyped_subcommand(&e).unwrap_or_else(|| e.exit()),
    };
    if let Some(threads) = cli.threads.filter(|&t| t > 0) {
        // The work is split for the threads asked for (the frames are
        // theirs, on any machine), but more threads than CPUs only compete
        // for them: every split they wait on waits for a descheduled thread
        // (the 60 × 60 cloth baked 25× slower with 1,024).
        let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let pool = threads.min(cpus);
        if threads > cpus {
            let split = threads.min(softbody::solver::MAX_PARTS);
            errln!(
                "note: --threads {threads} is more than the {cpus} logical CPUs here: \
                 {cpus} run the work, split for {split} (the frames of --threads {threads} \
                 anywhere)"
            );
        }
        softbody::solver::set_default_threads(threads);
        if let Err(e) = rayon::ThreadPoolBuilder::new()
            .num_threads(pool)
            .build_global()
        {
            errln!("error: cannot start {pool} threads: {e}");
            return ExitCode::from(1);
        }
    }
    let result = match (cli.command, cli.file) {
        (Some(command), None) => run(command, cli.threads),
        (Some(_), Some(file)) => Err(Failure::BadInput(anyhow::anyhow!(
            "{} comes before the subcommand: give it after it (`softbody gui FILE`)",
            file.display()
        ))),
        (None, Some(file)) if !file.exists() => Err(not_a_file_or_subcommand(&file)),
        (None, file) => match default_front_end() {
            #[cfg(feature = "gui")]
            FrontEnd::Gui => gui(file.clone(), None, None, Vec::new()).or_else(|e| match e {
                // No window after all: the terminal UI, else the help.
                GuiFailure::NoWindow(msg) => {
                    errln!("the editor cannot open a window ({msg})");
                    fallback(file)
                }
                GuiFailure::Other(f) => Err(f),
            }),
            #[cfg(feature = "tui")]
            FrontEnd::Tui => tui(file),
            FrontEnd::Help => match file {
                // A file to open and nowhere to show it: the terminal UI
                // says what it needs.
                #[cfg(feature = "tui")]
                Some(file) => tui(Some(file)),
                #[cfg(not(feature = "tui"))]
                Some(file) => Err(Failure::Runtime(anyhow::anyhow!(
                    "{}: this build has neither the editor nor the terminal UI to open it in",
                    file.display()
                ))),
                None => help_without_a_front_end(),
            },
        },
    };
    match result {
        Ok(()) | Err(Failure::Closed) => ExitCode::SUCCESS,
        Err(Failure::BadInput(e)) => {
            errln!("error: {e:#}");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(e)) => {
            errln!("error: {e:#}");
            ExitCode::from(1)
        }
        Err(Failure::Stopped(what)) => {
            errln!("stopped: {what}");
            ExitCode::from(softbody::signals::exit_status())
        }
    }
}

/// Prints the command-line help.
fn help() -> Result<(), Failure> {
    use clap::CommandFactory;
    let _ = Cli::command().print_help();
    Ok(())
}

/// What plain `softbody` (with a `file` to open, or none) starts when the
/// editor cannot: the terminal UI on a terminal, else the help.
#[cfg(feature = "gui")]
fn fallback(file: Option<std::path::PathBuf>) -> Result<(), Failure> {
    #[cfg(feature = "tui")]
    {
        use std::io::IsTerminal;
        if std::io::stdout().is_terminal() && !dumb_terminal() {
            return tui(file);
        }
    }
    #[cfg(not(feature = "tui"))]
    let _ = file;
    help_without_a_front_end()
}

/// The help, where plain `softbody` opens no front end; on a `TERM=dumb`
/// terminal with a line saying why (QA: the help alone said nothing of it).
fn help_without_a_front_end() -> Result<(), Failure> {
    help()?;
    #[cfg(feature = "tui")]
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) && dumb_terminal() {
        errln!(
            "(the terminal UI needs a terminal that can move its cursor, and TERM is `dumb`: \
             set TERM, e.g. TERM=xterm-256color, to open it)"
        );
    }
    Ok(())
}

/// The error for `softbody WORD` where `WORD` is no file: a missing file
/// (said before the terminal UI says it has no terminal), or no subcommand
/// either (`softbody bak`, a typo of a subcommand named as one).
fn not_a_file_or_subcommand(word: &std::path::Path) -> Failure {
    use clap::CommandFactory;
    if word.extension().is_some() {
        return Failure::BadInput(anyhow::anyhow!("{}: no such file", word.display()));
    }
    let text = word.to_string_lossy();
    let closest = Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_owned())
        .min_by(|a, b| strsim::levenshtein(a, &text).cmp(&strsim::levenshtein(b, &text)))
        .filter(|name| strsim::levenshtein(name, &text) <= 2);
    let hint = closest.map_or_else(
        || " (see `softbody --help`)".to_owned(),
        |name| format!("; did you mean `softbody {name}`?"),
    );
    Failure::BadInput(anyhow::anyhow!(
        "`{text}` is neither a file nor a subcommand{hint}"
    ))
}

/// For a command line clap refused because a word it took for `FILE` had
/// arguments after it (`softbody inspct mesh.obj`: "unexpected argument
/// 'mesh.obj' found"), the error of that word when it is no file: a typo
/// of a subcommand is named as one. Its exit status once said.
fn mistyped_subcommand(e: &clap::Error) -> Option<ExitCode> {
    if e.kind() != clap::error::ErrorKind::UnknownArgument {
        return None;
    }
    let mut args = std::env::args_os().skip(1);
    let word = loop {
        let arg = args.next()?;
        match arg.to_str() {
            // The global option's value is not the word.
            Some("--threads") => {
                args.next();
            }
            Some(flag) if flag.starts_with('-') => {}
            _ => break std::path::PathBuf::from(arg),
        }
    };
    // (A subcommand's own unknown argument keeps clap's words: `inspect
    // x.toml --jsn` is told of `--json`.)
    use clap::CommandFactory as _;
    let subcommand = (word.to_str()).is_some_and(|w| Cli::command().find_subcommand(w).is_some());
    if word.exists() || subcommand {
        return None;
    }
    let Failure::BadInput(error) = not_a_file_or_subcommand(&word) else {
        return None;
    };
    errln!("error: {error:#}");
    Some(ExitCode::from(2))
}

/// What plain `softbody` (no subcommand) starts.
enum FrontEnd {
    /// The editor window.
    #[cfg(feature = "gui")]
    Gui,
    /// The terminal UI.
    #[cfg(feature = "tui")]
    Tui,
    /// The command-line help.
    Help,
}

/// The front end for plain `softbody`: the editor when a display is
/// available (`DISPLAY` or `WAYLAND_DISPLAY` set; if the window still
/// cannot open, [`fallback`] takes over), else the terminal UI when stdout
/// is a terminal that can draw it (not `TERM=dumb`), else the help, so
/// scripts piping `softbody` still get it.
fn default_front_end() -> FrontEnd {
    #[cfg(feature = "gui")]
    if softbody::gui::display_available() {
        return FrontEnd::Gui;
    }
    #[cfg(feature = "tui")]
    {
        use std::io::IsTerminal;
        if std::io::stdout().is_terminal() && !dumb_terminal() {
            return FrontEnd::Tui;
        }
    }
    FrontEnd::Help
}

/// Whether `TERM` is `dumb` (Emacs's shell, some consoles): such a terminal
/// moves no cursor, and a full-screen UI's escapes arrive there as text.
#[cfg(feature = "tui")]
fn dumb_terminal() -> bool {
    std::env::var_os("TERM").is_some_and(|t| t == "dumb")
}

/// `softbody tui`: a preset that does not load is bad input, a terminal
/// failure a runtime one.
#[cfg(feature = "tui")]
fn tui(preset: Option<std::path::PathBuf>) -> Result<(), Failure> {
    use softbody::tui::{self, TuiError};
    use std::io::IsTerminal;
    if dumb_terminal() {
        return Err(Failure::Runtime(anyhow::anyhow!(
            "the terminal UI needs a terminal that can move its cursor, and TERM is `dumb`: \
             run it in a terminal emulator or set TERM (e.g. TERM=xterm-256color); \
             `softbody bake` simulates a preset without one"
        )));
    }
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        // (Raw mode failed with "No such device or address (os error 6)".)
        return Err(Failure::Runtime(anyhow::anyhow!(
            "the terminal UI needs a terminal for its input and output; \
             for runs without one, `softbody bake` simulates a preset to files"
        )));
    }
    tui::run(preset).map_err(|e| match e {
        TuiError::Session(e) => Failure::BadInput(e.into()),
        TuiError::Terminal(e) => Failure::Runtime(e.into()),
        TuiError::Stopped(what) => Failure::Stopped(what),
    })
}

/// How `softbody gui` failed: no window (plain `softbody` falls back), or
/// a failure with its exit code.
#[cfg(feature = "gui")]
enum GuiFailure {
    NoWindow(String),
    Other(Failure),
}

/// `softbody gui`: a scene that does not load is bad input; no window or a
/// failed screenshot check a runtime failure.
#[cfg(feature = "gui")]
fn gui(
    file: Option<std::path::PathBuf>,
    frames: Option<usize>,
    screenshot: Option<std::path::PathBuf>,
    overlays: Vec<softbody::gui::overlay::OverlayName>,
) -> Result<(), GuiFailure> {
    use softbody::gui::{self, GuiError, Options};
    if let Some(path) = &screenshot {
        // Checked before the frames play (they used to play first, and a
        // `.jpg` then emptied the file of that name).
        gui::capture::check_screenshot_path(path)
            .map_err(|e| GuiFailure::Other(Failure::BadInput(anyhow::anyhow!(e))))?;
    }
    let frames = frames.or(screenshot.as_ref().map(|_| 30));
    let options = Options {
        frames,
        screenshot,
        overlays,
    };
    gui::run(file, options).map_err(|e| match e {
        GuiError::Session(e) => GuiFailure::Other(Failure::BadInput(e.into())),
        GuiError::Window(msg) => GuiFailure::NoWindow(msg),
        e @ GuiError::Check(_) => GuiFailure::Other(Failure::Runtime(e.into())),
    })
}

fn run(command: Command, threads: Option<usize>) -> Result<(), Failure> {
    match command {
        #[cfg(feature = "gui")]
        Command::Gui {
            file,
            frames,
            screenshot,
            overlay,
        } => gui(file, frames, screenshot, overlay).map_err(|e| match e {
            GuiFailure::NoWindow(msg) => {
                Failure::Runtime(anyhow::anyhow!("cannot open the editor window: {msg}"))
            }
            GuiFailure::Other(f) => f,
        }),
        #[cfg(feature = "tui")]
        Command::Tui { preset } => tui(preset),
        Command::Inspect { file, json, weld }
            if file
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("toml")) =>
        {
            if weld.is_some() {
                return Err(Failure::BadInput(anyhow::anyhow!(
                    "{}: --weld applies to OBJ files; a preset's mesh is welded with the default",
                    file.display()
                )));
            }
            inspect_preset(&file, json)
        }
        Command::Inspect { file, json, weld } => {
            let validate = ValidateOptions {
                weld_relative: weld.unwrap_or(ValidateOptions::default().weld_relative),
            };
            let (surface, mut report) = mesh::load_obj(&file, &ImportOptions::default(), &validate)
                .map_err(|e| Failure::BadInput(e.into()))?;
            if let Some(crossing) = softbody::model::tetra::crossing_warning(&surface) {
                report.warnings.push(match report.volume {
                    Some(_) => format!(
                        "{crossing}: its volume counts overlapping parts twice (as tets they \
                         are filled once, as their union)"
                    ),
                    None => crossing,
                });
            }
            let springs = Springs::from_surface(&surface);
            if json {
                let mut value =
                    serde_json::to_value(&report).map_err(|e| Failure::Runtime(e.into()))?;
                value["springs"] = serde_json::json!({
                    "structural": springs.structural.len(),
                    "shear": springs.shear.len(),
                    "bending": springs.bending.len(),
                });
                outln!("{value}");
            } else {
                out!("{report}");
                outln!(
                    "  springs:     {} structural, {} shear, {} bending",
                    springs.structural.len(),
                    springs.shear.len(),
                    springs.bending.len()
                );
            }
            Ok(())
        }
        Command::Bake {
            preset,
            frames,
            out,
            every,
        } => bake(&preset, frames, out, every),
        Command::Tetrahedralize {
            file,
            output,
            resolution,
            json,
        } => tetrahedralize(&file, output.as_deref(), resolution, json),
        Command::Bench {
            scene,
            frames: _,
            acceleration: _,
            precision: _,
            warmup: _,
            json,
            accuracy: true,
            steps,
            every,
            max_iterations,
        } => bench_accuracy(
            scene.as_deref(),
            [steps.unwrap_or(5), every.unwrap_or(10)],
            json,
            threads,
            max_iterations.unwrap_or(500),
        ),
        Command::Bench {
            scene,
            frames,
            warmup,
            json,
            acceleration,
            precision,
            steps,
            every,
            max_iterations,
            ..
        } => {
            let accuracy_only = [
                ("--steps", steps),
                ("--every", every),
                ("--max-iterations", max_iterations),
            ]
            .into_iter()
            .find_map(|(name, value)| value.map(|_| name));
            if let Some(name) = accuracy_only {
                use clap::CommandFactory;
                let mut command = Cli::command();
                command.build();
                let bench = command
                    .find_subcommand_mut("bench")
                    .expect("bench is a subcommand");
                bench
                    .error(
                        clap::error::ErrorKind::MissingRequiredArgument,
                        format!("{name} measures accuracy: it needs --accuracy"),
                    )
                    .exit();
            }
            bench(
                scene.as_deref(),
                (acceleration.unwrap_or_default(), precision),
                frames,
                warmup,
                json,
                threads,
            )
        }
    }
}

/// `inspect` of a preset: the built model's counts and factor size.
fn inspect_preset(file: &std::path::Path, json: bool) -> Result<(), Failure> {
    use softbody::param::ParamId;
    use softbody::preset::Preset;
    use softbody::solver::Solver;
    let bad = |e: softbody::preset::PresetError| Failure::BadInput(e.into());
    let loaded = Preset::load_reporting(file).map_err(bad)?;
    let built = loaded
        .preset
        .build(file)
        .map_err(|e| bad(e.with_line_from_file()))?;
    let solver = Solver::new(&built.model, &built.params)
        .map_err(|e| Failure::BadInput(anyhow::anyhow!("{}: {e}", file.display())))?;
    let factor = solver.factor_stats();
    let summary = built.summary();
    // What the preset sets, as the terminal UI lists it (QA: inspect said
    // nothing of the weights, the time step or the pin rules).
    let preset = &loaded.preset;
    let settings: Vec<(ParamId, f64)> = ParamId::for_model(preset, &built.model)
        .into_iter()
        .map(|p| (p, p.value(preset)))
        .collect();
    let rules = |selectors: &[softbody::preset::Selector]| -> Vec<String> {
        selectors
            .iter()
            .map(softbody::preset::Selector::describe)
            .collect()
    };
    let (hard, soft) = (rules(&preset.pins.hard), rules(&preset.pins.soft));
    let sim = &preset.sim;
    if json {
        let mut value = serde_json::to_value(summary).map_err(|e| Failure::Runtime(e.into()))?;
        // (Keys in snake case, as the rest: `strain_limit`, `gravity_y`.)
        value["settings"] = (settings.iter())
            .map(|&(p, v)| {
                let v = match p {
                    ParamId::Iterations => serde_json::json!(sim.iterations),
                    _ => serde_json::json!(v),
                };
                (p.label().replace(' ', "_"), v)
            })
            .collect();
        value["acceleration"] = serde_json::json!(sim.acceleration.name());
        value["guess"] = serde_json::json!(sim.guess_name());
        value["pin_rules"] = serde_json::json!({ "hard": hard, "soft": soft });
        value["file"] = serde_json::json!(file.display().to_string());
        value["name"] = serde_json::json!(loaded.preset.name);
        value["migrated_from"] = serde_json::json!(loaded.migrated_from);
        value["factor_nnz"] = serde_json::json!(factor.factor_nnz);
        value["mixed_precision"] = serde_json::json!(factor.mixed_precision);
        value["relaxed"] = serde_json::json!(factor.relaxed);
        value["warnings"] = serde_json::json!(built.warnings);
        outln!("{value}");
    } else {
        match loaded.preset.name.as_str() {
            "" => outln!("{}", file.display()),
            // One line: its control characters (a newline, a carriage
            // return that rewinds the line) were printed raw.
            name => outln!(
                "{} ({})",
                file.display(),
                name.replace(char::is_control, " ")
            ),
        }
        if let Some(version) = loaded.migrated_from {
            outln!("  migrated from format version {version}");
        }
        out!("{summary}");
        outln!(
            "  factor:      {} unknowns, {} non-zeros in L ({})",
            factor.unknowns,
            factor.factor_nnz,
            factor.precision().describe()
        );
        let shown: Vec<String> = (settings.iter())
            .map(|&(p, v)| format!("{} {}", p.label(), softbody::param::format_value(v)))
            .collect();
        outln!("  settings:    {}", shown.join(", "));
        outln!(
            "  solver:      {} iterations from the {} guess",
            sim.acceleration,
            sim.guess_name()
        );
        let listed = |rules: &[String]| match rules {
            [] => "none".to_owned(),
            rules => rules.join("; "),
        };
        outln!(
            "  pin rules:   hard: {}; soft: {}",
            listed(&hard),
            listed(&soft)
        );
        // What the mesh's import repaired and the build had to guess (as
        // the editor and the terminal UI say on opening it).
        if !built.warnings.is_empty() {
            outln!("  warnings:");
            for w in &built.warnings {
                outln!("    - {w}");
            }
        }
    }
    Ok(())
}

fn bake(
    file: &std::path::Path,
    frames: usize,
    out: std::path::PathBuf,
    every: usize,
) -> Result<(), Failure> {
    use softbody::bake::{self, BakeOptions, Progress};
    use softbody::preset::Preset;
    use softbody::signals;

    let bad = |e: softbody::preset::PresetError| Failure::BadInput(e.into());
    if softbody::session::is_obj(file) {
        // (Read as TOML, it failed as "invalid TOML" on its first line.)
        return Err(Failure::BadInput(anyhow::anyhow!(
            "{}: bake takes a preset (.toml), not a mesh: open the OBJ with \
             `softbody gui` or `softbody tui`, pin it and save a preset",
            file.display()
        )));
    }
    // Before the build, which can take long.
    bake::check_out(&out).map_err(|e| Failure::BadInput(e.into()))?;
    let preset = Preset::load(file).map_err(bad)?;
    let built = preset
        .build(file)
        .map_err(|e| bad(e.with_line_from_file()))?;
    // Said before a bake that may take hours, as `inspect` says them (and
    // kept in the summary).
    for warning in &built.warnings {
        errln!("{}: warning: {warning}", file.display());
    }
    // Until the first frame is done a stop has nothing to keep, and the
    // set-up (a factorisation) cannot be interrupted between frames. Set
    // before the handler exists: a stop in between was taken as one after
    // frame 0 (CI).
    signals::AT_ONCE.store(true, std::sync::atomic::Ordering::SeqCst);
    // Ctrl-C, SIGTERM and SIGHUP stop after the frame.
    signals::install(Some(signals::Notices {
        // (Said for SIGTERM and SIGHUP too: no Ctrl-C was pressed there.)
        first: "stopping after the current frame (what is written stays complete; \
                a second stop request, such as Ctrl-C, stops at once, without the summary)",
        // (The bake may have finished its summary while the request came.)
        second: "stopped at once: the OBJ frames and energy rows written are complete; \
                 the summary is there only if the bake had already written it",
        at_once: "stopped at once: nothing was simulated yet",
    }))
    .map_err(|e| Failure::Runtime(e.into()))?;
    let stem = file
        .file_stem()
        .map_or_else(|| "frame".into(), |s| s.to_string_lossy().into_owned());
    let options = BakeOptions {
        frames,
        every,
        out,
        stem,
        inputs: preset.mesh_file(file).into_iter().collect(),
    };
    let bar = terminal_bar(
        frames as u64,
        "{bar:40} {pos}/{len} frames  {frame_rate}  ETA {eta}",
        // (indicatif's `{per_sec}` read `24.2942/s`.)
        |style| {
            style.with_key(
                "frame_rate",
                |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.1} frames/s", state.per_sec());
                },
            )
        },
    );
    // Without a terminal: a plain line every tenth of the way.
    let step = frames.div_ceil(10).max(1);
    let show = |p: Progress| match &bar {
        Some(bar) => bar.set_position(p.frame as u64),
        None if p.frame.is_multiple_of(step) || p.frame == p.frames => errln!(
            "frame {}/{} ({:.0}%), {:.1} s elapsed, ETA {:.1} s",
            p.frame,
            p.frames,
            100.0 * p.frame as f64 / p.frames as f64,
            p.elapsed,
            p.eta()
        ),
        None => {}
    };
    let progress = |p: Progress| {
        signals::AT_ONCE.store(false, std::sync::atomic::Ordering::SeqCst);
        show(p)
    };
    let name = softbody::preset::shown_name(&preset.name, Some(file));
    let summary =
        bake::bake(&built, &name, &options, &signals::STOP, progress).map_err(|e| match e {
            // The preset's model (as `inspect` says, with the same code).
            bake::BakeError::Solver(_) => {
                Failure::BadInput(anyhow::anyhow!("{}: {e}", file.display()))
            }
            // The user's file where the bake would write: another --out.
            bake::BakeError::Foreign(_)
            | bake::BakeError::Input(_)
            | bake::BakeError::NotADirectory { .. } => Failure::BadInput(e.into()),
            // The others name the file or directory they are about.
            _ => Failure::Runtime(e.into()),
        })?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    // A bake stopped early says so first (QA: "0 frames in 0.01 s, 1 OBJ
    // file" read as a success above the blow-up).
    let simulated = match &summary.stopped {
        Some(_) => format!(
            "stopped after {} of {} frame{}",
            summary.frames,
            summary.frames_requested,
            if summary.frames_requested == 1 {
                ""
            } else {
                "s"
            }
        ),
        None => format!(
            "{} frame{}",
            summary.frames,
            if summary.frames == 1 { "" } else { "s" }
        ),
    };
    outln!(
        "{}: {simulated} in {:.2} s ({:.2} ms per frame in the solver), {} OBJ file{}, {} and {} in {}",
        file.display(),
        summary.seconds,
        summary.frame_ms_median,
        summary.objs_written,
        if summary.objs_written == 1 { "" } else { "s" },
        file_name(&options.energy_path()),
        file_name(&options.summary_path()),
        options.out.display()
    );
    if let Some(peak) = summary.peak_resident_bytes {
        outln!("peak memory {}", softbody::solver::memory::size(peak));
    }
    if summary.earlier_objs_removed > 0 {
        outln!(
            "removed {} OBJ frame{} of an earlier bake of {} from {}",
            summary.earlier_objs_removed,
            if summary.earlier_objs_removed == 1 {
                ""
            } else {
                "s"
            },
            options.stem,
            options.out.display()
        );
    }
    match summary.stopped {
        None => Ok(()),
        Some(reason) if signals::requested() => Err(Failure::Stopped(format!(
            "{reason}; what was written is complete"
        ))),
        Some(reason) => Err(Failure::Runtime(anyhow::anyhow!(
            "{}: {reason}; frames up to the last good one were written",
            file.display()
        ))),
    }
}

fn tetrahedralize(
    file: &std::path::Path,
    output: Option<&std::path::Path>,
    resolution: usize,
    json: bool,
) -> Result<(), Failure> {
    use softbody::model::tetra::{self, QualityReport, TetraOptions};
    if let Some(out) = output {
        // Before the work: a bad name is not found a minute later.
        mesh::check_tet_output(out).map_err(|e| Failure::BadInput(e.into()))?;
        if let Some(why) = out.parent().and_then(softbody::fsutil::no_directory_there) {
            return Err(Failure::BadInput(anyhow::anyhow!(
                "{}: {why}",
                out.display()
            )));
        }
    }
    let (surface, imported) =
        mesh::load_obj(file, &ImportOptions::default(), &ValidateOptions::default())
            .map_err(|e| Failure::BadInput(e.into()))?;
    let result = tetra::tetrahedralize(&surface, &TetraOptions { resolution }).map_err(|e| {
        Failure::BadInput(anyhow::anyhow!(
            "{}: cannot tetrahedralise: {e}",
            file.display()
        ))
    })?;
    let mut report = QualityReport::new(&surface, &result, resolution);
    // The import's repairs after the tetrahedraliser's guesses, as a tet
    // build says them (faces it turned outwards read "warnings: none").
    report.warnings.extend(imported.warnings);
    if let Some(out) = output {
        // Its directory is made if missing, as a bake's and a save's are.
        softbody::fsutil::create_dir_of(out)
            .map_err(|m| Failure::Runtime(anyhow::anyhow!("{}: {m}", out.display())))?;
        mesh::write_tet_mesh(out, &result.mesh, mesh::MshVersion::default())
            .map_err(|e| Failure::Runtime(e.into()))?;
    }
    if json {
        print_json(&report)?;
    } else {
        outln!("{}", file.display());
        out!("{report}");
    }
    Ok(())
}

/// The scene named on the command line, or `default`.
fn bench_scenes(
    scene: Option<&str>,
    default: Vec<softbody::bench::Scene>,
) -> Result<Vec<softbody::bench::Scene>, Failure> {
    use softbody::bench::Scene;
    match scene {
        Some(name) => Ok(vec![Scene::by_name(name).ok_or_else(|| {
            Failure::BadInput(anyhow::anyhow!(
                "no scene '{name}' (unknown, or out of range): use cloth30, cloth60, cloth100, cloth150, clothN ({} ≤ N ≤ {}), tet12, tet22, jelly16, or tetN or jellyN ({} ≤ N ≤ {})",
                Scene::CLOTH_RANGE.start(),
                Scene::CLOTH_RANGE.end(),
                Scene::TET_RANGE.start(),
                Scene::TET_RANGE.end(),
            ))
        })?]),
        None => Ok(default),
    }
}

/// `bench --accuracy`: time to 1e-3 and 1e-5 against Newton per method.
fn bench_accuracy(
    scene: Option<&str>,
    [steps, every]: [usize; 2],
    json: bool,
    threads: Option<usize>,
    max_iterations: usize,
) -> Result<(), Failure> {
    use softbody::bench;
    use softbody::solver::{Acceleration, SimParams};
    let runtime = |e: softbody::solver::SolverError| Failure::Runtime(e.into());
    let scenes = bench_scenes(scene, bench::accuracy_scenes())?;
    if !json {
        outln!("machine: {}", bench::Machine::this());
        outln!(
            "{:<8} {:<10} {:<12} {:>7} {:>10} {:>9} {:>10} {:>9} {:>12} {:>8} {:>10}",
            "scene",
            "method",
            "guess",
            "threads",
            "ms→1e-3",
            "its→1e-3",
            "ms→1e-5",
            "its→1e-5",
            format!(
                "err@{} its",
                SimParams::default().iterations.min(max_iterations)
            ),
            "ρ",
            "Newton ms"
        );
    }
    let cell =
        |v: Option<f64>| v.map_or_else(|| format!(">{max_iterations}its"), |v| format!("{v:.2}"));
    let count = |v: Option<usize>| v.map_or_else(|| "–".into(), |v| v.to_string());
    let sampling = bench::Sampling {
        steps: steps.max(1),
        every,
        max_iterations,
    };
    for scene in &scenes {
        let mut baseline_and_default = [None, None];
        let results = with_stages(&scene.name, |show| {
            bench::accuracy(scene, threads, sampling, show)
        })
        .map_err(runtime)?;
        for (method, r) in bench::ACCURACY_METHODS.into_iter().zip(results) {
            if method == bench::ACCURACY_METHODS[0] {
                baseline_and_default[0] = r.ms_to_1e3;
            }
            if method == (Acceleration::default(), SimParams::default().extrapolates()) {
                baseline_and_default[1] = r.ms_to_1e3;
            }
            if json {
                print_json(&r)?;
            } else {
                outln!(
                    "{:<8} {:<10} {:<12} {:>7} {:>10} {:>9} {:>10} {:>9} {:>12.3e} {:>8} {:>10.1}",
                    r.scene,
                    r.method,
                    r.guess,
                    r.threads,
                    cell(r.ms_to_1e3),
                    count(r.iterations_to_1e3),
                    cell(r.ms_to_1e5),
                    count(r.iterations_to_1e5),
                    r.error_at_default,
                    r.spectral_radius
                        .map_or_else(|| "–".into(), |r| format!("{r:.4}")),
                    r.newton_ms
                );
            }
        }
        if let ([Some(plain), Some(default)], false) = (baseline_and_default, json) {
            // (A tiny scene where plain PD wins reads "slower", not "0.74× faster".)
            let ratio = if plain >= default {
                format!("{:.2}× faster", plain / default)
            } else {
                format!("{:.2}× slower", default / plain)
            };
            outln!(
                "{}: the default ({}, {}) reaches 1e-3 {ratio} than plain PD from the \
                 inertial guess",
                scene.name,
                Acceleration::default(),
                SimParams::default().guess_name(),
            );
        }
    }
    Ok(())
}

/// Runs `work` (`bench --accuracy` on one scene, minutes), showing the
/// stages it reports on standard error: on a terminal a spinner with the
/// time elapsed, the stage and what it does (cleared when it ends, before
/// the results are printed); otherwise a line per report.
fn with_stages<R>(
    scene: &str,
    work: impl FnOnce(&mut dyn FnMut(softbody::bench::Stage)) -> R,
) -> R {
    use softbody::bench::{ACCURACY_STAGES, Stage};
    let started = std::time::Instant::now();
    let bar = terminal_bar(
        ACCURACY_STAGES as u64,
        "{spinner} {elapsed_precise} stage {pos}/{len}: {wide_msg}",
        |s| s,
    );
    if let Some(bar) = &bar {
        // Once a second, as the time shown changes: the timing stages
        // share the two cores with it.
        bar.enable_steady_tick(std::time::Duration::from_secs(1));
    }
    let mut show = |stage: Stage| match &bar {
        Some(bar) => {
            bar.set_position(stage.stage as u64);
            bar.set_message(format!("{scene}: {}", stage.what));
        }
        None => errln!(
            "{scene}: stage {}/{ACCURACY_STAGES} at {:.0} s: {}",
            stage.stage,
            started.elapsed().as_secs_f64(),
            stage.what
        ),
    };
    let result = work(&mut show);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    result
}

/// A progress bar of `len` steps drawn on standard error with `template`
/// (and what `style` adds to it) when standard error is a terminal;
/// `None` otherwise, where the caller prints plain lines instead.
fn terminal_bar(
    len: u64,
    template: &str,
    style: impl FnOnce(indicatif::ProgressStyle) -> indicatif::ProgressStyle,
) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal().then(|| {
        let template = indicatif::ProgressStyle::with_template(template).expect("a valid template");
        indicatif::ProgressBar::new(len).with_style(style(template))
    })
}

/// Prints `value` as one line of JSON.
fn print_json(value: &impl serde::Serialize) -> Result<(), Failure> {
    outln!(
        "{}",
        serde_json::to_string(value).map_err(|e| Failure::Runtime(e.into()))?
    );
    Ok(())
}

fn bench(
    scene: Option<&str>,
    (acceleration, precision): (softbody::solver::Acceleration, softbody::solver::Precision),
    frames: usize,
    warmup: usize,
    json: bool,
    threads: Option<usize>,
) -> Result<(), Failure> {
    use softbody::bench::{self, Scene};
    let mut scenes = bench_scenes(scene, Scene::standard())?;
    for s in &mut scenes {
        s.acceleration = acceleration;
        s.precision = precision;
    }
    if !json {
        outln!("machine: {}", bench::Machine::this());
        outln!(
            "{:<10} {:>7} {:>8} {:>7} {:>10} {:>6} {:>7} {:>9} {:>9} {:>10} {:>9} {:>9} {:>10} {:>6} {:>8} {:>8}",
            "scene",
            "nodes",
            "springs",
            "tets",
            "accel",
            "iters",
            "threads",
            "setup ms",
            "factor ms",
            "frame ms",
            "local ms",
            "global ms",
            "L nnz",
            "L",
            "RSS",
            "peak"
        );
    }
    let bytes = |b: Option<u64>| b.map_or_else(|| "–".into(), softbody::solver::memory::size);
    // (0 is the default, as `--help` says: it printed the default's row only.)
    let thread_counts = match threads {
        Some(t) if t > 0 => vec![t],
        _ => vec![1, 0],
    };
    for (s, &t) in scenes
        .iter()
        .flat_map(|s| thread_counts.iter().map(move |t| (s, t)))
    {
        let r = bench::run(s, frames, warmup, t).map_err(|e| Failure::Runtime(e.into()))?;
        if json {
            print_json(&r)?;
        } else {
            outln!(
                "{:<10} {:>7} {:>8} {:>7} {:>10} {:>6} {:>7} {:>9.2} {:>9.2} {:>10.3} {:>9.3} {:>9.3} {:>10} {:>6} {:>8} {:>8}",
                r.scene,
                r.nodes,
                r.springs,
                r.tets,
                r.acceleration,
                r.iterations,
                r.threads,
                r.setup_ms,
                r.factor_ms,
                r.frame_ms_median,
                r.local_ms_median,
                r.global_ms_median,
                r.factor_nnz,
                r.precision,
                bytes(r.resident_bytes),
                bytes(r.peak_resident_bytes)
            );
        }
    }
    Ok(())
}

/// The file name of `path`, for a message (the whole path if it has none).
fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy()
        .into_owned()
}
