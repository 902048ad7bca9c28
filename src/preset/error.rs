//! [`PresetError`]: what is wrong with a preset, with its file, line and
//! field; and the mapping from TOML spans to lines and field paths.

use std::fmt;
use std::ops::{Range, RangeInclusive};
use std::path::{Path, PathBuf};

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::mesh::{ImportError, TetIoError};
use crate::model::tetra::TetraError;

/// A preset failure: the file, the 1-based line where known, and what is wrong.
///
/// Displays as `presets/silk.toml:12: material.weights.bendng: unknown
/// field; did you mean `bending`?`.
#[derive(Clone, Debug, PartialEq)]
pub struct PresetError {
    /// The preset file.
    pub path: PathBuf,
    /// 1-based line of the offending key or value, when known.
    pub line: Option<usize>,
    /// What is wrong (boxed: the error stays small on the happy path).
    pub kind: Box<PresetErrorKind>,
}

impl fmt::Display for PresetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::located::write_located(f, &self.path, self.line, &*self.kind)
    }
}

impl std::error::Error for PresetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&*self.kind)
    }
}

/// What is wrong, without the file and line (see [`PresetError`]). Field
/// paths are dotted TOML keys with array indices, e.g. `pins.hard[1]`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PresetErrorKind {
    /// The file could not be read.
    #[error("cannot read the preset: {0}")]
    Read(String),
    /// The file could not be written (the previous file is intact).
    #[error("cannot write the preset: {0}")]
    Write(String),
    /// The text is not valid TOML.
    #[error("invalid TOML: {0}")]
    Syntax(String),
    /// A key (or enum variant) the format does not have.
    #[error(
        "{field}: unknown {what} `{name}`{}{}",
        suggestion_text(.suggestion, .expected),
        others_text(.others)
    )]
    Unknown {
        /// Path of the unknown key, or of the value naming an unknown variant.
        field: String,
        /// A key, or a value naming an alternative.
        what: UnknownKind,
        /// The unknown name.
        name: String,
        /// The closest valid name, when one is close.
        suggestion: Option<String>,
        /// The valid names there.
        expected: Vec<String>,
        /// The other unknown keys of the same table, with their lines (the
        /// first in the file is `name`), so that one run names them all
        /// (boxed: the error stays small).
        others: Box<[(String, usize)]>,
    },
    /// A value of the wrong type, a missing key or a value out of range.
    #[error("{field}: {message}")]
    Invalid {
        /// Path of the value (or of the table missing a key).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A format version this build cannot read.
    #[error(
        "version: format version {0} is not supported; this build reads versions 0 to {current}",
        current = super::CURRENT_VERSION
    )]
    Version(i64),
    /// A named vertex group the mesh does not have.
    #[error("{field}: the mesh has no group named `{name}`; {}", groups_text(.available))]
    UnknownGroup {
        /// Path of the selector.
        field: String,
        /// The name asked for.
        name: String,
        /// The mesh's group names.
        available: Vec<String>,
    },
    /// An explicit vertex index beyond the built model.
    #[error("{field}: vertex {index} is out of range: the model has {vertices} vertices")]
    IndexOutOfRange {
        /// Path of the selector.
        field: String,
        /// The index.
        index: u32,
        /// Vertices of the built model.
        vertices: usize,
    },
    /// The OBJ mesh could not be loaded.
    // The import error is part of the message, not a `source()`: error
    // chains (`{:#}`) would print it twice.
    #[error("{field}: {error}")]
    Mesh {
        /// Path of the mesh reference.
        field: String,
        /// The import error (with the mesh file and line).
        error: Box<ImportError>,
    },
    /// The tet mesh file could not be read.
    #[error("{field}: {error}")]
    TetFile {
        /// Path of the mesh reference.
        field: String,
        /// The read error (with the tet file and line).
        error: Box<TetIoError>,
    },
    /// The mesh could not be tetrahedralised.
    #[error("build: cannot tetrahedralise the mesh: {0}")]
    Tetrahedralize(Box<TetraError>),
}

/// What [`PresetErrorKind::Unknown`] names: serde's words for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnknownKind {
    /// A key: "field".
    Field,
    /// A value, or a key, naming an alternative the format does not have:
    /// "variant".
    Variant,
}

impl fmt::Display for UnknownKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Field => "field",
            Self::Variant => "variant",
        })
    }
}

fn suggestion_text(suggestion: &Option<String>, expected: &[String]) -> String {
    let list = || {
        expected
            .iter()
            .map(|e| format!("`{e}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match suggestion {
        Some(s) => format!("; did you mean `{s}`?"),
        None if expected.is_empty() => String::new(),
        None => format!("; expected one of {}", list()),
    }
}

fn others_text(others: &[(String, usize)]) -> String {
    let named: Vec<String> = others
        .iter()
        .map(|(name, line)| format!("`{name}` (line {line})"))
        .collect();
    match named.len() {
        0 => String::new(),
        _ => format!("; also unknown there: {}", named.join(", ")),
    }
}

fn groups_text(available: &[String]) -> String {
    if available.is_empty() {
        "it has no named groups".to_owned()
    } else {
        let names: Vec<String> = available.iter().map(|g| format!("`{g}`")).collect();
        format!("available: {}", names.join(", "))
    }
}

impl PresetError {
    /// An error in `path` without a line.
    pub fn new(path: &Path, kind: PresetErrorKind) -> Self {
        Self {
            path: path.to_owned(),
            line: None,
            kind: Box::new(kind),
        }
    }

    /// With the line of its field in the preset file, for an error found
    /// after loading (building the model: a group the mesh lacks, a pin
    /// that selects nothing, a mesh that fails to import). Only for a preset
    /// as loaded from `path`: an edited one's fields may sit elsewhere.
    #[must_use]
    pub fn with_line_from_file(mut self) -> Self {
        if self.line.is_none()
            && let Some(field) = self.kind.field()
            && let Ok(text) = std::fs::read_to_string(&self.path)
            && let Ok(locator) = Locator::new(&text, &self.path)
        {
            self.line = locator.line_of_field(field);
        }
        self
    }
}

impl PresetErrorKind {
    /// The field path the error is about, if it names one.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Unknown { field, .. }
            | Self::Invalid { field, .. }
            | Self::UnknownGroup { field, .. }
            | Self::IndexOutOfRange { field, .. }
            | Self::Mesh { field, .. }
            | Self::TetFile { field, .. } => Some(field),
            Self::Tetrahedralize(_) => Some("build"),
            Self::Read(_) | Self::Write(_) | Self::Syntax(_) | Self::Version(_) => None,
        }
    }
}

/// Names lines and field paths in a preset's text: the TOML document
/// parsed with spans.
pub(super) struct Locator<'a> {
    text: &'a str,
    root: Spanned<DeTable<'a>>,
}

/// One step of a field path: a key or an array index.
#[derive(Clone, Debug, PartialEq)]
enum Step<'s> {
    Key(&'s str),
    Index(usize),
}

impl<'a> Locator<'a> {
    /// Parses `text`.
    ///
    /// # Errors
    /// [`PresetErrorKind::Syntax`] at its line for text that is not TOML.
    pub(super) fn new(text: &'a str, path: &Path) -> Result<Self, PresetError> {
        let root = DeTable::parse(text).map_err(|e| Self::raw_error(text, path, &e))?;
        Ok(Self { text, root })
    }

    /// A syntax error (no document to take field paths from).
    fn raw_error(text: &str, path: &Path, e: &toml::de::Error) -> PresetError {
        PresetError {
            path: path.to_owned(),
            line: e.span().map(|s| line_of(text, s.start)),
            kind: Box::new(PresetErrorKind::Syntax(e.message().trim().to_owned())),
        }
    }

    /// The 1-based line of `field` (a dotted path with `[i]` indices), or of
    /// its deepest ancestor present in the text; `None` if not even the
    /// first key is present.
    pub(super) fn line_of_field(&self, field: &str) -> Option<usize> {
        let (start, _, _) = self.deepest(field)?;
        Some(line_of(self.text, start))
    }

    /// The keys of the table at `field` (the document for ""), if there is
    /// one, with where each starts in the text, in the file's order.
    fn keys_at(&self, field: &str) -> Vec<(String, usize)> {
        let table = if field.is_empty() {
            Some(self.root.get_ref())
        } else {
            match self.deepest(field) {
                Some((_, value, true)) => match value.get_ref() {
                    DeValue::Table(t) => Some(t),
                    _ => None,
                },
                _ => None,
            }
        };
        let mut keys: Vec<(String, usize)> = table.map_or_else(Vec::new, |t| {
            t.iter()
                .map(|(k, _)| (k.get_ref().to_string(), k.span().start))
                .collect()
        });
        keys.sort_by_key(|&(_, start)| start);
        keys
    }

    /// For an unknown key (serde's unknown field, or unknown variant where
    /// an alternative is written as a key: `{ plan = … }`, `{ indices = [1],
    /// foo = 3 }`): every unknown key of its table, the first in the file
    /// named as the error (serde names them in its own order, one a run),
    /// the others listed, and the key called a field. Returns the line of
    /// the first.
    fn all_unknown_keys(&self, kind: &mut PresetErrorKind) -> Option<usize> {
        let PresetErrorKind::Unknown {
            field,
            what,
            name,
            suggestion,
            expected,
            others,
        } = kind
        else {
            return None;
        };
        // The table the key is in: the path's parent where the path names
        // the key (not where it names an array of tables, or a value), or
        // the path itself where its table holds the key.
        let (parent, key) = field.rsplit_once('.').unwrap_or(("", field));
        let (table, named) = if key == name {
            (parent.to_owned(), true)
        } else if self.keys_at(field).iter().any(|(k, _)| k == name) {
            (field.clone(), false)
        } else {
            // An array of tables whose element serde read without its
            // spans (a collider: a tagged enum): the element with the key.
            let Some((_, value, true)) = self.deepest(field) else {
                return None;
            };
            let DeValue::Array(array) = value.get_ref() else {
                return None;
            };
            let element = (0..array.len())
                .map(|i| format!("{field}[{i}]"))
                .find(|e| self.keys_at(e).iter().any(|(k, _)| k == name))?;
            field.clone_from(&element);
            // Its tag is a key of the element too (serde lists the
            // variant's fields).
            if !expected.iter().any(|k| k == ENUM_TAG) {
                expected.push(ENUM_TAG.to_owned());
            }
            (element, false)
        };
        let unknown: Vec<(String, usize)> = self
            .keys_at(&table)
            .into_iter()
            .filter(|(key, _)| !expected.contains(key))
            .map(|(key, start)| (key, line_of(self.text, start)))
            .collect();
        let ((first, line), rest) = unknown.split_first()?;
        *what = UnknownKind::Field;
        *others = rest.into();
        if named && first != name {
            *field = if table.is_empty() {
                first.clone()
            } else {
                format!("{table}.{first}")
            };
        }
        if first != name {
            *suggestion = closest(first, expected);
            name.clone_from(first);
        }
        Some(*line)
    }

    /// A key missing from an element of an array of tables that serde read
    /// without its spans (a collider: a tagged enum), which named the array:
    /// the element without the key is named instead, and its line returned
    /// (it said `sim.colliders: missing field `friction`` on the array's
    /// first line). Where several lack it, the one whose kind (its `type`)
    /// another element has the key in; where that leaves no single one (a
    /// ground has no `radius`), the array stays named.
    fn element_missing_a_key(&self, kind: &mut PresetErrorKind) -> Option<usize> {
        let PresetErrorKind::Invalid { field, message } = kind else {
            return None;
        };
        let key = message
            .strip_prefix("missing field `")
            .and_then(|m| m.strip_suffix('`'))?;
        let Some((_, value, true)) = self.deepest(field) else {
            return None;
        };
        let DeValue::Array(array) = value.get_ref() else {
            return None;
        };
        let n = array.len();
        let has: Vec<bool> = (0..n)
            .map(|i| (self.keys_at(&format!("{field}[{i}]")).iter()).any(|(k, _)| k == key))
            .collect();
        let tags: Vec<Option<String>> = (array.iter())
            .map(|e| match e.get_ref() {
                DeValue::Table(t) => (t.iter())
                    .find(|(k, _)| k.get_ref() == ENUM_TAG)
                    .map(|(_, v)| format!("{:?}", v.get_ref())),
                _ => None,
            })
            .collect();
        let lacking: Vec<usize> = (0..n).filter(|&i| !has[i]).collect();
        let needing: Vec<usize> = (lacking.iter().copied())
            .filter(|&i| tags[i].is_some() && (0..n).any(|j| has[j] && tags[j] == tags[i]))
            .collect();
        let i = match (&lacking[..], &needing[..]) {
            ([one], _) | (_, [one]) => *one,
            _ => return None,
        };
        *field = format!("{field}[{i}]");
        Some(line_of(self.text, array[i].span().start))
    }

    /// For serde's type error `message` in an element of the array `field`
    /// of tagged tables (a collider: a tagged enum, read without its spans,
    /// so the error named the array: `sim.colliders: must be three
    /// numbers, [x, y, z], found 2`), the first key of an element whose
    /// value is not what serde expected, as that key's field and the
    /// value's span.
    fn element_of_wrong_type(&self, field: &str, message: &str) -> Option<(String, Range<usize>)> {
        let expected = message.rsplit_once(", expected ")?.1;
        let Some((_, value, true)) = self.deepest(field) else {
            return None;
        };
        let DeValue::Array(array) = value.get_ref() else {
            return None;
        };
        let number = |v: &DeValue<'_>| matches!(v, DeValue::Integer(_) | DeValue::Float(_));
        for (i, element) in array.iter().enumerate() {
            let DeValue::Table(table) = element.get_ref() else {
                continue;
            };
            for (key, v) in table.iter() {
                let key: &str = key.get_ref();
                if key == ENUM_TAG {
                    continue;
                }
                let at = || format!("{field}[{i}].{key}");
                let vector = TAGGED_VECTORS.contains(&key);
                match (expected, vector, v.get_ref()) {
                    ("a matrix array", true, DeValue::Array(a))
                        if a.len() == 3 && a.iter().all(|x| number(x.get_ref())) => {}
                    ("a matrix array", true, _) => return Some((at(), v.span())),
                    ("f64" | "f32", true, DeValue::Array(a)) => {
                        if let Some(j) = a.iter().position(|x| !number(x.get_ref())) {
                            return Some((format!("{}[{j}]", at()), a[j].span()));
                        }
                    }
                    ("f64" | "f32", false, x) if !number(x) => return Some((at(), v.span())),
                    _ => {}
                }
            }
        }
        None
    }

    /// The value of `field`, or of its deepest ancestor present in the
    /// text: where its key (or array element) starts, the value, and
    /// whether it is `field`'s own.
    fn deepest<'s>(&'s self, field: &str) -> Option<(usize, &'s Spanned<DeValue<'a>>, bool)> {
        let find = |t: &'s DeTable<'a>, k: &str| {
            t.iter()
                .find(|(key, _)| key.get_ref() == k)
                .map(|(key, v)| (key.span().start, v))
        };
        let mut found: Option<(usize, &Spanned<DeValue<'a>>)> = None; // None: the root
        for step in parse_path(field) {
            let next = match (step, found.map(|(_, v)| v.get_ref())) {
                (Step::Key(k), None) => find(self.root.get_ref(), k),
                (Step::Key(k), Some(DeValue::Table(t))) => find(t, k),
                (Step::Index(i), Some(DeValue::Array(a))) => a.get(i).map(|v| (v.span().start, v)),
                _ => None,
            };
            let Some(next) = next else {
                return found.map(|(start, v)| (start, v, false));
            };
            found = Some(next);
        }
        found.map(|(start, v)| (start, v, true))
    }

    /// The error for `field` with `kind`, at the field's line.
    pub(super) fn at_field(&self, path: &Path, field: &str, kind: PresetErrorKind) -> PresetError {
        PresetError {
            path: path.to_owned(),
            line: self.line_of_field(field),
            kind: Box::new(kind),
        }
    }

    /// A deserialisation error: the field path at its span, its line, and
    /// for an unknown key or variant the closest valid name.
    pub(super) fn deserialize_error(&self, path: &Path, e: &toml::de::Error) -> PresetError {
        let message = e.message().trim();
        // A key missing from the document itself: its span is empty at the
        // start (or the whole text), whose first key is not what is wrong.
        let span = e
            .span()
            .filter(|s| !(s.start == 0 && (s.end == 0 || s.end >= self.text.trim_end().len())));
        if span.is_none()
            && let Some(key) = message
                .strip_prefix("missing field `")
                .and_then(|m| m.strip_suffix('`'))
        {
            return PresetError {
                path: path.to_owned(),
                line: None,
                kind: Box::new(PresetErrorKind::Invalid {
                    field: key.to_owned(),
                    message: "missing from the preset".to_owned(),
                }),
            };
        }
        let mut field = span
            .as_ref()
            .and_then(|s| self.field_at(s.start))
            .unwrap_or_default();
        let mut span = span;
        if let Some((element, value)) = self.element_of_wrong_type(&field, message) {
            (field, span) = (element, Some(value));
        }
        let written = span.as_ref().and_then(|s| self.text.get(s.clone()));
        let message = match message {
            // serde's words for a table naming several of an enum's variants
            // (`obj` and `grid` in [mesh]), or none. Where one of its keys
            // is no alternative at all (`{ indices = [1], foo = 3 }`), that
            // is what is wrong, on its line.
            "wanted exactly 1 element, more than 1 element" => {
                let keys: Vec<String> = self.keys_at(&field).into_iter().map(|(k, _)| k).collect();
                unknown_alternative(&field, &keys).unwrap_or_else(|| {
                    "names more than one of its alternatives; keep exactly one".to_owned()
                })
            }
            "wanted exactly 1 element, found 0 elements" => {
                "is empty; it needs one of its alternatives".to_owned()
            }
            // A vertex number where a rule goes (QA: `hard = [5, 500]`
            // was told only "wanted string or table").
            "wanted string or table" if is_pin_rule(&field) => format!(
                "wanted a rule, found {}: \"top_corners\", \"top_edge\", or a table such as \
                 {{ indices = [5, 500] }}, {{ group = \"feet\" }}, {{ plane = … }} or {{ box = … }}",
                written.unwrap_or("another value")
            ),
            other => plain_type_error(other, written, super::whole_range(&field))
                .unwrap_or_else(|| other.to_owned()),
        };
        let mut kind = unknown_name(&message, &field).unwrap_or_else(|| PresetErrorKind::Invalid {
            field: if field.is_empty() {
                "(top level)".to_owned()
            } else {
                field
            },
            message,
        });
        let line = self
            .all_unknown_keys(&mut kind)
            .or_else(|| self.element_missing_a_key(&mut kind))
            .or_else(|| span.map(|s| line_of(self.text, s.start)));
        PresetError {
            path: path.to_owned(),
            line,
            kind: Box::new(kind),
        }
    }

    /// The path of the innermost key or value whose span contains `offset`.
    fn field_at(&self, offset: usize) -> Option<String> {
        let mut best: Option<(usize, String)> = None;
        visit_table(self.root.get_ref(), "", offset, &mut best);
        best.map(|(_, path)| path)
    }
}

/// Whether `field` is a pin rule: `pins.hard[k]` or `pins.soft[k]`.
fn is_pin_rule(field: &str) -> bool {
    ["pins.hard[", "pins.soft["].iter().any(|list| {
        field
            .strip_prefix(list)
            .and_then(|rest| rest.strip_suffix(']'))
            .is_some_and(|k| k.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Records `path` if `span` contains `offset` and is shorter than the best so far.
fn consider(
    span: std::ops::Range<usize>,
    path: &str,
    offset: usize,
    best: &mut Option<(usize, String)>,
) {
    let contains = span.start <= offset && offset < span.end.max(span.start + 1);
    if contains && best.as_ref().is_none_or(|(len, _)| span.len() <= *len) {
        *best = Some((span.len(), path.to_owned()));
    }
}

fn visit_table(
    table: &DeTable<'_>,
    prefix: &str,
    offset: usize,
    best: &mut Option<(usize, String)>,
) {
    for (key, value) in table {
        let path = if prefix.is_empty() {
            key.get_ref().to_string()
        } else {
            format!("{prefix}.{}", key.get_ref())
        };
        consider(key.span(), &path, offset, best);
        visit_value(value, &path, offset, best);
    }
}

fn visit_value(
    value: &Spanned<DeValue<'_>>,
    path: &str,
    offset: usize,
    best: &mut Option<(usize, String)>,
) {
    consider(value.span(), path, offset, best);
    match value.get_ref() {
        DeValue::Table(t) => visit_table(t, path, offset, best),
        DeValue::Array(a) => {
            for (i, item) in a.iter().enumerate() {
                visit_value(item, &format!("{path}[{i}]"), offset, best);
            }
        }
        _ => {}
    }
}

/// Splits `a.b[2].c` into steps.
fn parse_path(field: &str) -> Vec<Step<'_>> {
    let mut steps = Vec::new();
    for part in field.split('.') {
        let (key, mut rest) = part.split_once('[').map_or((part, ""), |(k, r)| (k, r));
        if !key.is_empty() {
            steps.push(Step::Key(key));
        }
        while let Some((index, after)) = rest.split_once(']') {
            if let Ok(i) = index.parse() {
                steps.push(Step::Index(i));
            }
            rest = after.strip_prefix('[').unwrap_or(after);
        }
    }
    steps
}

/// The 1-based line of byte `offset`.
pub(super) fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Serde's `invalid type: floating point `1000000000000.0`, expected
/// usize` (or `invalid value`) in a user's words, with the value as
/// `written` in the file when known: `must be a whole number, 0 or more,
/// found 1e12`; a whole number past the type's range says its bound
/// (`must be at most 4294967295, found 5000000000`); a vector of the wrong
/// length or type (`invalid length 2, expected a matrix array`) `must be
/// three numbers, [x, y, z], found [0.0, -9.8]`. A field whose range is
/// narrower than its type's (`narrower`) says that range instead (`must
/// be a whole number in [2, 128], found -1`). `None` for other messages
/// or expectations.
fn plain_type_error(
    message: &str,
    written: Option<&str>,
    narrower: Option<RangeInclusive<usize>>,
) -> Option<String> {
    let rest = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        .or_else(|| message.strip_prefix("invalid length "))?;
    let (found, expected) = rest.rsplit_once(", expected ")?;
    const UNSIGNED: &str = "a whole number, 0 or more";
    let (wanted, range): (_, Option<(i128, i128)>) = match expected {
        "u8" => (UNSIGNED, Some((0, u8::MAX.into()))),
        "u16" => (UNSIGNED, Some((0, u16::MAX.into()))),
        "u32" => (UNSIGNED, Some((0, u32::MAX.into()))),
        "usize" | "u64" => (UNSIGNED, Some((0, u64::MAX.into()))),
        "i32" => ("a whole number", Some((i32::MIN.into(), i32::MAX.into()))),
        "isize" | "i64" => ("a whole number", Some((i64::MIN.into(), i64::MAX.into()))),
        "f64" | "f32" => ("a number", None),
        "a boolean" => ("true or false", None),
        // nalgebra's words for a vector (gravity, the view's eye).
        "a matrix array" => ("three numbers, [x, y, z]", None),
        _ => return None,
    };
    let whole: Option<i128> = found
        .strip_prefix("integer `")
        .and_then(|n| n.strip_suffix('`'))
        .and_then(|n| n.parse().ok());
    let wanted = match (whole, range, narrower) {
        (_, Some(_), Some(r)) => format!("a whole number in {}", super::interval(r)),
        (Some(n), Some((_, max)), None) if n > max => format!("at most {max}"),
        (Some(n), Some((min, _)), None) if n < min && min < 0 => format!("at least {min}"),
        _ => wanted.to_owned(),
    };
    let found = written
        .map(str::trim)
        .filter(|w| !w.is_empty() && w.chars().count() <= 40 && !w.contains('\n'))
        .unwrap_or(found);
    Some(format!("must be {wanted}, found {found}"))
}

/// The key naming the variant of the preset's internally tagged enums
/// (`colliders = [{ type = "ground", … }]`).
const ENUM_TAG: &str = "type";

/// The keys of those tagged tables that hold three numbers (a sphere
/// collider's `center`); their other keys hold one.
const TAGGED_VECTORS: [&str; 1] = ["center"];

/// Serde's `unknown field `x`, expected one of `a`, `b`` (or `unknown
/// variant`) as [`PresetErrorKind::Unknown`] with the closest name.
fn unknown_name(message: &str, field: &str) -> Option<PresetErrorKind> {
    let (what, name, expected) =
        if let Some(rest) = message.strip_prefix("unexpected keys in table: ") {
            // toml's own words for a table it reads (`unexpected keys in table:
            // a, b, available keys: x, y`).
            let (unknown, available) = rest.split_once(", available keys: ")?;
            let name = unknown.split(", ").next()?;
            let expected = available.split(", ").map(str::to_owned).collect();
            (UnknownKind::Field, name, expected)
        } else {
            let (what, rest) = [
                (UnknownKind::Field, "unknown field `"),
                (UnknownKind::Variant, "unknown variant `"),
            ]
            .into_iter()
            .find_map(|(what, prefix)| message.strip_prefix(prefix).map(|r| (what, r)))?;
            let (name, expected_text) = rest.split_once('`')?;
            let expected: Vec<String> = expected_text
                .split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_owned)
                .collect();
            (what, name, expected)
        };
    Some(PresetErrorKind::Unknown {
        field: if field.is_empty() {
            "(top level)"
        } else {
            field
        }
        .to_owned(),
        what,
        name: name.to_owned(),
        suggestion: closest(name, &expected),
        expected,
        others: Box::default(),
    })
}

/// For the table of `keys` at `field` where one of an enum's alternatives
/// is taken (`mesh`, a pin selector): serde's message for a key that is
/// none of them (``unknown variant `foo`, expected one of …``, as for a
/// table of that key alone), if any (`all_unknown_keys` then names them
/// all, on their lines).
fn unknown_alternative(field: &str, keys: &[String]) -> Option<String> {
    use crate::preset::{MeshSource, Selector};
    #[derive(serde::Deserialize)]
    struct One<T> {
        #[allow(dead_code)] // Only its error is read.
        x: T,
    }
    fn probe<T: serde::de::DeserializeOwned>(key: &str) -> Option<String> {
        let key = toml::Value::String(key.to_owned());
        let error = toml::from_str::<One<T>>(&format!("x = {{ {key} = 0 }}")).err()?;
        let message = error.message().trim();
        message
            .starts_with("unknown variant")
            .then(|| message.to_owned())
    }
    let probe = if field == "mesh" {
        probe::<MeshSource>
    } else if field.starts_with("pins.") {
        probe::<Selector>
    } else {
        return None;
    };
    keys.iter().find_map(|key| probe(key))
}

/// The name in `candidates` closest to `name` by Jaro–Winkler similarity,
/// if it is similar enough (≥ 0.7) to be a likely typo.
fn closest(name: &str, candidates: &[String]) -> Option<String> {
    candidates
        .iter()
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, _)| *score >= 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_errors_in_plain_words() {
        let plain = |m, w| plain_type_error(m, w, None);
        // A field with a narrower range than its type's says it.
        assert_eq!(
            plain_type_error(
                "invalid value: integer `-1`, expected usize",
                Some("-1"),
                Some(2..=128)
            )
            .as_deref(),
            Some("must be a whole number in [2, 128], found -1")
        );
        assert_eq!(
            plain_type_error(
                "invalid type: floating point `2.5`, expected usize",
                Some("2.5"),
                Some(1..=100)
            )
            .as_deref(),
            Some("must be a whole number in [1, 100], found 2.5")
        );
        assert_eq!(
            plain(
                "invalid type: floating point `1000000000000.0`, expected usize",
                Some("1e12")
            )
            .as_deref(),
            Some("must be a whole number, 0 or more, found 1e12")
        );
        assert_eq!(
            plain("invalid value: integer `-3`, expected u32", None).as_deref(),
            Some("must be a whole number, 0 or more, found integer `-3`")
        );
        assert_eq!(
            plain(
                "invalid value: integer `5000000000`, expected u32",
                Some("5000000000")
            )
            .as_deref(),
            Some("must be at most 4294967295, found 5000000000")
        );
        assert_eq!(
            plain("invalid value: integer `-3000000000`, expected i32", None).as_deref(),
            Some("must be at least -2147483648, found integer `-3000000000`")
        );
        assert_eq!(
            plain("invalid type: string \"x\", expected f64", Some("\"x\"")).as_deref(),
            Some("must be a number, found \"x\"")
        );
        assert_eq!(
            plain("invalid type: integer `1`, expected a boolean", Some("1")).as_deref(),
            Some("must be true or false, found 1")
        );
        assert_eq!(plain("invalid type: map, expected a sequence", None), None);
        assert_eq!(plain("something else", None), None);
    }

    #[test]
    fn paths_parse_into_keys_and_indices() {
        assert_eq!(
            parse_path("pins.hard[2].plane"),
            vec![
                Step::Key("pins"),
                Step::Key("hard"),
                Step::Index(2),
                Step::Key("plane")
            ]
        );
        assert_eq!(
            parse_path("a[0][1]"),
            vec![Step::Key("a"), Step::Index(0), Step::Index(1)]
        );
    }

    #[test]
    fn closest_names_only_likely_typos() {
        let names = ["structural", "shear", "bending"].map(String::from);
        assert_eq!(closest("bendng", &names).as_deref(), Some("bending"));
        assert_eq!(closest("sheer", &names).as_deref(), Some("shear"));
        assert_eq!(closest("xyz", &names), None);
    }

    #[test]
    fn lines_of_fields_and_offsets() {
        let text = "version = 1\n\n[material]\ndensity = 1.0\n[material.weights]\nbending = 2.0\n";
        let loc = Locator::new(text, Path::new("p.toml")).unwrap();
        assert_eq!(loc.line_of_field("material.weights.bending"), Some(6));
        assert_eq!(loc.line_of_field("material.density"), Some(4));
        assert_eq!(loc.line_of_field("material.weights.shear"), Some(5));
        assert_eq!(loc.line_of_field("sim.dt"), None);
        let offset = text.find("bending").unwrap() + 2;
        assert_eq!(
            loc.field_at(offset).as_deref(),
            Some("material.weights.bending")
        );
    }
}
