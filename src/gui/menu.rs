//! The menu bar and the keyboard shortcuts. Both push [`Request`]s; every
//! shortcut is named in its menu entry and in the controls window.

use std::path::PathBuf;

use eframe::egui::{self, Key, KeyboardShortcut, Modifiers};

use super::overlay::Overlays;
use super::panels::{PinAs, Request};
use crate::command::Command;
use crate::session::Session;

/// The keys and mouse buttons, for the Help ▸ Controls window.
pub const CONTROLS: [(&str, &str); 19] = [
    ("Space", "play / pause"),
    ("S", "step one frame"),
    ("R", "reset to rest"),
    ("F", "frame all"),
    ("Esc", "clear the selection"),
    ("P / Shift+P / U", "pin / soft-pin / unpin the selection"),
    ("Ctrl+Z / Ctrl+Shift+Z or Ctrl+Y", "undo / redo"),
    ("Ctrl+O", "open a preset or OBJ"),
    ("Ctrl+S / Ctrl+Shift+S", "save / save as"),
    ("Ctrl+Q", "quit (asks first when there are unsaved changes)"),
    ("right drag, Alt+left drag", "orbit"),
    ("middle drag, Shift+right drag", "pan"),
    ("wheel", "zoom"),
    ("left click", "select a vertex"),
    ("left drag (Select tool)", "box select"),
    ("left drag (Brush tool)", "paint the selection"),
    ("Shift / Ctrl + select", "add / remove"),
    (
        "left drag on the mesh while playing",
        "grab and pull a vertex",
    ),
    ("drop a file on the window", "open it"),
];

/// The shortcuts pressed this frame (none while a text field has focus).
/// Returns the requests and whether Esc was pressed (not when it closes an
/// open menu).
pub fn shortcuts(ctx: &egui::Context) -> (Vec<Request>, bool) {
    let mut out = Vec::new();
    if ctx.egui_wants_keyboard_input() {
        return (out, false);
    }
    let popup_open = egui::Popup::is_any_open(ctx);
    let escape = ctx.input_mut(|i| {
        let ctrl_shift = Modifiers::COMMAND | Modifiers::SHIFT;
        // Most modifiers first: a shortcut matches with extra Shift too.
        let chords: [(Modifiers, Key, Request); 7] = [
            (ctrl_shift, Key::Z, Request::Command(Command::Redo)),
            (ctrl_shift, Key::S, Request::SaveAsDialog),
            (Modifiers::COMMAND, Key::Y, Request::Command(Command::Redo)),
            (Modifiers::COMMAND, Key::Z, Request::Command(Command::Undo)),
            (Modifiers::COMMAND, Key::S, Request::Save),
            (Modifiers::COMMAND, Key::O, Request::OpenDialog),
            (Modifiers::COMMAND, Key::Q, Request::Quit),
        ];
        for (modifiers, key, request) in chords {
            if i.consume_shortcut(&KeyboardShortcut::new(modifiers, key)) {
                out.push(request);
            }
        }
        let keys: [(Modifiers, Key, Request); 7] = [
            (Modifiers::SHIFT, Key::P, Request::PinSelection(PinAs::Soft)),
            (
                Modifiers::NONE,
                Key::Space,
                Request::Command(Command::TogglePlay),
            ),
            (Modifiers::NONE, Key::S, Request::Command(Command::Step(1))),
            (Modifiers::NONE, Key::R, Request::Command(Command::Reset)),
            (Modifiers::NONE, Key::F, Request::FrameAll),
            (Modifiers::NONE, Key::P, Request::PinSelection(PinAs::Hard)),
            (Modifiers::NONE, Key::U, Request::PinSelection(PinAs::Free)),
        ];
        for (modifiers, key, request) in keys {
            if i.consume_key(modifiers, key) {
                out.push(request);
            }
        }
        // Esc closes an open menu first (egui's, which looks for it after
        // this), and only then clears the selection.
        !popup_open && i.consume_key(Modifiers::NONE, Key::Escape)
    });
    (out, escape)
}

/// The menu bar: File, Edit, View, Simulation, Help.
pub fn menu_bar(
    ui: &mut egui::Ui,
    session: &Session,
    recent: &[PathBuf],
    (overlays, selected): (&mut Overlays, usize),
    show_controls: &mut bool,
    out: &mut Vec<Request>,
) {
    let item = |ui: &mut egui::Ui, label: &str, keys: &str, enabled: bool| {
        // (An empty shortcut named the item "Quit " for screen readers.)
        let button = match keys {
            "" => egui::Button::new(label),
            keys => egui::Button::new(label).shortcut_text(keys),
        }
        // Never wrapped: an open menu keeps its first width, and "Pause"
        // (wider than the "Play" it was opened with) read "Pau / se".
        .wrap_mode(egui::TextWrapMode::Extend);
        ui.add_enabled(enabled, button).clicked()
    };
    egui::MenuBar::new().ui(ui, |ui| {
        ui.menu_button("File", |ui| {
            if item(ui, "Open…", "Ctrl+O", true) {
                out.push(Request::OpenDialog);
            }
            ui.menu_button("Open recent", |ui| {
                if recent.is_empty() {
                    ui.label("(none yet)");
                }
                for path in recent {
                    if ui.button(path.display().to_string()).clicked() {
                        out.push(Request::Open(path.clone()));
                    }
                }
            });
            if item(ui, "Save", "Ctrl+S", true) {
                out.push(Request::Save);
            }
            if item(ui, "Save as…", "Ctrl+Shift+S", true) {
                out.push(Request::SaveAsDialog);
            }
            ui.separator();
            if item(ui, "Quit", "Ctrl+Q", true) {
                out.push(Request::Quit);
            }
        });
        ui.menu_button("Edit", |ui| {
            if item(ui, "Undo", "Ctrl+Z", session.undo_len() > 0) {
                out.push(Request::Command(Command::Undo));
            }
            if item(ui, "Redo", "Ctrl+Shift+Z", session.redo_len() > 0) {
                out.push(Request::Command(Command::Redo));
            }
            ui.separator();
            for (label, keys, how) in [
                ("Pin selection", "P", PinAs::Hard),
                ("Soft-pin selection", "Shift+P", PinAs::Soft),
                ("Unpin selection", "U", PinAs::Free),
            ] {
                if item(ui, label, keys, selected > 0) {
                    out.push(Request::PinSelection(how));
                }
            }
        });
        ui.menu_button("View", |ui| {
            if item(ui, "Frame all", "F", true) {
                out.push(Request::FrameAll);
            }
            ui.separator();
            overlay_toggles(ui, overlays, !session.model().tets.is_empty());
        });
        ui.menu_button("Simulation", |ui| {
            let play = if session.is_playing() {
                "Pause"
            } else {
                "Play"
            };
            if item(ui, play, "Space", true) {
                out.push(Request::Command(Command::TogglePlay));
            }
            if item(ui, "Step", "S", true) {
                out.push(Request::Command(Command::Step(1)));
            }
            if item(ui, "Reset", "R", true) {
                out.push(Request::Command(Command::Reset));
            }
        });
        ui.menu_button("Help", |ui| {
            if ui.button("Controls").clicked() {
                *show_controls = true;
            }
        });
        ui.separator();
        ui.label(session.name());
        if session.is_dirty() {
            ui.label("(modified)");
        }
    });
}

/// The overlay checkboxes (the View menu and the viewport's toolbar).
pub fn overlay_toggles(ui: &mut egui::Ui, overlays: &mut Overlays, has_tets: bool) {
    ui.checkbox(&mut overlays.wireframe, "Wireframe");
    ui.checkbox(&mut overlays.springs, "Springs by strain");
    ui.checkbox(&mut overlays.bending, "Bending springs");
    if overlays.springs || overlays.bending {
        ui.add(
            egui::Slider::new(&mut overlays.strain_scale, 1e-4..=0.5)
                .logarithmic(true)
                .text("strain for full colour"),
        );
    }
    ui.add_enabled_ui(has_tets, |ui| {
        ui.checkbox(&mut overlays.tets, "Tetrahedra");
        if overlays.tets {
            ui.add(egui::Slider::new(&mut overlays.tet_scale, 0.2..=1.0).text("tet size"));
            ui.checkbox(&mut overlays.cut_away, "Cut away the near half");
        }
    });
    ui.checkbox(&mut overlays.pins, "Pins and targets");
    ui.checkbox(&mut overlays.colliders, "Colliders and ground");
    ui.checkbox(&mut overlays.selection, "Selection");
}

/// The controls window (Help ▸ Controls).
pub fn controls_window(ctx: &egui::Context, open: &mut bool) {
    egui::Window::new("Controls")
        .open(open)
        .resizable(false)
        .show(ctx, |ui| {
            egui::Grid::new("controls").num_columns(2).show(ui, |ui| {
                for (keys, what) in CONTROLS {
                    ui.strong(keys);
                    ui.label(what);
                    ui.end_row();
                }
            });
        });
}
