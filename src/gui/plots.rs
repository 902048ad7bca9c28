//! The graphs panel (egui_plot): the energies over a scrolling time window
//! — kinetic, gravitational, each elastic constraint type the model has,
//! and the total; click a legend entry to hide or show its series — and
//! the PD objective against the iteration for the latest frame
//! (convergence). Hovering shows the values.

use eframe::egui;
use egui_plot::{HoverPosition, Legend, Line, Plot, PlotPoints, Points};

use super::panels::Request;
use crate::model::Model;
use crate::session::{Frame, History, Session};
use crate::solver::Energies;

/// Seconds of simulated time the energy graph shows.
pub const WINDOW_SECONDS: f64 = 10.0;

/// One energy series: its name, whether the model has it, its value.
struct Series {
    name: &'static str,
    present: fn(&Model) -> bool,
    value: fn(&Energies) -> f64,
}

const fn series(
    name: &'static str,
    present: fn(&Model) -> bool,
    value: fn(&Energies) -> f64,
) -> Series {
    Series {
        name,
        present,
        value,
    }
}

/// The energy series in legend order.
const SERIES: [Series; 10] = [
    series("kinetic", |_| true, |e| e.kinetic),
    series("gravitational", |_| true, |e| e.gravitational),
    series(
        "structural",
        |m| !m.springs.structural.is_empty(),
        |e| e.structural,
    ),
    series("shear", |m| !m.springs.shear.is_empty(), |e| e.shear),
    series("bending", |m| !m.springs.bending.is_empty(), |e| e.bending),
    series("attachment", |_| true, |e| e.attachment),
    series("strain", |m| !m.tets.is_empty(), |e| e.strain),
    series("strain limit", |m| !m.tets.is_empty(), |e| e.strain_limit),
    series("volume", |m| !m.tets.is_empty(), |e| e.volume),
    series("total", |_| true, Energies::total),
];

/// The names of the energy series drawn for `model`, in legend order.
pub fn series_names(model: &Model) -> Vec<&'static str> {
    SERIES
        .iter()
        .filter(|s| (s.present)(model))
        .map(|s| s.name)
        .collect()
}

/// The frames within [`WINDOW_SECONDS`] of the newest.
fn window(history: &History) -> impl Iterator<Item = &Frame> {
    let frames = history.frames();
    let newest = frames.back().map_or(0.0, |f| f.time);
    let start = frames.partition_point(|f| f.time < newest - WINDOW_SECONDS);
    frames.range(start..)
}

fn hover_label(
    unit: &'static str,
    x_name: &'static str,
) -> impl Fn(&HoverPosition<'_>) -> Option<String> {
    move |pos| match pos {
        HoverPosition::NearDataPoint {
            plot_name,
            position,
            ..
        } => Some(format!(
            "{plot_name}\n{x_name} = {:.3}\n{:.5e} {unit}",
            position.x, position.y
        )),
        HoverPosition::Elsewhere { .. } => None,
    }
}

/// Draws the energy graph (left, wide) and the convergence graph (right)
/// with the accuracy figure.
pub fn show(ui: &mut egui::Ui, session: &Session, out: &mut Vec<Request>) {
    let width = ui.available_width();
    let height = ui.available_height();
    ui.horizontal(|ui| {
        ui.allocate_ui(egui::vec2(width * 0.68, height), |ui| {
            energy(ui, session.model(), session.history())
        });
        ui.separator();
        ui.allocate_ui(egui::vec2(ui.available_width(), height), |ui| {
            ui.vertical(|ui| {
                accuracy(ui, session, out);
                convergence(ui, session.history());
            });
        });
    });
}

/// The accuracy figure and the button that measures it.
fn accuracy(ui: &mut egui::Ui, session: &Session, out: &mut Vec<Request>) {
    ui.horizontal(|ui| {
        if let Some(running) = session.measuring_for() {
            ui.add(egui::Spinner::new());
            ui.label(format!(
                "measuring (a Newton solve, {} s)…",
                running.as_secs()
            ));
            if ui
                .button("Cancel")
                .on_hover_text("Stop the Newton solve and free its memory")
                .clicked()
            {
                out.push(Request::CancelAccuracy);
            }
            return;
        }
        if session.is_stopping() {
            ui.add(egui::Spinner::new());
            ui.label("stopping the cancelled Newton solve…");
            return;
        }
        if ui
            .button("Measure accuracy")
            .on_hover_text(
                "Solve the next step exactly (Newton) and show how far the PD step lands \
                 from it, and how many iterations 1e-3 and 1e-5 would take",
            )
            .clicked()
        {
            out.push(Request::MeasureAccuracy);
        }
        match session.accuracy() {
            // Cut to the panel's width (it pushed the plot out of the
            // window), whole on hover.
            Some((frame, accuracy)) => {
                let text = format!("frame {frame}: {accuracy}");
                ui.add(egui::Label::new(&text).truncate())
                    .on_hover_text(text)
            }
            None => ui.weak("not measured"),
        };
    });
}

/// A plot that follows its data: no scrolling, zooming or dragging; axis
/// labels `axes`, and a hover label naming x `x_name` and y's `unit`.
fn live_plot<'a>(id: &str, axes: [&str; 2], x_name: &'static str, unit: &'static str) -> Plot<'a> {
    Plot::new(id)
        .x_axis_label(axes[0])
        .y_axis_label(axes[1])
        .allow_scroll(false)
        .allow_zoom(false)
        .allow_drag(false)
        .auto_bounds(true)
        .label_formatter(hover_label(unit, x_name))
}

/// The energies over the last [`WINDOW_SECONDS`].
pub fn energy(ui: &mut egui::Ui, model: &Model, history: &History) {
    live_plot("energy", ["time (s)", "energy (J)"], "t", "J")
        .legend(Legend::default())
        .show(ui, |plot| {
            for s in SERIES.iter().filter(|s| (s.present)(model)) {
                let points: PlotPoints = window(history)
                    .map(|f| [f.time, (s.value)(&f.energies)])
                    .collect();
                plot.line(Line::new(s.name, points));
            }
        });
}

/// The PD objective after each iteration of the last frame's last
/// substep (iteration 0: before the first), as its change from iteration 0:
/// the objective itself is large against its decrease, and a y axis of
/// values alike in their first nine digits has no readable labels.
pub fn convergence(ui: &mut egui::Ui, history: &History) {
    let objective = history.objective();
    let range = history.objective_range();
    let first = objective.first().copied().unwrap_or(0.0);
    let decrease = match objective.last() {
        Some(_) if range.is_none() => "no change beyond round-off".to_owned(),
        Some(last) if objective.len() > 1 => format!("Δ {:.3e}", last - first),
        _ => "no step yet".to_owned(),
    };
    ui.vertical(|ui| {
        ui.label(format!(
            "PD objective per iteration, last frame ({decrease})"
        ));
        // Round-off draws flat at 0, not magnified to full height.
        let points = || -> PlotPoints {
            objective
                .iter()
                .enumerate()
                .map(|(i, &g)| [i as f64, if range.is_some() { g - first } else { 0.0 }])
                .collect()
        };
        let mut plot = live_plot(
            "convergence",
            ["iteration", "g(x) − g(x₀)"],
            "iteration",
            "",
        );
        if range.is_none() {
            plot = plot.include_y(-1.0).include_y(1.0);
        }
        plot.show(ui, |plot| {
            plot.line(Line::new("objective", points()));
            plot.points(Points::new("objective", points()).radius(2.5));
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preset::Preset;
    use crate::session::Session;

    #[test]
    fn a_cloth_graphs_its_spring_types_and_not_the_tet_ones() {
        let session = Session::new(Preset::default(), None).unwrap();
        assert_eq!(
            series_names(session.model()),
            [
                "kinetic",
                "gravitational",
                "structural",
                "shear",
                "bending",
                "attachment",
                "total"
            ]
        );
    }
}
