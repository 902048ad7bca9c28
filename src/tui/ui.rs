//! Drawing the terminal UI from the [`App`]'s state: a header, the
//! parameter list, a braille preview of the mesh, the energy chart, the
//! convergence sparkline, stats, a status line and the overlays (help, pin
//! menu, preset chooser, text fields). Drawing only reads.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style, Stylize};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::canvas::{Canvas, Line as CanvasLine, Points};
use ratatui::widgets::{
    Axis, Block, Chart, Clear, Dataset, GraphType, List, ListItem, ListState, Paragraph, Sparkline,
    Wrap,
};

use super::app::{After, App, GRID_PIN_KEYS, KEYS, Mode, PIN_KEYS, PLANE_PIN_KEYS, format_value};
use crate::mesh::Vec3;
use crate::preset::Selector;
use crate::solver::accuracy::NEARLY_AT_REST;
use crate::solver::memory::size;
use crate::solver::{Energies, drawn_positions};

/// Frames the energy chart shows at most (ten seconds at 60 Hz).
pub const CHART_WINDOW: usize = 600;

/// The least height of the energy chart (borders included) drawn with
/// axes: below it the axes would leave the curves one row or none.
const MIN_CHART_HEIGHT_WITH_AXES: u16 = 8;

/// One series of the energy chart: name, colour and value of a frame.
type Series = (&'static str, Color, fn(&Energies) -> f64);

/// The energy series of the chart: kinetic, gravitational, elastic, total.
const SERIES: [Series; 4] = [
    ("kin", Color::Yellow, |e| e.kinetic),
    ("grav", Color::Blue, |e| e.gravitational),
    ("elast", Color::Green, Energies::elastic),
    ("total", Color::White, Energies::total),
];

/// The series' markers and their legend symbols without colours
/// ([`App::no_color`]), where the four lines were alike: each draws with
/// glyphs of its own (half blocks drew the elastic line with `▄`, as the
/// gravitational one's bars: QA).
const PLAIN_MARKERS: [(Marker, &str); 4] = [
    (Marker::Dot, "•"),
    (Marker::Bar, "▄"),
    (Marker::Block, "█"),
    (Marker::Braille, "⠶"),
];

/// What the preview and the energy lines plot in: braille (2 × 4 dots a
/// cell), else half blocks (1 × 2), which every console font holds
/// ([`App::braille`]).
fn plot_marker(app: &App) -> Marker {
    if app.braille {
        Marker::Braille
    } else {
        Marker::HalfBlock
    }
}

/// Draws the whole screen.
pub fn render(frame: &mut Frame, app: &App) {
    // A long message (an error naming a field) wraps onto up to three rows
    // instead of being cut at the screen's edge.
    let width = usize::from(frame.area().width.max(1));
    let status_line = status_line(app, width);
    let message = !app.status.is_empty() || app.session.warning().is_some();
    // In a short terminal the message keeps to one row, cut with "…":
    // wrapped, it took the energy chart's last rows.
    let short = frame.area().height < TALL_ENOUGH_TO_WRAP;
    let status_rows = if message && !short {
        // (Words wrap whole: one more row than the characters need.)
        let rows = status_line.width().div_ceil(width);
        (if rows > 1 { rows + 1 } else { rows }).min(3) as u16
    } else {
        1
    };
    let status_line = if !message {
        cut_line(status_line, width)
    } else if short {
        cut_message(status_line, width)
    } else if status_line.width() > 2 * width {
        // Past what three rows surely hold (words wrap whole), cut with
        // "…": the third row ended mid-sentence, "(and 3 more: softbody".
        cut_message(status_line, 2 * width)
    } else {
        status_line
    };
    // The header and the status line are kept in a terminal too short for
    // the whole body (its 8 rows took them: below 10 rows neither showed,
    // and neither did whether it was playing or a save's outcome).
    let body_rows = BODY_ROWS.min(frame.area().height.saturating_sub(1 + status_rows));
    let [header, body, bottom, status] = frame.area().layout(&Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(body_rows),
        Constraint::Percentage(40),
        Constraint::Length(status_rows),
    ]));
    let [params, preview] = body.layout(&Layout::horizontal([
        Constraint::Length(28),
        Constraint::Fill(1),
    ]));
    let [chart, side] = bottom.layout(&Layout::horizontal([
        Constraint::Fill(1),
        Constraint::Length(26),
    ]));
    render_header(frame, header, app);
    render_params(frame, params, app);
    render_preview(frame, preview, app);
    render_chart(frame, chart, app);
    render_side(frame, side, app);
    frame.render_widget(
        Paragraph::new(status_line).wrap(Wrap { trim: false }),
        status,
    );
    render_overlay(frame, app);
}

/// The rows the parameters and the preview get before the energy chart
/// gets any.
const BODY_ROWS: u16 = 8;

/// The fewest rows at which a long status message wraps onto more than
/// one (below, the energy chart would lose its plot to it).
const TALL_ENOUGH_TO_WRAP: u16 = 20;

fn render_header(frame: &mut Frame, area: Rect, app: &App) {
    let session = &app.session;
    let model = session.model();
    let file = session.path().and_then(|p| p.file_name()).map_or_else(
        || "untitled".to_owned(),
        |f| f.to_string_lossy().into_owned(),
    );
    let mesh = if model.tets.is_empty() {
        format!("{} v {} tri", model.vertex_count(), model.triangles.len())
    } else {
        format!("{} v {} tets", model.vertex_count(), model.tets.len())
    };
    let (mode, style) = if session.is_playing() {
        ("▶ playing", Style::new().green().bold())
    } else if session.warning().is_some() {
        ("⚠ blew up, paused", Style::new().red().bold())
    } else {
        ("❚❚ paused", Style::new().yellow().bold())
    };
    let state = session.state();
    let dirty = if app.unsaved() { "*" } else { "" };
    // Most important first: a narrow terminal cuts the end, with "…" (the
    // mesh's counts before the file `s` saves to).
    let line = Line::from(vec![
        Span::styled(
            format!(" {}{dirty} │ ", session.name()),
            Style::new().bold(),
        ),
        Span::styled(mode, style),
        Span::raw(format!(
            " │ frame {} ({:.2} s) │ {file} │ {mesh}",
            state.frame, state.time
        )),
    ]);
    let line = cut_line(line, usize::from(area.width));
    frame.render_widget(Paragraph::new(line).reversed(), area);
}

/// A message within `room` columns: whole if it fits, else cut by
/// [`cut_line`] before [`READ_ALL`], which says how to read it whole.
fn cut_message(line: Line<'_>, room: usize) -> Line<'_> {
    if line.width() <= room {
        return line;
    }
    let hint = READ_ALL.len();
    if room <= 2 * hint {
        return cut_line(line, room);
    }
    let mut line = cut_line(line, room - hint);
    line.spans.push(Span::raw(READ_ALL));
    line
}

/// What a cut message ends with, after its "…": the key that shows it
/// whole (no space: the words wrap whole, and it stays with the last).
const READ_ALL: &str = "[w]";

/// `line` within `room` columns: whole if it fits, else its spans up to
/// the last column, which is "…" (each span keeps its style).
fn cut_line(line: Line<'_>, room: usize) -> Line<'_> {
    if line.width() <= room {
        return line;
    }
    let mut left = room.saturating_sub(1);
    let mut spans = Vec::new();
    let style = line.style;
    for span in line.spans {
        let (text, cut) = take_columns(&span.content, &mut left);
        spans.push(Span::styled(text, span.style));
        if cut {
            break;
        }
    }
    if room > 0 {
        spans.push(Span::raw("…"));
    }
    Line::from(spans).style(style)
}

/// The start of `text` that fits in `left` columns (which it uses up),
/// and whether that is not all of it. Counted by display width: by
/// characters, a wide one (CJK, most emoji) took one column of the count
/// and two of the screen, and a cut line still ran past the edge.
fn take_columns(text: &str, left: &mut usize) -> (String, bool) {
    use unicode_width::UnicodeWidthChar as _;
    let mut taken = String::new();
    for c in text.chars() {
        let width = c.width().unwrap_or(0);
        if width > *left {
            return (taken, true);
        }
        *left -= width;
        taken.push(c);
    }
    (taken, false)
}

fn render_params(frame: &mut Frame, area: Rect, app: &App) {
    let params = app.params();
    let items: Vec<ListItem> = params
        .iter()
        .map(|p| {
            // Borders and the selection mark take 3 columns.
            let (label, value) = fit(
                p.label(),
                format_value(app.value(*p)),
                usize::from(area.width.saturating_sub(3)),
            );
            ListItem::new(Line::from(vec![
                Span::raw(label),
                Span::styled(value, Style::new().cyan()),
            ]))
        })
        .collect();
    let list = List::new(items)
        .highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .highlight_symbol("›");
    let mut state = ListState::default().with_selected(Some(app.selected.min(params.len() - 1)));
    let block = Block::bordered().title(" Parameters ");
    frame.render_stateful_widget(list, block.inner(area), &mut state);
    // Rows the list scrolls past are counted on the bottom border, as in
    // the help (QA: at 24 rows the last parameters were out of sight with
    // nothing saying they were there).
    let rows = inner_rows(area);
    let shown = if rows > 0 && params.len() > rows {
        let first = state.offset();
        let last = (first + rows).min(params.len());
        format!(" {}–{last} of {} ", first + 1, params.len())
    } else {
        String::new()
    };
    let room = usize::from(area.width.saturating_sub(2));
    let block = block.title_bottom(Line::from(ellipsize(&shown, room)).right_aligned());
    frame.render_widget(block, area);
}

/// A parameter's label (padded to 13 columns, a space included) and value within `width`
/// columns: the label gives way first, cut with "…", then the value. (In a
/// narrow terminal the value was cut silently: 20000 read "2000".)
fn fit(label: &str, value: String, width: usize) -> (String, String) {
    let value_width = value.chars().count();
    let label_room = width.saturating_sub(value_width + 1).min(12);
    if label_room == 0 {
        return (String::new(), ellipsize(&value, width));
    }
    (
        format!("{:<label_room$} ", ellipsize(label, label_room)),
        value,
    )
}

/// `text` within `room` columns: whole if it fits, else cut with "…".
fn ellipsize(text: &str, room: usize) -> String {
    if unicode_width::UnicodeWidthStr::width(text) <= room {
        text.to_owned()
    } else if room == 0 {
        String::new()
    } else {
        let mut left = room - 1;
        take_columns(text, &mut left).0 + "…"
    }
}

/// Projects `x` for the view: rotated by `yaw` about the vertical axis,
/// then by `pitch` about the horizontal one, and seen along −z.
fn project(x: Vec3, yaw: f64, pitch: f64) -> (f64, f64) {
    let (sy, cy) = yaw.sin_cos();
    let (sp, cp) = pitch.sin_cos();
    let x1 = cy * x.x + sy * x.z;
    let z1 = -sy * x.x + cy * x.z;
    (x1, cp * x.y - sp * z1)
}

fn render_preview(frame: &mut Frame, area: Rect, app: &App) {
    let model = app.session.model();
    let mut positions = Vec::new();
    let colliders = &app.session.preset().sim.colliders;
    drawn_positions(
        model,
        &app.session.state().positions,
        colliders,
        &mut positions,
    );
    let mut rest = Vec::new();
    model.render_positions(&model.rest, &mut rest);
    // Framed on the rest pose, so the view stays still while it moves.
    let (lo, hi) = rest.iter().fold(
        (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY)),
        |(lo, hi), x| (lo.inf(x), hi.sup(x)),
    );
    let centre = project((lo + hi) / 2.0, app.yaw, app.pitch);
    let radius = ((hi - lo).norm() * 0.75).max(1e-6);
    // A terminal cell is about twice as tall as wide.
    let inner = Block::bordered().inner(area);
    let aspect = f64::from(inner.width.max(1)) / f64::from(2 * inner.height.max(1));
    let (rx, ry) = (radius * aspect.max(1.0), radius / aspect.min(1.0));
    let projected: Vec<(f64, f64)> = positions
        .iter()
        .map(|&x| project(x, app.yaw, app.pitch))
        .collect();
    let hard: Vec<(f64, f64)> = model
        .pins
        .hard_vertices()
        .iter()
        .map(|&v| {
            project(
                app.session.state().positions[v as usize],
                app.yaw,
                app.pitch,
            )
        })
        .collect();
    let triangles = model.render_triangles();
    let title = ellipsize(
        " Preview (← → [ ] rotate) ",
        usize::from(area.width.saturating_sub(2)),
    );
    let canvas = Canvas::default()
        .block(Block::bordered().title(title))
        .marker(plot_marker(app))
        .x_bounds([centre.0 - rx, centre.0 + rx])
        .y_bounds([centre.1 - ry, centre.1 + ry])
        .paint(|ctx| {
            for t in triangles {
                for (a, b) in [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])] {
                    let (p, q) = (projected[a as usize], projected[b as usize]);
                    ctx.draw(&CanvasLine::new(p.0, p.1, q.0, q.1, Color::Cyan));
                }
            }
            ctx.layer();
            ctx.draw(&Points {
                coords: &hard,
                color: Color::Red,
            });
        });
    frame.render_widget(canvas, area);
}

fn render_chart(frame: &mut Frame, area: Rect, app: &App) {
    let frames = app.session.history().frames();
    let window = frames.range(frames.len().saturating_sub(CHART_WINDOW)..);
    let series: Vec<Vec<(f64, f64)>> = SERIES
        .iter()
        .map(|(_, _, value)| {
            window
                .clone()
                .map(|f| (f.frame as f64, value(&f.energies)))
                .collect()
        })
        .collect();
    let (x0, x1) = window
        .clone()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), f| {
            (a.min(f.frame as f64), b.max(f.frame as f64))
        });
    let (y0, y1) = series
        .iter()
        .flatten()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &(_, y)| {
            (a.min(y), b.max(y))
        });
    let pad = ((y1 - y0) * 0.05).max(1e-9);
    let (y0, y1) = (y0 - pad, y1 + pad);
    let x1 = x1.max(x0 + 1.0);
    let marker = |k: usize| match PLAIN_MARKERS[k] {
        // (Half blocks would draw it as the bars and blocks above.)
        (Marker::Braille, _) if app.no_color && !app.braille => (Marker::Custom('+'), "+"),
        plain if app.no_color => plain,
        _ => (plot_marker(app), ""),
    };
    let datasets = SERIES
        .iter()
        .zip(&series)
        .enumerate()
        .map(|(k, ((name, color, _), data))| {
            Dataset::default()
                .name(*name)
                .marker(marker(k).0)
                .graph_type(GraphType::Line)
                .style(Style::new().fg(*color))
                .data(data)
        })
        .collect();
    // The legend, with the newest values, in the bottom border: the
    // chart's own legend would hide data in a small terminal.
    // Where the values do not fit, the names alone (the values were cut
    // off, "total" first); names that do not fit either give way to "…"
    // (they were cut mid-word: "kin grav ela").
    let with_values: Vec<String> = SERIES
        .iter()
        .zip(&series)
        .enumerate()
        .map(|(k, ((name, ..), data))| {
            let value = data.last().map_or(0.0, |&(_, y)| y);
            format!("{}{name} {value:.1e} ", marker(k).1)
        })
        .collect();
    let room = usize::from(area.width.saturating_sub(2));
    let fits = with_values.iter().map(|t| t.chars().count()).sum::<usize>() <= room;
    let mut legend: Vec<Span> = Vec::new();
    let mut used = 0;
    for (k, (text, (name, color, _))) in with_values.into_iter().zip(&SERIES).enumerate() {
        let text = if fits {
            text
        } else {
            format!("{}{name} ", marker(k).1)
        };
        used += text.chars().count();
        if !fits && used > room.saturating_sub(1) {
            legend.push(Span::raw("…"));
            break;
        }
        legend.push(Span::styled(text, *color));
    }
    // Axes take two rows and a label's width: in a small terminal they
    // would leave the data a row or none, so the curves get the room.
    let axes = area.height >= MIN_CHART_HEIGHT_WITH_AXES;
    let labels = |l: [String; 2]| if axes { l.to_vec() } else { Vec::new() };
    let chart = Chart::new(datasets)
        .legend_position(None)
        .block(
            Block::bordered()
                .title(" Energy (J) ")
                .title_bottom(Line::from(legend)),
        )
        .x_axis(
            Axis::default()
                .bounds([x0, x1])
                .labels(labels([format!("{x0:.0}"), format!("{x1:.0}")])),
        )
        .y_axis(
            Axis::default()
                .bounds([y0, y1])
                .labels(labels([format_value(y0), format_value(y1)])),
        );
    frame.render_widget(chart, area);
}

/// The convergence box: the objective's per-iteration sparkline, and under
/// it in the same border (a second border would leave an 80 × 24 terminal
/// no row for the sparkline) the frame rate, timings, method and the
/// accuracy figure.
fn render_side(frame: &mut Frame, area: Rect, app: &App) {
    let history = app.session.history();
    let objective = history.objective();
    // The decrease of the objective per iteration, scaled to its range; a
    // range of round-off (a body at rest) draws flat, not as noise.
    let range = history.objective_range();
    let bars: Vec<u64> = objective
        .iter()
        .map(|g| match range {
            Some((lo, hi)) => (1.0 + 99.0 * (g - lo) / (hi - lo)) as u64,
            None => 1,
        })
        .collect();
    let decrease = match (objective.first(), objective.last()) {
        (Some(_), Some(_)) if range.is_none() => " Δg round-off only ".to_owned(),
        (Some(first), Some(last)) if *first != 0.0 => format!(
            " Δg {}% in {} it ",
            format_value(100.0 * (last - first) / first.abs()),
            objective.len() - 1
        ),
        _ => String::new(),
    };
    let block = Block::bordered()
        .title(" Convergence ")
        .title_bottom(decrease);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let last = history.last().copied().unwrap_or_default();
    let sim = &app.session.preset().sim;
    let mut lines = vec![
        Line::from(format!("sim    {:>7.1} FPS", app.sim_fps())),
        Line::from(format!("local  {:>7.2} ms", last.timings.local_ms)),
        Line::from(format!("global {:>7.2} ms", last.timings.global_ms)),
        Line::from(format!("{}, {}", sim.acceleration, sim.guess_name())),
        Line::from(if let Some(running) = app.session.measuring_for() {
            format!("error  measuring… {} s", running.as_secs())
        } else if app.session.is_stopping() {
            "error  stopping…".to_owned()
        } else {
            app.session.accuracy().map_or_else(
                || "error  – (a: measure)".to_owned(),
                |(frame, a)| {
                    if a.at_rest() {
                        format!("error  – at rest @{frame}")
                    } else if a.step < NEARLY_AT_REST {
                        format!("error  {:.1e} @{frame} ≈rest", a.error())
                    } else {
                        format!("error  {:.1e} @{frame}", a.error())
                    }
                },
            )
        }),
    ];
    // The memory the process holds, where it leaves the sparkline
    // [`SPARKLINE_ROWS`] (a short terminal keeps the bars).
    if let Some(m) = app.memory()
        && usize::from(inner.height) > lines.len() + SPARKLINE_ROWS
    {
        let [now, peak] = [m.current, m.peak].map(size);
        lines.push(Line::from(format!("mem {now:>7} peak {peak:>7}")));
    }
    let [spark, stats] = inner.layout(&Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(lines.len() as u16),
    ]));
    frame.render_widget(
        Sparkline::default()
            .style(Style::new().magenta())
            .data(bars),
        spark,
    );
    frame.render_widget(Paragraph::new(lines), stats);
}

/// The rows the convergence sparkline keeps before the memory line takes
/// one.
const SPARKLINE_ROWS: usize = 2;

/// The status line: the latest outcome, else a blow-up's warning, else
/// the main keys (as many as `width` columns hold: [`key_hint`]).
fn status_line(app: &App, width: usize) -> Line<'static> {
    // The latest outcome first: a blow-up's warning (also in the header)
    // must not hide what came after it.
    if !app.status.is_empty() {
        let line = Line::from(format!(" {}", app.status));
        if app.status.starts_with("error") || app.status.starts_with("blew up") {
            line.red()
        } else {
            line
        }
    } else if let Some(warning) = app.session.warning() {
        Line::from(format!(" warning: {warning}")).red()
    } else {
        Line::from(key_hint(width)).dark_gray()
    }
}

/// The main keys the status line names when it has nothing to say.
const HINTS: [&str; 7] = [
    "? help",
    "space play",
    "n step",
    "↑↓ +- Enter edit",
    "s save",
    "S save as",
    "q quit",
];

/// [`HINTS`] within `width` columns: those before the last left out from
/// the end until they fit, so the keys to learn the rest and to leave stay
/// (at 60 columns the line was cut after "s save", `q quit` with it: QA).
fn key_hint(width: usize) -> String {
    let mut shown = HINTS.to_vec();
    loop {
        let text = format!(" {}", shown.join(" │ "));
        if unicode_width::UnicodeWidthStr::width(text.as_str()) <= width || shown.len() <= 2 {
            return text;
        }
        shown.remove(shown.len() - 2);
    }
}

/// A box of `width` × `height` cells centred in the screen.
fn centred(frame: &Frame, width: u16, height: u16) -> Rect {
    frame
        .area()
        .centered(Constraint::Length(width), Constraint::Length(height))
}

/// Draws `lines` in a bordered box titled `title`, centred over the screen,
/// at least `width` wide and wide enough for the lines if the screen is.
/// Lines the screen is too short for are counted on the bottom border (QA:
/// at 40 × 10 the pin menu lost its last keys, Esc's among them, unsaid).
fn popup(frame: &mut Frame, title: &str, lines: Vec<Line>, width: u16) {
    let area = popup_area(frame, &lines, width);
    let hidden = lines.len().saturating_sub(inner_rows(area));
    let bottom = match hidden {
        0 => String::new(),
        1 => " 1 more line: enlarge the terminal ".to_owned(),
        n => format!(" {n} more lines: enlarge the terminal "),
    };
    draw_popup(frame, area, [title, &bottom], lines, 0);
}

/// The columns a popup takes beside its widest line: its two borders and
/// one to spare.
const POPUP_MARGIN: usize = 3;

/// Where [`popup`] draws `lines`: centred, at least `width` wide and wide
/// enough for them, as tall as they need, as far as the screen allows.
fn popup_area(frame: &Frame, lines: &[Line], width: u16) -> Rect {
    let widest = lines.iter().map(Line::width).max().unwrap_or(0) + POPUP_MARGIN;
    let width = width.max(u16::try_from(widest).unwrap_or(u16::MAX));
    let height = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
    centred(frame, width, height)
}

/// The rows of `area` inside its borders.
fn inner_rows(area: Rect) -> usize {
    usize::from(area.height.saturating_sub(2))
}

/// Draws `lines` from line `top` on in a bordered box over `area`, with a
/// title on its top border and another, right-aligned, on its bottom one
/// (none if empty), each cut with "…" where the box is too narrow for it.
fn draw_popup(
    frame: &mut Frame,
    area: Rect,
    [title, bottom]: [&str; 2],
    lines: Vec<Line>,
    top: usize,
) {
    let room = usize::from(area.width.saturating_sub(2));
    let block = Block::bordered()
        .title(ellipsize(title, room))
        .title_bottom(Line::from(ellipsize(bottom, room)).right_aligned())
        .bold();
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines)
            .scroll((u16::try_from(top).unwrap_or(u16::MAX), 0))
            .block(block),
        area,
    );
}

/// The help overlay from line `top` on (see [`render_scrolled`]).
fn render_help(frame: &mut Frame, app: &App, top: usize) {
    render_scrolled(frame, app, "Help", key_lines(frame, KEYS), top);
}

/// The messages in full ([`App::messages`]) from line `top` on, each
/// wrapped at its words under what it is (see [`render_scrolled`]).
fn render_messages(frame: &mut Frame, app: &App, top: usize) {
    let messages = app.messages();
    let lines = if messages.is_empty() {
        vec![Line::from(
            " no outcome, warning or note on the mesh to show",
        )]
    } else {
        let pairs: Vec<(&str, &str)> = (messages.iter()).map(|(k, m)| (*k, m.as_str())).collect();
        key_lines(frame, &pairs)
    };
    render_scrolled(frame, app, "Messages", lines, top);
}

/// An overlay titled `name` showing `lines` from line `top` on: where the
/// terminal is too short for them, scrolled by the arrows, as its title
/// says, its bottom border showing which lines are in view.
fn render_scrolled(frame: &mut Frame, app: &App, name: &str, lines: Vec<Line>, top: usize) {
    let area = popup_area(frame, &lines, 60);
    let rows = inner_rows(area);
    let hidden = lines.len().saturating_sub(rows);
    app.set_scroll_hidden(hidden);
    if hidden == 0 {
        let title = format!(" {name} (any key closes) ");
        draw_popup(frame, area, [&title, ""], lines, 0);
        return;
    }
    let top = top.min(hidden);
    let position = format!(" {}–{} of {} ", top + 1, top + rows, lines.len());
    let title = format!(" {name} (↑↓ PgUp PgDn scroll, other keys close) ");
    draw_popup(frame, area, [&title, &position], lines, top);
}

/// `(key, description)` pairs as aligned lines for a popup over `frame`:
/// a description too long for the screen wraps at its words onto lines
/// indented under it, instead of being cut at the border.
fn key_lines<'a>(frame: &Frame, keys: &[(&'a str, &'a str)]) -> Vec<Line<'a>> {
    let width = keys.iter().map(|(key, _)| key.chars().count()).max();
    let width = width.unwrap_or(0).max(7);
    let room = usize::from(frame.area().width).saturating_sub(POPUP_MARGIN);
    let indent = width + 2;
    let room = room.saturating_sub(indent).max(MIN_WRAP);
    let mut lines = Vec::new();
    for (key, what) in keys {
        for (i, part) in wrap_words(what, room).into_iter().enumerate() {
            let head = if i == 0 {
                Span::styled(format!(" {key:<width$} "), Style::new().bold().cyan())
            } else {
                Span::raw(" ".repeat(indent))
            };
            lines.push(Line::from(vec![head, Span::raw(part)]));
        }
    }
    lines
}

/// The fewest columns a wrapped description gets, however narrow the
/// screen (narrower, its words would stand one per line).
const MIN_WRAP: usize = 12;

/// `text` cut at its spaces into lines of at most `room` columns (a word
/// longer than that stands alone on its line).
fn wrap_words(text: &str, room: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let width = unicode_width::UnicodeWidthStr::width;
        let fits = width(line.as_str()) + 1 + width(word) <= room;
        if line.is_empty() || !fits {
            if !line.is_empty() {
                lines.push(std::mem::take(&mut line));
            }
            line.push_str(word);
        } else {
            line.push(' ');
            line.push_str(word);
        }
    }
    lines.push(line);
    lines
}

fn render_overlay(frame: &mut Frame, app: &App) {
    match &app.mode {
        Mode::Normal => {}
        Mode::Help { top } => render_help(frame, app, *top),
        Mode::Messages { top } => render_messages(frame, app, *top),
        Mode::Pins => {
            // The grid's rules only where the model is a grid, the planes
            // only where it does not lie flat (they could only fail).
            let grid = app.session.built().is_grid();
            let flat = Selector::extreme_plane(app.session.model(), true).is_none();
            let keys: Vec<(&str, &str)> = PIN_KEYS
                .iter()
                .copied()
                .filter(|(key, _)| grid || !GRID_PIN_KEYS.contains(key))
                .filter(|(key, _)| !flat || !PLANE_PIN_KEYS.contains(key))
                .collect();
            let mut keys = keys;
            keys.push(("Esc", "cancel"));
            // What holds now, which a key replaces (it was not shown: QA).
            let hard = &app.session.preset().pins.hard;
            let now = if hard.is_empty() {
                "nothing is hard-pinned".to_owned()
            } else {
                let rules: Vec<String> = hard.iter().map(Selector::describe).collect();
                format!("hard-pinned now: {}", rules.join("; "))
            };
            let room = usize::from(frame.area().width).saturating_sub(POPUP_MARGIN + 1);
            let mut lines: Vec<Line> = (wrap_words(&now, room.max(MIN_WRAP)).into_iter())
                .map(|l| Line::from(format!(" {l}")).dark_gray())
                .collect();
            lines.extend(key_lines(frame, &keys));
            popup(frame, " Pins ", lines, 56);
        }
        Mode::Open { files, selected } => {
            let lines = files
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let line = Line::from(format!(" {}", f.display()));
                    if i == *selected {
                        line.reversed()
                    } else {
                        line
                    }
                })
                .collect::<Vec<_>>();
            // The list scrolls to keep the highlighted entry in view.
            let area = popup_area(frame, &lines, 50);
            let top = (selected + 1).saturating_sub(inner_rows(area));
            let title = " Open preset (Enter; / types a path; Esc) ";
            draw_popup(frame, area, [title, ""], lines, top);
        }
        Mode::Edit { param, text } => {
            let now = format_value(param.value(app.session.preset()));
            let title = format!(" {} (now {now}) ", param.label());
            popup(
                frame,
                &title,
                field(text, app.caret_back, field_room(frame)),
                40,
            );
        }
        Mode::OpenPath { text } => popup(
            frame,
            " Open a preset (.toml) or an OBJ: its path (Enter, Esc) ",
            path_field(text, app.caret_back, field_room(frame)),
            60,
        ),
        Mode::SaveAs { text, after } => {
            let title = match after {
                After::Stay => " Save as ".to_owned(),
                After::Quit => " Save as, then quit ".to_owned(),
                After::Open(path) => format!(" Save as, then open {} ", path.display()),
            };
            popup(
                frame,
                &title,
                path_field(text, app.caret_back, field_room(frame)),
                60,
            );
        }
        Mode::ConfirmQuit => popup(
            frame,
            " Unsaved changes ",
            key_lines(
                frame,
                &[
                    (
                        "s",
                        if app.session.path().is_some() {
                            "save and quit"
                        } else {
                            "save as…, then quit"
                        },
                    ),
                    ("d", "discard the changes and quit"),
                    ("Ctrl-C", "quit, keeping them for the next run"),
                    ("other", "stay"),
                ],
            ),
            50,
        ),
        Mode::ChangedOnDisk { path, .. } => {
            let title = format!(" {} changed on disk ", path.display());
            let keys = [
                ("y", "overwrite it with this preset"),
                ("r", "reopen it (this preset's changes are lost)"),
                ("other", "leave it, unsaved"),
            ];
            popup(frame, &title, key_lines(frame, &keys), 50);
        }
        Mode::ConfirmOverwrite { path, .. } => {
            let title = format!(" {} exists ", path.display());
            let keys = [("y", "replace it"), ("other", "keep it")];
            popup(frame, &title, key_lines(frame, &keys), 50);
        }
        Mode::ConfirmOpen { path } => {
            let title = format!(" Unsaved changes: open {}? ", path.display());
            let keys = [
                (
                    "s",
                    if app.session.path().is_some() {
                        "save, then open"
                    } else {
                        "save as…, then open"
                    },
                ),
                ("d", "discard the changes and open"),
                ("other", "stay"),
            ];
            popup(frame, &title, key_lines(frame, &keys), 50);
        }
        Mode::Recover(recovery) => {
            let origin = recovery
                .origin
                .as_ref()
                .map_or_else(|| "untitled".to_owned(), |p| p.display().to_string());
            let mut lines = vec![
                Line::from(format!(
                    " An earlier run of “{}” ended with",
                    recovery.name()
                )),
                Line::from(format!(" unsaved changes ({origin}).")),
            ];
            if let Some(caveat) = recovery.caveat() {
                lines.extend(
                    wrap_words(caveat, 60)
                        .into_iter()
                        .map(|l| Line::from(format!(" {l}")).yellow()),
                );
            }
            lines.push(Line::from(""));
            lines.extend(key_lines(
                frame,
                &[
                    ("r", "recover them"),
                    ("x", "discard them"),
                    ("Esc", "decide at the next start"),
                ],
            ));
            popup(frame, " Recover unsaved changes? ", lines, 64);
        }
        Mode::PinGroup { text } => {
            // The names to choose from (a wrong one listed them only after).
            let surface = app.session.built().surface.as_ref();
            let groups = surface.map_or(&[][..], crate::mesh::SurfaceMesh::groups);
            let names = if groups.is_empty() {
                "the mesh has no groups".to_owned()
            } else {
                let names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
                format!("groups: {}", names.join(", "))
            };
            let mut lines = field(text, app.caret_back, field_room(frame));
            for (k, line) in wrap_words(&names, 56).into_iter().take(4).enumerate() {
                lines.insert(1 + k, Line::from(format!(" {line}")).dark_gray());
            }
            popup(frame, " Pin group ", lines, 40);
        }
    }
}

/// The columns a [`popup`]'s text field has on this screen: all but the
/// popup's [`POPUP_MARGIN`] and the field's leading space.
fn field_room(frame: &Frame) -> usize {
    usize::from(frame.area().width).saturating_sub(POPUP_MARGIN + 1)
}

/// A text field's line with its cursor `back` characters before the end
/// (on the character there, reversed; a block after the text at the end),
/// in at most `room` columns: a longer text scrolls to keep the cursor in
/// view, with the end of the text when it fits beside it, and "…" where
/// it is cut (QA: a path longer than the screen hid its end and the
/// cursor, and a typo there was saved unseen).
fn field(text: &str, back: usize, room: usize) -> Vec<Line<'_>> {
    use unicode_width::UnicodeWidthChar as _;
    let width = |c: char| c.width().unwrap_or(0);
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let len = chars.len();
    let at = len - back.min(len);
    let block = usize::from(at == len);
    let columns = |range: std::ops::Range<usize>| -> usize {
        chars[range].iter().map(|&(_, c)| width(c)).sum()
    };
    // The characters before the cursor that fit in `limit` columns with
    // `used` taken: where they start, and the columns then taken.
    let before = |mut used: usize, limit: usize| {
        let mut start = at;
        while start > 0 && used + width(chars[start - 1].1) <= limit {
            start -= 1;
            used += width(chars[start].1);
        }
        (start, used)
    };
    let (start, end) = if columns(0..len) + block <= room {
        (0, len)
    } else if columns(at..len) + block < room {
        // The end of the text, and before it what fits after a "…".
        (before(1 + columns(at..len) + block, room).0, len)
    } else {
        // A quarter of the room before the cursor (what Backspace and
        // Ctrl-W would delete), then as far as fits before a "…" (and
        // after one, unless at the start).
        let (start, mut used) = before(1, room / 4);
        used += usize::from(start > 0);
        let mut end = at;
        while end < len && used + width(chars[end].1) <= room {
            used += width(chars[end].1);
            end += 1;
        }
        (start, end.max((at + 1).min(len)))
    };
    let byte = |k: usize| chars.get(k).map_or(text.len(), |&(i, _)| i);
    let mut spans = vec![Span::raw(if start > 0 { " …" } else { " " })];
    spans.push(Span::raw(&text[byte(start)..byte(at)]));
    spans.push(match chars.get(at) {
        Some(&(_, c)) => Span::raw(c.to_string()).reversed(),
        None => Span::raw("█").slow_blink(),
    });
    spans.push(Span::raw(&text[byte((at + 1).min(len))..byte(end)]));
    if end < len {
        spans.push(Span::raw("…"));
    }
    // The keys, as many as fit (at 40 columns the whole line was cut
    // after "Home En": QA).
    let keys = longest_fitting(&FIELD_KEYS, room);
    vec![Line::from(spans), Line::from(keys).dark_gray()]
}

/// The first of `hints` (longest first) that fits in `room` columns, else
/// the last.
fn longest_fitting(hints: &[&'static str], room: usize) -> &'static str {
    use unicode_width::UnicodeWidthStr as _;
    (hints.iter())
        .find(|hint| hint.width() <= room)
        .or(hints.last())
        .copied()
        .unwrap_or_default()
}

/// A text field's keys, from the longest hint to the shortest.
const FIELD_KEYS: [&str; 3] = [
    " Enter confirm, Esc cancel, ←→ Home End move, Ctrl-U clear",
    " Enter confirm, Esc cancel, Ctrl-U clear",
    " Enter, Esc, Ctrl-U clear",
];

/// A [`field`] for a path, which says how to start one again over the
/// directory it was given (see `app::path_of`), as briefly as the screen
/// needs.
fn path_field(text: &str, back: usize, room: usize) -> Vec<Line<'_>> {
    let mut lines = field(text, back, room);
    let hint = longest_fitting(
        &[
            " // starts again at /, ~/ at home",
            " //: from /, ~/: from home",
            " //: /, ~/: home",
        ],
        room,
    );
    lines.push(Line::from(hint).dark_gray());
    lines
}
