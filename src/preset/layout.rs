//! Saving over a preset file keeps its layout: what the file said is
//! rewritten with the new values in place, so its comments (on a line of
//! their own or after a value), the order of its keys and tables, a table
//! written `[material.weights]` or inline, and the spelling of a value that
//! did not change (`1e3`, `1_000.0`) all stay. Only what changed is
//! written anew: a changed value (its trailing comment kept), a key the
//! preset no longer has (removed with its comments), a new one (appended
//! to its table).

use std::borrow::Cow;

use toml_edit::{Array, ArrayOfTables, DocumentMut, Item, Table, TableLike, Value};

/// `new` (a preset serialised in full) laid out as `old` (the text of the
/// file it is saved over) is; `None` if `old` is not TOML or the result
/// would not `read_back` (as the preset `new` holds). Of the keys `new`
/// adds to the file, those the preset reads the same without (their
/// defaults) are left out: a file that had no `[sim]` gains one for a
/// changed damping, with that key alone.
pub(super) fn keep(old: &str, new: &str, read_back: impl Fn(&str) -> bool) -> Option<String> {
    let mut layout: DocumentMut = old.parse().ok()?;
    let values: DocumentMut = new.parse().ok()?;
    let mut added = Vec::new();
    merge_table(
        layout.as_table_mut(),
        values.as_table(),
        Some(&[]),
        &mut added,
    );
    if !read_back(&layout.to_string()) {
        return None;
    }
    for path in &added {
        let mut without = layout.clone();
        if remove(&mut without, path) && read_back(&without.to_string()) {
            layout = without;
        }
    }
    Some(layout.to_string())
}

/// Removes the key at `path` (keys from the root) from `doc`; whether it
/// was there.
fn remove(doc: &mut DocumentMut, path: &[String]) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut table: &mut dyn TableLike = doc.as_table_mut();
    for key in parents {
        match table.get_mut(key).and_then(Item::as_table_like_mut) {
            Some(inner) => table = inner,
            None => return false,
        }
    }
    table.remove(last).is_some()
}

/// Makes `old` hold what `new` holds, keeping the layout of what both
/// have. The keys added are listed in `added` (with the keys inside them,
/// after them) as paths from the root, where `old` is at `at` (`None`:
/// inside an array, not listed).
fn merge_table(
    old: &mut dyn TableLike,
    new: &dyn TableLike,
    at: Option<&[String]>,
    added: &mut Vec<Vec<String>>,
) {
    let gone: Vec<String> = (old.iter())
        .map(|(key, _)| key.to_owned())
        .filter(|key| !new.contains_key(key))
        .collect();
    for key in gone {
        old.remove(&key);
    }
    for (key, item) in new.iter() {
        let here = at.map(|at| [at, &[key.to_owned()]].concat());
        match old.get_mut(key) {
            Some(kept) => merge_item(kept, item, here.as_deref(), added),
            None => {
                old.insert(key, unplaced(item.clone()));
                if let Some(here) = here {
                    list(item, here, added);
                }
            }
        }
    }
}

/// Lists `item`, new at `path`, and the keys inside it in `added`.
fn list(item: &Item, path: Vec<String>, added: &mut Vec<Vec<String>>) {
    if let Some(table) = item.as_table_like() {
        let inner: Vec<Vec<String>> = (table.iter())
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

/// `item` with no table in it placed in the file: each is written after
/// the table before it (a new `[material.limits]` after
/// `[material.weights]`, not where it was in the text it came from).
fn unplaced(mut item: Item) -> Item {
    match &mut item {
        Item::Table(table) => {
            table.set_position(None);
            for (_, inner) in table.iter_mut() {
                *inner = unplaced(std::mem::take(inner));
            }
        }
        Item::ArrayOfTables(tables) => {
            for table in tables.iter_mut() {
                table.set_position(None);
            }
        }
        _ => {}
    }
    item
}

/// Makes `old` hold what `new` holds, in `old`'s form: a `[table]` stays
/// one and an inline table inline, an array of inline tables stays one and
/// `[[tables]]` stay so (the serialiser writes a list of pin selectors that
/// are all tables as `[[pins.hard]]`). `at` and `added` as in
/// [`merge_table`].
fn merge_item(old: &mut Item, new: &Item, at: Option<&[String]>, added: &mut Vec<Vec<String>>) {
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
        (Item::Value(old), Item::Value(new)) => merge_value(old, new, at, added),
        (Item::Table(old), Item::Table(new)) => merge_table(old, new, at, added),
        (Item::ArrayOfTables(old), Item::ArrayOfTables(new)) => {
            let kept = old.len().min(new.len());
            for (old, new) in old.iter_mut().zip(new.iter()) {
                merge_table(old, new, None, added);
            }
            while old.len() > kept {
                old.remove(old.len() - 1);
            }
            for new in new.iter().skip(kept) {
                let mut new = new.clone();
                new.set_position(None);
                old.push(new);
            }
        }
        (old, new) => *old = unplaced(new.clone()),
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
/// where the value is the same. `at` and `added` as in [`merge_table`].
fn merge_value(old: &mut Value, new: &Value, at: Option<&[String]>, added: &mut Vec<Vec<String>>) {
    match (old, new) {
        (Value::InlineTable(old), Value::InlineTable(new)) => merge_table(old, new, at, added),
        (Value::Array(old), Value::Array(new)) => merge_array(old, new, added),
        (old, new) if !same(old, new) => {
            let decor = old.decor().clone();
            *old = new.clone();
            *old.decor_mut() = decor;
        }
        _ => {}
    }
}

/// [`merge_value`] element by element: the comments between a multi-line
/// array's elements stay where the elements do.
fn merge_array(old: &mut Array, new: &Array, added: &mut Vec<Vec<String>>) {
    let kept = old.len().min(new.len());
    for (old, new) in old.iter_mut().zip(new.iter()) {
        merge_value(old, new, None, added);
    }
    while old.len() > kept {
        old.remove(old.len() - 1);
    }
    for new in new.iter().skip(kept) {
        old.push(new.clone());
    }
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
