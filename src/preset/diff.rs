//! What changed between two presets, in words: how undo and redo say
//! what they took back ("undid bending weight from 5 to 20").

use toml::Value;

use super::Preset;
use crate::param::format_value;

/// The changes from `before` to `after`, at most two of them in words
/// (`bending weight from 20 to 5` for `material.weights.bending`; a list
/// that changed, such as the hard pins, by its name) and how many more;
/// "no change to the preset" if there is none (a camera kept for the next
/// save is none).
pub fn describe_changes(before: &Preset, after: &Preset) -> String {
    let mut changes = Vec::new();
    // Another build kind brings its own tet options: unsaid ("build from
    // tets to springs; tet resolution from 30 to its default", QA).
    let mut after = after.clone();
    if after.build.kind != before.build.kind {
        after.build.resolution = before.build.resolution;
        after.build.edge_springs = before.build.edge_springs;
    }
    if let (Ok(a), Ok(b)) = (Value::try_from(before), Value::try_from(&after)) {
        compare("", &a, &b, &mut changes);
    }
    changes.retain(|c| !c.starts_with("view"));
    match changes.len() {
        0 => "no change to the preset".to_owned(),
        n if n <= SHOWN => changes.join("; "),
        n => format!("{} and {} more", changes[..SHOWN].join("; "), n - SHOWN),
    }
}

/// The most changes [`describe_changes`] names.
const SHOWN: usize = 2;

/// Appends the differences between `a` and `b`, at `path`, to `out`.
fn compare(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    if a == b {
        return;
    }
    let join = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    match (a, b) {
        (Value::Table(x), Value::Table(y)) => {
            // A key left out is its default (`build.resolution`: the
            // default tet resolution).
            for (key, u) in x {
                match (y.get(key), scalar(u)) {
                    (Some(v), _) => compare(&join(key), u, v, out),
                    (None, Some(u)) => {
                        out.push(format!("{} from {u} to its default", spoken(&join(key))));
                    }
                    (None, None) => out.push(spoken(&join(key))),
                }
            }
            for (key, v) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                match scalar(v) {
                    Some(v) => out.push(format!("{} from its default to {v}", spoken(&join(key)))),
                    None => out.push(spoken(&join(key))),
                }
            }
        }
        _ => match (scalar(a), scalar(b)) {
            // (In words: the editor's font has no arrow.)
            (Some(u), Some(v)) => out.push(format!("{} from {u} to {v}", spoken(path))),
            _ => out.push(spoken(path)),
        },
    }
}

/// A preset field's path (`material.weights.bending`) as a person says it
/// (`bending weight`): a weight by its constraint, pins by their kind, the
/// build by what it sets, others by their last name (QA: the status bar
/// read "undid material.density …; material.weights.strain …").
fn spoken(path: &str) -> String {
    let words = |name: &str| name.replace('_', " ");
    let names: Vec<&str> = path.split('.').collect();
    match names[..] {
        ["material", "weights", weight] => format!("{} weight", words(weight)),
        ["pins", kind] => format!("{kind} pins"),
        ["build", "kind"] => "build".to_owned(),
        ["build", "resolution"] => "tet resolution".to_owned(),
        ["build", "edge_springs"] => "springs on tet edges".to_owned(),
        ["mesh", _] => "mesh".to_owned(),
        [.., last] => words(last),
        [] => path.to_owned(),
    }
}

/// A number, a truth value, a string or a short list of them (a vector:
/// gravity, the view's eye) as a person reads it; `None` for a longer list
/// or a table.
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::Float(x) => Some(format_value(*x)),
        Value::Integer(n) => Some(n.to_string()),
        Value::Boolean(b) => Some(b.to_string()),
        Value::String(s) => Some(s.clone()),
        Value::Array(items) if items.len() <= 4 => {
            let items: Option<Vec<String>> = items
                .iter()
                .map(|v| scalar(v).filter(|_| !v.is_array()))
                .collect();
            Some(format!("[{}]", items?.join(", ")))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preset::{BuildKind, Selector};
    use crate::solver::Acceleration;

    #[test]
    fn changes_are_named_with_their_values() {
        let before = Preset::default();
        let mut after = before.clone();
        assert_eq!(describe_changes(&before, &after), "no change to the preset");
        after.material.weights.bending = 5.0;
        assert_eq!(
            describe_changes(&before, &after),
            "bending weight from 20 to 5"
        );
        assert_eq!(
            describe_changes(&after, &before),
            "bending weight from 5 to 20"
        );
        after.sim.acceleration = Acceleration::Chebyshev;
        assert_eq!(
            describe_changes(&before, &after),
            "bending weight from 20 to 5; acceleration from anderson to chebyshev"
        );
        let mut heavier = before.clone();
        heavier.sim.gravity.y = -12.0;
        assert_eq!(
            describe_changes(&before, &heavier),
            "gravity from [0, -9.8, 0] to [0, -12, 0]"
        );
        after.pins.hard.push(Selector::TopEdge);
        after.build.kind = BuildKind::Tets;
        let text = describe_changes(&before, &after);
        assert!(text.ends_with(" and 2 more"), "{text}");
        // Another kind's tet options are its own: unsaid.
        let mut tets = before.clone();
        tets.build.kind = BuildKind::Tets;
        tets.build.resolution = Some(30);
        assert_eq!(
            describe_changes(&tets, &before),
            "build from tets to springs"
        );
        // A value left to its default says so.
        let mut finer = before.clone();
        finer.build.resolution = Some(20);
        assert_eq!(
            describe_changes(&before, &finer),
            "tet resolution from its default to 20"
        );
        assert_eq!(
            describe_changes(&finer, &before),
            "tet resolution from 20 to its default"
        );
        // Short lists of plain values with them, others by name; the
        // camera is no change.
        let mut pinned = before.clone();
        pinned.pins.hard.push(Selector::TopEdge);
        pinned.view = None;
        assert_eq!(
            describe_changes(&before, &pinned),
            "hard pins from [top_corners] to [top_corners, top_edge]"
        );
        pinned.pins.hard = vec![Selector::Indices(vec![1, 2, 3, 4, 5])];
        assert_eq!(describe_changes(&before, &pinned), "hard pins");
    }
}
