//! Saving over a preset file keeps its layout: what the file said is
//! rewritten with the new values in place, so its comments (on a line of
//! their own or after a value), the order of its keys and tables, a table
//! written `[material.weights]` or inline, a list of tables as `[[...]]`
//! or inline, the spelling of a value that did not change (`1e3`,
//! `1_000.0`), an explicit default, its line endings (CRLF) and a byte
//! order mark all stay. Only what changed is written anew: a changed value
//! (its trailing comment kept), a key the preset no longer has (removed
//! with its comments), a new one (appended to its table, inline below the
//! top level, unless the file reads the same without it), a list element
//! added or removed (the others keep their comments; a changed element
//! loses those it had).

use std::borrow::Cow;

use toml_edit::{Array, ArrayOfTables, DocumentMut, Item, Table, TableLike, Value};

use super::with_format_line;

/// A path of keys from the document's root.
type Path = Vec<String>;

/// What [`merge_table`] changed that the file may read the same without.
#[derive(Default)]
struct Changes {
    /// Keys added, each before the keys inside it.
    added: Vec<Path>,
    /// Keys the file has that the new values do not (left in place).
    absent: Vec<Path>,
}

/// `new` (a preset serialised in full) laid out as `old` (the text of the
/// file it is saved over) is; `None` if `old` is not TOML or the result
/// would not `read_back` (as the preset `new` holds). Keys of the file that
/// `new` leaves out (its defaults) stay where the file reads the same with
/// them; keys `new` adds go where it does not read the same without them: a
/// file that had no `[sim]` gains one for a changed damping, with that key
/// alone. `implied` is the file serialised in full (`None`: it does not
/// read): a key added with the value the file implied is left out at once;
/// else they are settled a group at a time, so a large file is read back a
/// few times, not once per key.
pub(super) fn keep(
    old: &str,
    new: &str,
    implied: Option<&str>,
    read_back: impl Fn(&str) -> bool,
) -> Option<String> {
    let text = |doc: &DocumentMut| with_line_ends_of(old, &with_format_line(&doc.to_string()));
    let mut layout: DocumentMut = old.trim_start_matches('\u{feff}').parse().ok()?;
    let values: DocumentMut = new.parse().ok()?;
    let mut changes = Changes::default();
    merge_table(
        layout.as_table_mut(),
        values.as_table(),
        Some(&[]),
        &mut changes,
    );
    let reads = |doc: &DocumentMut| read_back(&text(doc));
    let mut gone = changes.absent.clone();
    if !gone.is_empty() {
        if !reads(&without(&layout, &gone)) {
            return None;
        }
        // Kept where the file reads the same with them.
        offer(&changes.absent, &mut |group| {
            let fewer: Vec<Path> = (gone.iter())
                .filter(|p| !group.contains(p))
                .cloned()
                .collect();
            let kept = reads(&without(&layout, &fewer));
            if kept {
                gone = fewer;
            }
            kept
        });
    }
    let mut layout = without(&layout, &gone);
    if let Some(implied) = implied.and_then(|t| t.parse::<DocumentMut>().ok()) {
        let defaults: Vec<Path> = (changes.added.iter())
            .filter(|path| match (find(&implied, path), find(&layout, path)) {
                (Some(a), Some(b)) => same_item(a, b),
                _ => false,
            })
            .cloned()
            .collect();
        let lean = without(&layout, &defaults);
        if reads(&lean) {
            return Some(text(&lean));
        }
    }
    if !reads(&layout) {
        return None;
    }
    // Dropped where the file reads the same without them.
    offer(&changes.added, &mut |group| {
        let fewer = without(&layout, group);
        let dropped = reads(&fewer);
        if dropped {
            layout = fewer;
        }
        dropped
    });
    Some(text(&layout))
}

/// Offers `group` to `take`, and where it does not take the whole, each
/// half, and so on down to single paths: a few offers where most are taken
/// or most refused, not one per path.
fn offer(group: &[Path], take: &mut impl FnMut(&[Path]) -> bool) {
    if group.is_empty() || take(group) || group.len() == 1 {
        return;
    }
    let (a, b) = group.split_at(group.len() / 2);
    offer(a, take);
    offer(b, take);
}

/// The item at `path` in `doc`.
fn find<'a>(doc: &'a DocumentMut, path: &[String]) -> Option<&'a Item> {
    let (last, parents) = path.split_last()?;
    let mut table: &dyn TableLike = doc.as_table();
    for key in parents {
        table = table.get(key)?.as_table_like()?;
    }
    table.get(last)
}

/// Whether two items hold equal data (see [`same`]), in whichever form.
fn same_item(a: &Item, b: &Item) -> bool {
    fn value(item: &Item) -> Option<Cow<'_, Value>> {
        match item {
            Item::Value(value) => Some(Cow::Borrowed(value)),
            Item::ArrayOfTables(tables) => {
                Some(Cow::Owned(Value::Array(tables.clone().into_array())))
            }
            _ => None,
        }
    }
    match (a.as_table_like(), b.as_table_like()) {
        (Some(a), Some(b)) => same_table(a, b),
        (None, None) => match (value(a), value(b)) {
            (Some(a), Some(b)) => same(&a, &b),
            _ => false,
        },
        _ => false,
    }
}

/// `text` with the line endings (CRLF or LF) and byte order mark of `like`.
pub(super) fn with_line_ends_of(like: &str, text: &str) -> String {
    let text = text.trim_start_matches('\u{feff}');
    let text = if like.contains("\r\n") {
        text.replace("\r\n", "\n").replace('\n', "\r\n")
    } else {
        text.to_owned()
    };
    if like.starts_with('\u{feff}') {
        format!("\u{feff}{text}")
    } else {
        text
    }
}

/// `doc` without the keys at `paths` (those it has).
fn without(doc: &DocumentMut, paths: &[Path]) -> DocumentMut {
    let mut doc = doc.clone();
    for path in paths {
        let Some((last, parents)) = path.split_last() else {
            continue;
        };
        let mut table: Option<&mut dyn TableLike> = Some(doc.as_table_mut());
        for key in parents {
            table = table
                .and_then(|t| t.get_mut(key))
                .and_then(Item::as_table_like_mut);
        }
        if let Some(table) = table {
            remove_key(table, last);
        }
    }
    doc
}

/// Removes `key` from `table`; the space before an inline table's `}`,
/// after the last value, stays after the new last one.
fn remove_key(table: &mut dyn TableLike, key: &str) {
    let closing = closing_space(table);
    let last = table.iter().last().map(|(k, _)| k.to_owned());
    table.remove(key);
    if last.as_deref() == Some(key) {
        set_closing_space(table, closing);
    }
}

/// The white space after the last value of `table` (before an inline
/// table's `}`).
fn closing_space(table: &dyn TableLike) -> Option<String> {
    let (_, item) = table.iter().last()?;
    let suffix = item.as_value()?.decor().suffix()?.as_str()?;
    suffix.trim().is_empty().then(|| suffix.to_owned())
}

/// Puts `space` after the last value of `table`, unless a comment is there.
fn set_closing_space(table: &mut dyn TableLike, space: Option<String>) {
    let Some(space) = space else {
        return;
    };
    if let Some((_, Item::Value(value))) = table.iter_mut().last() {
        let decor = value.decor_mut();
        if decor
            .suffix()
            .and_then(|s| s.as_str())
            .is_none_or(|s| s.trim().is_empty())
        {
            decor.set_suffix(space);
        }
    }
}

/// Makes `old` hold what `new` holds, keeping the layout of what both
/// have. Where `old` is at `at` (`None`: inside an array), the keys added
/// and those `new` does not have are listed in `changes`; inside an array
/// those are removed at once.
fn merge_table(
    old: &mut dyn TableLike,
    new: &dyn TableLike,
    at: Option<&[String]>,
    changes: &mut Changes,
) {
    let gone: Vec<String> = (old.iter())
        .map(|(key, _)| key.to_owned())
        .filter(|key| !new.contains_key(key))
        .collect();
    for key in gone {
        match at {
            Some(at) => changes.absent.push([at, &[key]].concat()),
            None => remove_key(old, &key),
        }
    }
    let root = at.is_some_and(<[String]>::is_empty);
    for (key, item) in new.iter() {
        let here = at.map(|at| [at, &[key.to_owned()]].concat());
        let Some(kept) = old.get_mut(key) else {
            old.insert(key, fresh(item, root));
            if let Some(here) = here {
                list(item, here, &mut changes.added);
            }
            continue;
        };
        let header = header_comments(kept);
        let was_header = !kept.is_value();
        merge_item(kept, item, here.as_deref(), changes);
        // A `[[table]]` become a value: its key is written `key = ` with
        // the comments above the header.
        if was_header
            && old.get(key).is_some_and(Item::is_value)
            && let Some(mut key) = old.key_mut(key)
        {
            let decor = key.leaf_decor_mut();
            decor.clear();
            if let Some(header) = header {
                decor.set_prefix(header);
            }
        }
    }
}

/// The comment lines above a `[table]`'s or the first `[[table]]`'s header.
fn header_comments(item: &Item) -> Option<String> {
    let table = match item {
        Item::Table(table) => table,
        Item::ArrayOfTables(tables) => tables.get(0)?,
        _ => return None,
    };
    let prefix = table.decor().prefix()?.as_str()?;
    prefix.contains('#').then(|| prefix.to_owned())
}

/// Lists `item`, new at `path`, and the keys inside it in `added`.
fn list(item: &Item, path: Path, added: &mut Vec<Path>) {
    if let Some(table) = item.as_table_like() {
        let inner: Vec<Path> = (table.iter())
            .map(|(key, _)| [path.as_slice(), &[key.to_owned()]].concat())
            .collect();
        added.push(path);
        for ((_, item), path) in table.iter().zip(inner) {
            list(item, path, added);
        }
    } else {
        added.push(path);
    }
}

/// `item`, new, as the file is to hold it: a table at the top level (the
/// tables and lists of tables in it inline, `colliders = [{ ... }]`),
/// written after the table before it; below the top level inline
/// (`limits = { ... }` in `[material]`, `hard = [{ plane = ... }]`: a
/// `[[pins.hard]]` header among the file's tables landed after the last
/// of them, away from its table).
fn fresh(item: &Item, root: bool) -> Item {
    let mut item = item.clone();
    match (&mut item, root) {
        (Item::Table(table), true) => {
            table.set_position(None);
            for (mut key, inner) in table.iter_mut() {
                if !inner.is_value() {
                    // `key = `, not as the header wrote it.
                    inner.make_value();
                    key.leaf_decor_mut().clear();
                }
            }
        }
        _ => item.make_value(),
    }
    item
}

/// Makes `old` hold what `new` holds, in `old`'s form: a `[table]` stays
/// one and an inline table inline, an array of inline tables stays one and
/// `[[tables]]` stay so (the serialiser writes a list of pin selectors that
/// are all tables as `[[pins.hard]]`). `at` and `changes` as in
/// [`merge_table`].
fn merge_item(old: &mut Item, new: &Item, at: Option<&[String]>, changes: &mut Changes) {
    let inline = |table: &Table| Item::Value(Value::InlineTable(table.clone().into_inline_table()));
    let new = match (&*old, new) {
        (Item::Value(_), Item::Table(table)) => Cow::Owned(inline(table)),
        (Item::Value(_), Item::ArrayOfTables(tables)) => {
            Cow::Owned(Item::Value(Value::Array(tables.clone().into_array())))
        }
        (Item::Table(_), Item::Value(Value::InlineTable(table))) => {
            Cow::Owned(Item::Table(table.clone().into_table()))
        }
        (Item::ArrayOfTables(_), Item::Value(Value::Array(array))) => array_of_tables(array)
            .map_or(Cow::Borrowed(new), |t| Cow::Owned(Item::ArrayOfTables(t))),
        _ => Cow::Borrowed(new),
    };
    match (old, new.as_ref()) {
        (Item::Value(old), Item::Value(new)) => merge_value(old, new, at, changes),
        (Item::Table(old), Item::Table(new)) => merge_table(old, new, at, changes),
        (Item::ArrayOfTables(old), Item::ArrayOfTables(new)) => merge_tables(old, new, changes),
        (old, new) => *old = fresh(new, false),
    }
}

/// `array` as `[[tables]]`, if all its elements are inline tables.
fn array_of_tables(array: &Array) -> Option<ArrayOfTables> {
    let mut tables = ArrayOfTables::new();
    for value in array.iter() {
        tables.push(value.as_inline_table()?.clone().into_table());
    }
    Some(tables)
}

/// Makes `old` hold `new`'s value, keeping its comments and spelling
/// where the value is the same. `at` and `changes` as in [`merge_table`].
fn merge_value(old: &mut Value, new: &Value, at: Option<&[String]>, changes: &mut Changes) {
    match (old, new) {
        (Value::InlineTable(old), Value::InlineTable(new)) => {
            // The space before `}` follows the last value, whichever it
            // comes to be.
            let closing = closing_space(old);
            set_closing_space(old, closing.as_ref().map(|_| String::new()));
            merge_table(old, new, at, changes);
            set_closing_space(old, closing);
        }
        (Value::Array(old), Value::Array(new)) => merge_array(old, new, changes),
        (old, new) if !same(old, new) => {
            let decor = old.decor().clone();
            *old = new.clone();
            *old.decor_mut() = decor;
        }
        _ => {}
    }
}

/// [`merge_value`] for lists: the elements the same at the start and at the
/// end stay with their comments; between them, each element is merged with
/// the one at its place, losing the comments it had if it changed (they
/// described what was there), and the rest removed or inserted (laid out
/// like their neighbours). In a list over several lines, a comment after an
/// element's comma, on its line, is that element's (TOML keeps it before
/// the next element, or before `]`): it stays with it, or goes with it.
fn merge_array(old: &mut Array, new: &Array, changes: &mut Changes) {
    let (m, n) = (old.len(), new.len());
    let (head, tail) = align(
        m,
        n,
        |i, j| matches!((old.get(i), new.get(j)), (Some(a), Some(b)) if same(a, b)),
    );
    if head == m && m == n {
        return;
    }
    let paired = (m - tail - head).min(n - tail - head);
    let raw =
        |s: Option<&toml_edit::RawString>| s.and_then(|s| s.as_str()).unwrap_or("").to_owned();
    // The text before each element, then before `]`.
    let slots: Vec<String> = (old.iter().map(|v| raw(v.decor().prefix())))
        .chain([raw(Some(old.trailing()))])
        .collect();
    // A slot's first line (with its line break): the previous element's.
    let line = |s: &str| s.find('\n').map_or(String::new(), |p| s[..=p].to_owned());
    let rest = |s: &str| s.find('\n').map_or(s.to_owned(), |p| s[p + 1..].to_owned());
    let indentation = |s: &str| s.rsplit('\n').next().unwrap_or("").to_owned();
    let multiline = slots.iter().any(|s| s.contains('\n'));
    // A new element's indentation: as the others', else two spaces on a
    // line of its own or one after a comma.
    let indent = (slots[1..m.max(1)].iter())
        .find(|s| s.contains('\n') || !multiline)
        .map_or_else(
            || if multiline { "  " } else { " " }.to_owned(),
            |s| indentation(s),
        );
    // Where each element of the result comes from.
    #[derive(Clone, Copy)]
    enum From {
        Kept(usize),
        Changed(usize),
        New,
    }
    let origins: Vec<From> = (0..n)
        .map(|j| {
            if j >= n - tail {
                From::Kept(j + m - n)
            } else if j < head {
                From::Kept(j)
            } else if j < head + paired {
                match (old.get(j), new.get(j)) {
                    (Some(a), Some(b)) if same(a, b) => From::Kept(j),
                    _ => From::Changed(j),
                }
            } else {
                From::New
            }
        })
        .collect();
    // The line before element `k` (or `]`) that the element before it owns.
    let owned = |k: usize| match k.checked_sub(1).map(|k| origins[k]) {
        None => line(&slots[0]),
        Some(From::Kept(i)) => line(&slots[i + 1]),
        Some(From::Changed(i)) if line(&slots[i + 1]).is_empty() => String::new(),
        Some(_) if multiline => "\n".to_owned(),
        Some(_) => String::new(),
    };
    let mut values = Vec::with_capacity(n);
    for (k, origin) in origins.iter().enumerate() {
        let (mut value, own) = match *origin {
            From::Kept(i) => (old.get(i).expect("within old").clone(), rest(&slots[i])),
            From::Changed(i) => {
                let mut value = old.get(i).expect("within old").clone();
                merge_value(&mut value, new.get(k).expect("within new"), None, changes);
                if let Some(suffix) = value.decor().suffix().and_then(|s| s.as_str()) {
                    let suffix = indentation(suffix);
                    value.decor_mut().set_suffix(suffix);
                }
                (value, indentation(&rest(&slots[i])))
            }
            From::New => {
                let mut value = new.get(k).expect("within new").clone();
                value.decor_mut().clear();
                value.decor_mut().set_suffix("");
                (
                    value,
                    if k == 0 {
                        indentation(&rest(&slots[0]))
                    } else {
                        indent.clone()
                    },
                )
            }
        };
        // A first element from further on opens the list as the first did.
        let own = match *origin {
            From::Kept(i) if k == 0 && i > 0 && !own.contains('\n') => rest(&slots[0]),
            _ => own,
        };
        value.decor_mut().set_prefix(format!("{}{own}", owned(k)));
        values.push(value);
    }
    let trailing = format!("{}{}", owned(n), rest(&slots[m]));
    old.clear();
    for value in values {
        old.push_formatted(value);
    }
    old.set_trailing(trailing);
}

/// [`merge_array`] for `[[tables]]`: those the same at the start and at
/// the end stay with their comments; between them, each table is merged
/// with the one at its place, losing the comments above its header if it
/// changed, and the rest removed or inserted.
fn merge_tables(old: &mut ArrayOfTables, new: &ArrayOfTables, changes: &mut Changes) {
    let (head, tail) = align(
        old.len(),
        new.len(),
        |i, j| matches!((old.get(i), new.get(j)), (Some(a), Some(b)) if same_table(a, b)),
    );
    let (old_end, new_end) = (old.len() - tail, new.len() - tail);
    let paired = (old_end - head).min(new_end - head);
    for i in head..head + paired {
        let (Some(table), Some(new)) = (old.get_mut(i), new.get(i)) else {
            continue;
        };
        if !same_table(table, new) {
            let decor = table.decor_mut();
            if let Some(prefix) = decor.prefix().and_then(|s| s.as_str()).map(uncommented) {
                decor.set_prefix(prefix);
            }
            merge_table(table, new, None, changes);
        }
    }
    for _ in head + paired..old_end {
        old.remove(head + paired);
    }
    for i in head + paired..new_end {
        let mut table = new.get(i).expect("within new").clone();
        table.set_position(None);
        old.insert(i, table);
    }
}

/// How many of two lists' elements, `m` and `n` long, are the same
/// (`same_at(i, j)`) at the start and, of the rest, at the end.
fn align(m: usize, n: usize, same_at: impl Fn(usize, usize) -> bool) -> (usize, usize) {
    let head = (0..m.min(n)).take_while(|&i| same_at(i, i)).count();
    let tail = (1..=m.min(n) - head)
        .take_while(|&k| same_at(m - k, n - k))
        .count();
    (head, tail)
}

/// `text` (white space and comments) without its comments: a line break
/// and the indentation after the last where it had any, else nothing.
fn uncommented(text: &str) -> String {
    if !text.contains('#') {
        return text.to_owned();
    }
    match text.rsplit_once('\n') {
        Some((_, indent)) if indent.trim().is_empty() => format!("\n{indent}"),
        Some(_) => "\n".to_owned(),
        None => String::new(),
    }
}

/// Whether two tables hold equal data, in whichever form.
fn same_table(a: &dyn TableLike, b: &dyn TableLike) -> bool {
    a.len() == b.len() && (a.iter()).all(|(key, x)| b.get(key).is_some_and(|y| same_item(x, y)))
}

/// Whether two values are equal as data: spelling, comments and an
/// integer written for a float aside.
fn same(a: &Value, b: &Value) -> bool {
    let number = |v: &Value| match v {
        Value::Integer(i) => Some(*i.value() as f64),
        Value::Float(f) => Some(*f.value()),
        _ => None,
    };
    match (a, b) {
        (Value::String(a), Value::String(b)) => a.value() == b.value(),
        (Value::Boolean(a), Value::Boolean(b)) => a.value() == b.value(),
        (Value::Integer(a), Value::Integer(b)) => a.value() == b.value(),
        (Value::Datetime(a), Value::Datetime(b)) => a.value() == b.value(),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b.iter()).all(|(a, b)| same(a, b))
        }
        (Value::InlineTable(a), Value::InlineTable(b)) => {
            a.len() == b.len() && (a.iter()).all(|(key, a)| b.get(key).is_some_and(|b| same(a, b)))
        }
        _ => match (number(a), number(b)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        },
    }
}

/// `text` (a preset serialised in full) with every float whose decimal
/// form is long written in exponent form, which reads back the same:
/// serialised as Rust writes a float, a bending weight of `1e-300` was a
/// 302-character literal (QA). Short decimals (`0.0001`, `1000.0`) stay.
pub(super) fn short_floats(text: &str) -> String {
    let Ok(mut doc) = text.parse::<DocumentMut>() else {
        return text.to_owned();
    };
    for (_, item) in doc.as_table_mut().iter_mut() {
        shorten_item(item);
    }
    doc.to_string()
}

/// [`short_floats`] within `item`.
fn shorten_item(item: &mut Item) {
    match item {
        Item::Value(value) => shorten_value(value),
        Item::Table(table) => table.iter_mut().for_each(|(_, i)| shorten_item(i)),
        Item::ArrayOfTables(tables) => {
            for table in tables.iter_mut() {
                table.iter_mut().for_each(|(_, i)| shorten_item(i));
            }
        }
        Item::None => {}
    }
}

/// Decimal forms up to this long stay as they are (`123456.789`).
const LONG_DECIMAL: usize = 12;

/// [`short_floats`] within `value`.
fn shorten_value(value: &mut Value) {
    match value {
        Value::Float(float) => {
            let exponent = format!("{:e}", float.value());
            let decimal = float.display_repr().len();
            if decimal > LONG_DECIMAL
                && exponent.len() < decimal
                && let Ok(mut short) = exponent.parse::<Value>()
            {
                *short.decor_mut() = value.decor().clone();
                *value = short;
            }
        }
        Value::Array(array) => array.iter_mut().for_each(shorten_value),
        Value::InlineTable(table) => table.iter_mut().for_each(|(_, v)| shorten_value(v)),
        _ => {}
    }
}
