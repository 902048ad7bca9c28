//! The graphs panel (egui_plot): the energies over a scrolling time window
//! — kinetic, gravitational, each elastic constraint type the model has,
//! and the total; click a legend entry to hide or show its series — and
//! the PD objective against the iteration for the latest frame
//! (convergence). Hovering shows the values.

use eframe::egui;
use egui_plot::{GridInput, GridMark, HoverPosition, Legend, Line, Plot, PlotPoints, Points};

use super::panels::Request;
use crate::model::Model;
use crate::param::format_value;
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
fn window(history: &History) -> impl DoubleEndedIterator<Item = &Frame> {
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
    let measured = ui.horizontal(|ui| {
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
            return None;
        }
        if session.is_stopping() {
            ui.add(egui::Spinner::new());
            ui.label("stopping the cancelled Newton solve…");
            return None;
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
        if session.accuracy().is_none() {
            ui.weak("not measured");
        }
        session.accuracy()
    });
    // Below the button, wrapped to the panel's width: beside it, it was cut
    // to a few words (or pushed the plot out of the window, uncut).
    if let Some((frame, accuracy)) = measured.inner {
        ui.add(egui::Label::new(format!("frame {frame}: {accuracy}")).wrap());
    }
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
        .y_grid_spacer(labelled_steps)
        .y_axis_formatter(|mark, _| tick_label(mark.value))
}

/// A value axis's label: 4 significant digits ([`format_value`]), without
/// the trailing zeros of an exponent form (`-5e-6`, not `-5.000e-6`).
fn tick_label(value: f64) -> String {
    let text = format_value(value);
    match text.split_once('e') {
        Some((mantissa, exponent)) if mantissa.contains('.') => {
            let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
            format!("{mantissa}e{exponent}")
        }
        _ => text,
    }
}

/// The smallest on-screen spacing (points) of labelled marks.
const LABEL_SPACING: f64 = 30.0;

/// The marks of a value axis: labelled ones at the multiples of the
/// smallest of 1, 2 or 5 × 10^k at least [`LABEL_SPACING`] apart on screen,
/// and fainter lines between (a fifth of that, or a half of a 2). egui_plot's
/// decade steps left a range of ±0.9 with only its 0 labelled, the next
/// decade's marks being too close for labels.
fn labelled_steps(input: GridInput) -> Vec<GridMark> {
    // `base_step_size` is the value across egui_plot's smallest grid
    // spacing, 8 points.
    let wanted = input.base_step_size * LABEL_SPACING / 8.0;
    if !(wanted.is_finite() && wanted > 0.0) {
        return Vec::new();
    }
    let decade = 10f64.powf(wanted.log10().floor());
    let (step, fine) = [(1.0, 0.2), (2.0, 1.0), (5.0, 1.0), (10.0, 2.0)]
        .into_iter()
        .map(|(s, f)| (s * decade, f * decade))
        .find(|&(s, _)| s >= wanted * (1.0 - 1e-9))
        .unwrap_or((10.0 * decade, 2.0 * decade));
    let (lo, hi) = input.bounds;
    let first = (lo / fine).ceil() as i64;
    let last = (hi / fine).floor() as i64;
    if last - first > 10_000 {
        return Vec::new();
    }
    let per_step = (step / fine).round() as i64;
    (first..=last)
        .map(|k| GridMark {
            value: k as f64 * fine,
            step_size: if k % per_step == 0 { step } else { fine },
        })
        .collect()
}

/// The energies over the last [`WINDOW_SECONDS`]. Before a second frame
/// the axes span a second and ±1 J (a single point's bounds labelled the
/// time axis in picoseconds and the energies in 1e-12 J). The time axis
/// runs on past the newest frame by the legend's width, so the newest
/// values are never under it (at 800 × 600 it hid the last third of every
/// curve).
pub fn energy(ui: &mut egui::Ui, model: &Model, history: &History) {
    let present = || (0..SERIES.len()).filter(|&i| (SERIES[i].present)(model));
    let mut plot =
        live_plot("energy", ["time (s)", "energy (J)"], "t", "J").legend(Legend::default());
    let times = || window(history).map(|f| f.time);
    let (first, newest) = match (times().next(), times().next_back()) {
        (Some(first), Some(newest)) if newest > first => (first, newest),
        (Some(only), _) => {
            plot = plot.include_y(-1.0).include_y(1.0);
            (only, only + 1.0)
        }
        _ => (0.0, 1.0),
    };
    let legend = legend_width(ui, present().map(|i| SERIES[i].name));
    // The y axis's labels take about this much of the width too.
    let axis = 60.0;
    let room = f64::from(legend / (ui.available_width() - axis).max(1.0));
    plot = plot
        .include_x(first)
        .include_x(newest + past_newest(newest - first, room));
    plot.show(ui, |plot| {
        for i in present() {
            let s = &SERIES[i];
            let points: PlotPoints = window(history)
                .map(|f| [f.time, (s.value)(&f.energies)])
                .collect();
            plot.line(Line::new(s.name, points).color(series_colour(i)));
        }
    });
}

/// The width (points) of the legend of series `names`: the widest name,
/// its marker and the padding around them.
fn legend_width<'a>(ui: &egui::Ui, names: impl Iterator<Item = &'a str>) -> f32 {
    let font = egui::TextStyle::Body.resolve(ui.style());
    let widest = names
        .map(|name| {
            let galley =
                ui.painter()
                    .layout_no_wrap(name.to_owned(), font.clone(), egui::Color32::WHITE);
            galley.size().x
        })
        .fold(0.0, f32::max);
    widest + 45.0
}

/// How far past the newest time the time axis runs for the data, `span`
/// long, to leave the fraction `room` of the axis free at the right (up to
/// half of it).
fn past_newest(span: f64, room: f64) -> f64 {
    let room = room.clamp(0.0, 0.5);
    span * room / (1.0 - room)
}

/// The colour of the `i`-th of [`SERIES`], whichever the model has (egui_plot
/// numbers the drawn series: "total" was purple on a cloth and orange
/// elsewhere), each apart from the others; the total white.
fn series_colour(i: usize) -> egui::Color32 {
    const COLOURS: [[u8; 3]; SERIES.len()] = [
        [235, 95, 85],   // kinetic: red
        [85, 145, 235],  // gravitational: blue
        [120, 205, 95],  // structural: green
        [215, 105, 215], // shear: magenta
        [75, 205, 205],  // bending: cyan
        [235, 175, 65],  // attachment: amber
        [40, 160, 110],  // strain: sea green
        [245, 240, 110], // strain limit: light yellow
        [155, 125, 245], // volume: violet
        [235, 235, 235], // total: white
    ];
    let [r, g, b] = COLOURS[i % COLOURS.len()];
    egui::Color32::from_rgb(r, g, b)
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

    /// Each energy series keeps one colour, apart from every other's
    /// (numbered among all, "gravitational" and "total" came out both blue).
    #[test]
    fn the_energy_series_have_colours_of_their_own() {
        for (a, first) in SERIES.iter().enumerate() {
            for (b, second) in SERIES.iter().enumerate().take(a) {
                let (x, y) = (series_colour(a), series_colour(b));
                let apart = [
                    x.r().abs_diff(y.r()),
                    x.g().abs_diff(y.g()),
                    x.b().abs_diff(y.b()),
                ];
                assert!(
                    apart.iter().any(|&d| d >= 50),
                    "{} and {}: {x:?} {y:?}",
                    first.name,
                    second.name
                );
            }
        }
    }
    use crate::preset::Preset;
    use crate::session::Session;

    /// The time axis leaves the legend's share of its length free past the
    /// newest frame, and at most half of it.
    #[test]
    fn the_time_axis_leaves_room_for_the_legend() {
        // A quarter free: the data ends three quarters along.
        let past = past_newest(3.0, 0.25);
        assert!((past - 1.0).abs() < 1e-12, "{past}");
        assert_eq!(past_newest(2.0, 0.0), 0.0);
        assert_eq!(past_newest(2.0, 0.9), 2.0);
        assert_eq!(past_newest(2.0, f64::INFINITY), 2.0);
    }

    /// A range of ±0.9 on a plot whose decade steps labelled only its 0
    /// gets labels every 0.2, lines every 0.1; the labels of tiny values
    /// are short.
    #[test]
    fn value_axes_are_labelled_in_steps_of_1_2_or_5() {
        let marks = labelled_steps(GridInput {
            bounds: (-0.9, 0.9),
            base_step_size: 0.05,
        });
        let labelled: Vec<f64> = (marks.iter())
            .filter(|m| m.step_size == 0.2)
            .map(|m| (m.value * 10.0).round() / 10.0)
            .collect();
        assert_eq!(labelled, [-0.8, -0.6, -0.4, -0.2, 0.0, 0.2, 0.4, 0.6, 0.8]);
        assert_eq!(marks.len(), 19);
        assert!(
            marks
                .iter()
                .all(|m| m.step_size == 0.2 || m.step_size == 0.1)
        );
        // A 5: lines every 1.
        let five = labelled_steps(GridInput {
            bounds: (0.0, 20.0),
            base_step_size: 1.0,
        });
        assert!(five.iter().filter(|m| m.step_size == 5.0).count() == 5);
        assert!(
            labelled_steps(GridInput {
                bounds: (0.0, 1.0),
                base_step_size: f64::NAN,
            })
            .is_empty()
        );
        assert_eq!(tick_label(-5e-6), "-5e-6");
        assert_eq!(tick_label(1.25e-5), "1.25e-5");
        assert_eq!(tick_label(0.4), "0.4");
        assert_eq!(tick_label(0.0), "0");
    }

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
