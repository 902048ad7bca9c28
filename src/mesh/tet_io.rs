//! Tetrahedral mesh files: TetGen `.node`/`.ele` and Gmsh `.msh` (ASCII 2.2
//! and 4.1) to read and write, legacy VTK to write for ParaView.
//!
//! [`read_tet_mesh`] and [`write_tet_mesh`] choose the format by the file's
//! extension; the per-format functions are public too. Every error is a
//! [`TetIoError`] that names the file and, when the problem is on one line, the
//! 1-based line: `cube.ele:3: tetrahedron has 3 corners, expected 4`.
//!
//! # Reading
//! - Nodes are kept in file order, including any that no tetrahedron uses, and
//!   tetrahedra in file order; [`TetMesh::new`] flips negatively oriented ones.
//!   Only linear 4-node tetrahedra are read. Gmsh points, lines, triangles and
//!   other element types are skipped; higher-order tetrahedra are an error
//!   rather than silently losing their mid-edge nodes.
//! - TetGen: as in TetGen, the number of the first node (0 or 1) decides how
//!   the `.ele` file counts. Nodes must be numbered consecutively from there
//!   (TetGen ignores the later numbers; a file that disagrees with itself is
//!   refused instead of misread). Attributes and boundary markers are checked
//!   to be numbers and ignored; `#` starts a comment.
//! - Gmsh: ASCII versions 2.x and 4.1. Node tags may be any non-negative
//!   integers, in any order and with gaps (nodes are renumbered in file order); sections other than
//!   `$MeshFormat`, `$Nodes` and `$Elements` are skipped. Binary files and
//!   versions 1 and 4.0 are refused with a hint to re-save.
//! - Counts in headers are checked against the data and never trusted for
//!   memory: a corrupt count cannot reserve more than the file could fill.
//!
//! # Writing
//! Coordinates are written in Rust's shortest round-trip form (`{:?}`), so
//! reading a written file gives back bit-identical positions and the same
//! tetrahedra. Each file is written to a temporary file in the same directory
//! and then renamed over the target, so no reader sees a half-written file.
//! Tetrahedra are positively oriented as TetGen, Gmsh and VTK all expect: the
//! first three corners turn counter-clockwise seen from the fourth.
//! - TetGen: nodes and tetrahedra numbered from 1 (TetGen accepts 0 or 1), no
//!   attributes or boundary markers.
//! - Gmsh: one volume entity (tag 1) in physical group 1, so Gmsh keeps the
//!   tetrahedra when it re-saves the file.
//! - VTK: legacy ASCII (`# vtk DataFile Version 3.0`), `UNSTRUCTURED_GRID`,
//!   cell type 10 (`VTK_TETRA`).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use super::Vec3;
use super::tet::{TetMesh, TetMeshError};

/// The Gmsh `.msh` format version to write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MshVersion {
    /// ASCII 2.2: the legacy format, read by nearly every tool.
    V2_2,
    /// ASCII 4.1: Gmsh's current format.
    #[default]
    V4_1,
}

/// What is wrong, without the file and line (see [`TetIoError`]).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TetIoErrorKind {
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Read(String),
    /// The file (or its temporary file) could not be written.
    #[error("cannot write the file: {0}")]
    Write(String),
    /// The extension names no supported format.
    #[error("{}; supported: {supported}", describe_extension(.extension))]
    UnsupportedExtension {
        /// The extension as given, without the dot (empty when there is none).
        extension: String,
        /// The supported extensions, for the message.
        supported: &'static str,
    },
    /// An output path that is a directory.
    #[error("is a directory; name the file to write in it ({WRITE_EXTENSIONS})")]
    IsADirectory,
    /// NUL bytes or invalid UTF-8 where text was expected.
    #[error("binary data where text was expected")]
    NotText,
    /// A binary Gmsh file.
    #[error("binary .msh is not supported; re-save as ASCII")]
    BinaryMsh,
    /// A Gmsh format version other than 2.x and 4.1.
    #[error("MSH format version {0} is not supported; re-save as ASCII version 4.1 or 2.2")]
    MshVersion(String),
    /// A required Gmsh section is missing (at the line: before this point).
    #[error("missing {0} section")]
    MissingSection(&'static str),
    /// A Gmsh section that may appear only once appears again.
    #[error("a second {0} section; only one is supported")]
    DuplicateSection(&'static str),
    /// The file ends inside a section or list.
    #[error("unexpected end of file in {0} (is the file truncated?)")]
    UnexpectedEof(String),
    /// A line other than the one the format requires here.
    #[error("expected {expected}, found '{found}'")]
    Expected {
        /// What the format requires.
        expected: &'static str,
        /// The line found (shortened).
        found: String,
    },
    /// A token that should be a number is not one (or not of the right kind).
    #[error("'{token}' is not {expected}")]
    BadNumber {
        /// The offending token.
        token: String,
        /// The kind of number expected, with its article ("an integer").
        expected: &'static str,
    },
    /// `nan`, `inf` and friends parse as floats but are not coordinates.
    #[error("coordinate '{0}' is not a finite number")]
    NonFinite(String),
    /// A header's count disagrees with the records that follow it.
    #[error("{header} declares {declared} {items}, but there are {found}")]
    CountMismatch {
        /// The header, for the message ("the $Nodes header").
        header: &'static str,
        /// What is counted ("nodes").
        items: &'static str,
        /// The count the header declares.
        declared: u64,
        /// The count found.
        found: u64,
    },
    /// The file ends before a list's declared count.
    #[error(
        "{header} declares {declared} {items}, but the file ends after {found} (is it truncated?)"
    )]
    EndsEarly {
        /// The header, for the message ("the .node header").
        header: &'static str,
        /// What is counted ("nodes").
        items: &'static str,
        /// The count the header declares.
        declared: u64,
        /// The records before the end.
        found: u64,
    },
    /// A record with the wrong number of values.
    #[error("{record} has {found} values, expected {expected}")]
    FieldCount {
        /// The kind of record ("node").
        record: &'static str,
        /// Values found.
        found: usize,
        /// Values expected, possibly with their names ("4 (tag x y z)").
        expected: String,
    },
    /// A tetrahedron record without exactly four corners.
    #[error("tetrahedron has {0} corners, expected 4")]
    TetCorners(usize),
    /// A header value outside what this reader (or the format) supports.
    #[error("{field} is {found}, expected {expected}")]
    Unsupported {
        /// The header field ("dimension").
        field: &'static str,
        /// Its value as written.
        found: String,
        /// What is accepted.
        expected: &'static str,
    },
    /// Quadratic or higher-order tetrahedra.
    #[error("{0}-node tetrahedra: only linear 4-node tetrahedra are supported")]
    HigherOrder(usize),
    /// A Gmsh element names a node tag that `$Nodes` does not define.
    #[error("node tag {0} is not defined")]
    UndefinedNodeTag(u64),
    /// Two Gmsh nodes with the same tag.
    #[error("node tag {0} is defined twice")]
    DuplicateNodeTag(u64),
    /// A TetGen tetrahedron names a node that the `.node` file does not have.
    #[error("node {node} is not defined: the .node file has {count} nodes numbered from {first}")]
    NodeOutOfRange {
        /// The node number as written.
        node: i64,
        /// Nodes in the `.node` file.
        count: usize,
        /// The number of its first node (0 or 1).
        first: i64,
    },
    /// A TetGen first node numbered other than 0 or 1.
    #[error("the first node is numbered {0}; TetGen numbers nodes from 0 or 1")]
    FirstNodeNumber(i64),
    /// A TetGen node out of sequence.
    #[error("node number {found}, expected {expected}: TetGen nodes are numbered consecutively")]
    NodeNumber {
        /// The number as written.
        found: i64,
        /// The number that follows the previous node's.
        expected: i64,
    },
    /// The file has no 4-node tetrahedra.
    #[error("no tetrahedra{}", surface_hint(*.other_elements))]
    NoTetrahedra {
        /// Elements of other types that were skipped.
        other_elements: u64,
    },
    /// A tetrahedron of (numerically) zero volume or with a repeated node.
    #[error("tetrahedron is degenerate (zero volume or a repeated node)")]
    Degenerate,
    /// Too many nodes for 32-bit indices.
    #[error("more than 4 billion nodes are not supported")]
    TooManyNodes,
    /// The data does not form a [`TetMesh`] for another reason.
    #[error("{0}")]
    Mesh(TetMeshError),
}

/// The start of the message of [`TetIoErrorKind::UnsupportedExtension`].
fn describe_extension(extension: &str) -> String {
    if extension.is_empty() {
        "the file name has no extension".to_owned()
    } else {
        format!("unsupported file extension '.{extension}'")
    }
}

/// The end of the message of [`TetIoErrorKind::NoTetrahedra`].
fn surface_hint(other_elements: u64) -> String {
    if other_elements == 0 {
        String::new()
    } else {
        format!(
            " (only {other_elements} elements of other types: is it a surface mesh? \
             Mesh the volume first)"
        )
    }
}

/// A tet mesh file error: the file, the line where there is one, and what is wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct TetIoError {
    /// The file that was being read or written.
    pub path: PathBuf,
    /// 1-based line number, when the problem is on one line.
    pub line: Option<usize>,
    /// What is wrong.
    pub kind: TetIoErrorKind,
}

impl fmt::Display for TetIoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::located::write_located(f, &self.path, self.line, &self.kind)
    }
}

impl std::error::Error for TetIoError {}

impl TetIoError {
    fn new(path: &Path, kind: TetIoErrorKind) -> Self {
        Self {
            path: path.to_owned(),
            line: None,
            kind,
        }
    }
}

const READ_EXTENSIONS: &str = ".node or .ele (TetGen), .msh (Gmsh)";
const WRITE_EXTENSIONS: &str = ".node or .ele (TetGen), .msh (Gmsh), .vtk (legacy VTK)";

/// The lower-case extension of `path`, empty when there is none.
fn extension(path: &Path) -> String {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Reads a tetrahedral mesh, choosing the format by the extension: `.node` or
/// `.ele` for TetGen (both files are read, see [`read_tetgen`]), `.msh` for
/// Gmsh (see [`read_msh`]).
///
/// # Errors
/// [`TetIoErrorKind::UnsupportedExtension`] for any other extension, or the
/// errors of the format's reader.
pub fn read_tet_mesh(path: &Path) -> Result<TetMesh, TetIoError> {
    match extension(path).as_str() {
        "node" | "ele" => read_tetgen(path),
        "msh" => read_msh(path),
        other => Err(TetIoError::new(
            path,
            TetIoErrorKind::UnsupportedExtension {
                extension: other.to_owned(),
                supported: READ_EXTENSIONS,
            },
        )),
    }
}

/// Writes a tetrahedral mesh, choosing the format by the extension: `.node` or
/// `.ele` for TetGen (writes both files, see [`write_tetgen`]), `.msh` for Gmsh
/// in `msh_version` (see [`write_msh`]), `.vtk` for legacy VTK (see
/// [`write_vtk`]). Each file is replaced atomically.
///
/// # Errors
/// [`TetIoErrorKind::UnsupportedExtension`] for any other extension and
/// [`TetIoErrorKind::IsADirectory`] for a directory (nothing is written),
/// or [`TetIoErrorKind::Write`] naming the file that failed.
pub fn write_tet_mesh(
    path: &Path,
    mesh: &TetMesh,
    msh_version: MshVersion,
) -> Result<(), TetIoError> {
    match output_format(path)? {
        Written::TetGen => write_tetgen(path, mesh),
        Written::Msh => write_msh(path, mesh, msh_version),
        Written::Vtk => write_vtk(path, mesh),
    }
}

/// Whether [`write_tet_mesh`] can write to `path`, checked before the work
/// that makes the mesh: a supported extension, and not a directory.
///
/// # Errors
/// As [`write_tet_mesh`] before it writes.
pub fn check_tet_output(path: &Path) -> Result<(), TetIoError> {
    output_format(path).map(|_| ())
}

/// The formats [`write_tet_mesh`] writes.
enum Written {
    TetGen,
    Msh,
    Vtk,
}

/// The format `path` names (see [`check_tet_output`]).
fn output_format(path: &Path) -> Result<Written, TetIoError> {
    if path.is_dir() {
        return Err(TetIoError::new(path, TetIoErrorKind::IsADirectory));
    }
    match extension(path).as_str() {
        "node" | "ele" => Ok(Written::TetGen),
        "msh" => Ok(Written::Msh),
        "vtk" => Ok(Written::Vtk),
        other => Err(TetIoError::new(
            path,
            TetIoErrorKind::UnsupportedExtension {
                extension: other.to_owned(),
                supported: WRITE_EXTENSIONS,
            },
        )),
    }
}

/// The `.node` and `.ele` files of a TetGen mesh given either of them or their
/// base path (`cube.1.node`, `cube.1.ele` or `cube.1` all give `cube.1.node`
/// and `cube.1.ele`). An all-capitals `.NODE` or `.ELE` gives capitals for the
/// other file too.
pub fn tetgen_paths(path: &Path) -> (PathBuf, PathBuf) {
    let given = path
        .extension()
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_default();
    let (base, node, ele) = match given.to_ascii_lowercase().as_str() {
        "node" | "ele" if given.chars().all(|c| c.is_ascii_uppercase()) => {
            (path.with_extension(""), "NODE", "ELE")
        }
        "node" | "ele" => (path.with_extension(""), "node", "ele"),
        _ => (path.to_owned(), "node", "ele"),
    };
    let with = |ext: &str| {
        let mut name = base.clone().into_os_string();
        name.push(".");
        name.push(ext);
        PathBuf::from(name)
    };
    (with(node), with(ele))
}

/// The largest tet file read (as an OBJ: 2 GiB).
const MAX_BYTES: u64 = 2 << 30;

/// The bytes of the regular file at `path`, if it is not larger than
/// [`MAX_BYTES`]: a pipe hung the read, and `/dev/zero` filled memory.
fn read_bytes(path: &Path) -> Result<Vec<u8>, TetIoError> {
    let fail = |why: String| TetIoError::new(path, TetIoErrorKind::Read(why));
    let meta = std::fs::metadata(path).map_err(|e| fail(e.to_string()))?;
    if let Some(what) = crate::fsutil::not_regular(&meta) {
        return Err(fail(what.to_owned()));
    }
    if meta.len() > MAX_BYTES {
        return Err(fail(format!(
            "the file is {} bytes, more than the limit of {MAX_BYTES} bytes",
            meta.len()
        )));
    }
    std::fs::read(path).map_err(|e| fail(e.to_string()))
}

/// Reads a TetGen mesh: the `.node` and `.ele` files named by [`tetgen_paths`].
///
/// # Errors
/// [`TetIoError`] naming the file (and line) that cannot be read or is invalid;
/// see [`parse_tetgen`].
pub fn read_tetgen(path: &Path) -> Result<TetMesh, TetIoError> {
    let (node_path, ele_path) = tetgen_paths(path);
    let node = read_bytes(&node_path)?;
    let ele = read_bytes(&ele_path)?;
    parse_tetgen(&node, &ele, path)
}

/// Parses TetGen `.node` and `.ele` text already in memory; `path` (as for
/// [`tetgen_paths`]) only names the files in errors.
///
/// # Errors
/// [`TetIoError`] naming the file and line: unexpected end of file, bad
/// numbers, non-finite coordinates, counts that disagree with the data, node
/// numbers that do not start at 0 or 1 or are not consecutive, undefined
/// nodes, 10-node tetrahedra, no tetrahedra, degenerate tetrahedra.
pub fn parse_tetgen(node: &[u8], ele: &[u8], path: &Path) -> Result<TetMesh, TetIoError> {
    let (node_path, ele_path) = tetgen_paths(path);
    let nodes = parse_node(node).map_err(|f| f.in_file(&node_path))?;
    let (tets, lines) = parse_ele(ele, &nodes).map_err(|f| f.in_file(&ele_path))?;
    build_mesh(nodes.positions, tets, &lines, 0).map_err(|f| f.in_file(&ele_path))
}

/// Reads a Gmsh `.msh` file (ASCII 2.x or 4.1).
///
/// # Errors
/// [`TetIoError`] naming the file (and line) when it cannot be read or is
/// invalid; see [`parse_msh`].
pub fn read_msh(path: &Path) -> Result<TetMesh, TetIoError> {
    parse_msh(&read_bytes(path)?, path)
}

/// Parses Gmsh `.msh` text already in memory; `path` only names the file in
/// errors.
///
/// # Errors
/// [`TetIoError`] naming the file and line: binary files and unsupported
/// versions, missing or truncated sections, bad numbers, non-finite
/// coordinates, counts that disagree with the data, undefined or duplicate node
/// tags, higher-order tetrahedra, no tetrahedra, degenerate tetrahedra.
pub fn parse_msh(bytes: &[u8], path: &Path) -> Result<TetMesh, TetIoError> {
    MshReader::new(bytes).run().map_err(|f| f.in_file(path))
}

// ---------------------------------------------------------------------------
// Shared reading machinery.

/// An error before the file is attached: the line (when known) and the kind.
#[derive(Debug)]
struct Fail {
    line: Option<usize>,
    kind: TetIoErrorKind,
}

type Parse<T> = Result<T, Fail>;

impl Fail {
    fn whole_file(kind: TetIoErrorKind) -> Self {
        Self { line: None, kind }
    }

    fn in_file(self, path: &Path) -> TetIoError {
        TetIoError {
            path: path.to_owned(),
            line: self.line,
            kind: self.kind,
        }
    }
}

/// Attaches a line to a token-level error.
trait AtLine<T> {
    fn at(self, line: usize) -> Parse<T>;
}

impl<T> AtLine<T> for Result<T, TetIoErrorKind> {
    fn at(self, line: usize) -> Parse<T> {
        self.map_err(|kind| Fail {
            line: Some(line),
            kind,
        })
    }
}

/// The line tokeniser all readers share: steps through the non-blank lines of
/// a text file, splitting each into whitespace-separated fields and keeping
/// its 1-based number.
struct Lines<'a> {
    rest: &'a [u8],
    line: usize,
    hash_comments: bool,
    fields: Vec<&'a str>,
}

/// A counted list of records, described for error messages.
struct List {
    /// Where the list is, for "unexpected end of file in ...".
    section: &'static str,
    /// The header that declares the count ("the $Nodes header").
    header: &'static str,
    /// What is counted ("nodes").
    items: &'static str,
    /// The declared count.
    declared: u64,
    /// The header's line.
    line: usize,
    /// The marker that ends the list (`$EndNodes`); `None` for a list that
    /// runs to the end of the file.
    end: Option<&'static str>,
}

impl<'a> Lines<'a> {
    /// Lines of `bytes`; with `hash_comments`, `#` starts a comment.
    fn new(bytes: &'a [u8], hash_comments: bool) -> Self {
        Self {
            rest: bytes,
            line: 0,
            hash_comments,
            fields: Vec::new(),
        }
    }

    /// Moves to the next line with at least one field; `false` at the end of
    /// the file.
    fn advance(&mut self) -> Parse<bool> {
        self.fields.clear();
        while !self.rest.is_empty() {
            let (raw, rest) = match self.rest.iter().position(|&b| b == b'\n') {
                Some(n) => (&self.rest[..n], &self.rest[n + 1..]),
                None => (self.rest, &self.rest[self.rest.len()..]),
            };
            self.rest = rest;
            self.line += 1;
            let raw = match raw.iter().position(|&b| b == b'#') {
                Some(c) if self.hash_comments => &raw[..c],
                _ => raw,
            };
            if raw.contains(&0) {
                return Err(self.fail(TetIoErrorKind::NotText));
            }
            let text = std::str::from_utf8(raw).map_err(|_| self.fail(TetIoErrorKind::NotText))?;
            self.fields.extend(text.split_ascii_whitespace());
            if !self.fields.is_empty() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Moves to the next line; the end of the file is an error in `section`.
    fn next_in(&mut self, section: &str) -> Parse<()> {
        if self.advance()? {
            Ok(())
        } else {
            Err(Fail::whole_file(TetIoErrorKind::UnexpectedEof(
                section.to_owned(),
            )))
        }
    }

    /// Moves to record `index` (0-based) of `list`. A Gmsh `$` line there
    /// means the list ended before its declared count.
    fn item(&mut self, list: &List, index: u64) -> Parse<()> {
        if !self.advance()? {
            // The file ended first: how many the header promised and how
            // many there are, at the header (a count of 4 billion said "is
            // the file truncated?" of a whole file, with no line).
            return Err(Fail {
                line: Some(list.line),
                kind: TetIoErrorKind::EndsEarly {
                    header: list.header,
                    items: list.items,
                    declared: list.declared,
                    found: index,
                },
            });
        }
        if list.end.is_some() && self.is_section_line() {
            // At the header, as where the file ends (it named the `$End`
            // line: QA).
            return Err(Fail {
                line: Some(list.line),
                ..self.mismatch(list, index)
            });
        }
        Ok(())
    }

    /// Checks that `list` ends after its declared records: at its end marker,
    /// or at the end of the file. More records are a count mismatch that says
    /// how many there are.
    fn end_list(&mut self, list: &List) -> Parse<()> {
        let mut extra = 0u64;
        let mut first_extra = None;
        loop {
            match list.end {
                Some(end) => {
                    self.next_in(list.section)?;
                    if self.is_section_line() {
                        if first_extra.is_none() {
                            self.expect_marker(end)?;
                        }
                        break;
                    }
                }
                None => {
                    if !self.advance()? {
                        break;
                    }
                }
            }
            extra += 1;
            first_extra.get_or_insert(self.line);
        }
        match first_extra {
            None => Ok(()),
            Some(line) => Err(Fail {
                line: Some(line),
                kind: TetIoErrorKind::CountMismatch {
                    header: list.header,
                    items: list.items,
                    declared: list.declared,
                    found: list.declared.saturating_add(extra),
                },
            }),
        }
    }

    /// A count mismatch of `list` at the current line, `found` records in.
    fn mismatch(&self, list: &List, found: u64) -> Fail {
        self.fail(TetIoErrorKind::CountMismatch {
            header: list.header,
            items: list.items,
            declared: list.declared,
            found,
        })
    }

    /// Checks that the current line is exactly `marker`.
    fn expect_marker(&self, marker: &'static str) -> Parse<()> {
        if self.fields == [marker] {
            Ok(())
        } else {
            Err(self.fail(TetIoErrorKind::Expected {
                expected: marker,
                found: self.shown(),
            }))
        }
    }

    /// Whether the current line starts a Gmsh section marker (`$Nodes`).
    fn is_section_line(&self) -> bool {
        self.fields.first().is_some_and(|f| f.starts_with('$'))
    }

    /// Checks that the current line has `min..=max` fields.
    fn fields_between(
        &self,
        record: &'static str,
        min: usize,
        max: usize,
        expected: impl FnOnce() -> String,
    ) -> Parse<&[&'a str]> {
        let found = self.fields.len();
        if (min..=max).contains(&found) {
            Ok(&self.fields)
        } else {
            Err(self.fail(TetIoErrorKind::FieldCount {
                record,
                found,
                expected: expected(),
            }))
        }
    }

    /// Checks that the current line has exactly `n` fields.
    fn fields_exactly(&self, record: &'static str, n: usize, names: &str) -> Parse<&[&'a str]> {
        self.fields_between(record, n, n, || format!("{n} ({names})"))
    }

    /// The current line, shortened for a message.
    fn shown(&self) -> String {
        let line = self.fields.join(" ");
        if line.chars().count() > 60 {
            line.chars().take(57).chain("...".chars()).collect()
        } else {
            line
        }
    }

    /// An error at the current line.
    fn fail(&self, kind: TetIoErrorKind) -> Fail {
        Fail {
            line: Some(self.line),
            kind,
        }
    }

    /// A capacity for `count` records of at least `min_bytes` bytes each: no
    /// more than the rest of the file could hold, whatever the count says.
    fn capacity(&self, count: u64, min_bytes: usize) -> usize {
        usize::try_from(count)
            .unwrap_or(usize::MAX)
            .min(self.rest.len() / min_bytes)
    }
}

/// The shortest node record, `1 0 0 0` and a newline (in Gmsh 4 the tag and
/// coordinates lines together are as long).
const MIN_NODE_BYTES: usize = 8;
/// The shortest tetrahedron record, `1 1 2 3 4` and a newline.
const MIN_TET_BYTES: usize = 10;

/// Counts, Gmsh tags and type codes.
fn parse_unsigned(token: &str) -> Result<u64, TetIoErrorKind> {
    token.parse().map_err(|_| TetIoErrorKind::BadNumber {
        token: token.to_owned(),
        expected: "a non-negative integer",
    })
}

fn parse_int(token: &str) -> Result<i64, TetIoErrorKind> {
    token.parse().map_err(|_| TetIoErrorKind::BadNumber {
        token: token.to_owned(),
        expected: "an integer",
    })
}

fn parse_real(token: &str) -> Result<f64, TetIoErrorKind> {
    token.parse().map_err(|_| TetIoErrorKind::BadNumber {
        token: token.to_owned(),
        expected: "a number",
    })
}

fn parse_coordinate(token: &str) -> Result<f64, TetIoErrorKind> {
    let value = parse_real(token)?;
    if value.is_finite() {
        Ok(value)
    } else {
        Err(TetIoErrorKind::NonFinite(token.to_owned()))
    }
}

/// The point of the first three of `tokens` (callers check there are three).
fn parse_point(tokens: &[&str]) -> Result<Vec3, TetIoErrorKind> {
    Ok(Vec3::new(
        parse_coordinate(tokens[0])?,
        parse_coordinate(tokens[1])?,
        parse_coordinate(tokens[2])?,
    ))
}

/// The index the next node gets, while indices fit the mesh's `u32`.
fn next_index(positions: &[Vec3]) -> Result<u32, TetIoErrorKind> {
    u32::try_from(positions.len())
        .ok()
        .filter(|&i| i < u32::MAX)
        .ok_or(TetIoErrorKind::TooManyNodes)
}

/// Makes the mesh; `lines[t]` is the line of tetrahedron `t`, for errors.
fn build_mesh(
    positions: Vec<Vec3>,
    tets: Vec<[u32; 4]>,
    lines: &[usize],
    other_elements: u64,
) -> Parse<TetMesh> {
    if tets.is_empty() {
        return Err(Fail::whole_file(TetIoErrorKind::NoTetrahedra {
            other_elements,
        }));
    }
    TetMesh::new(positions, tets).map_err(|e| match e {
        TetMeshError::Degenerate(t) => Fail {
            line: lines.get(t).copied(),
            kind: TetIoErrorKind::Degenerate,
        },
        other => Fail::whole_file(TetIoErrorKind::Mesh(other)),
    })
}

// ---------------------------------------------------------------------------
// TetGen.

/// The nodes of a `.node` file.
struct Nodes {
    positions: Vec<Vec3>,
    /// The number of the first node, 0 or 1.
    first: i64,
}

/// Value `i` of a TetGen header, `default` when the header leaves it off.
fn header_value(header: &[&str], i: usize, default: u64) -> Result<u64, TetIoErrorKind> {
    header.get(i).map_or(Ok(default), |t| parse_unsigned(t))
}

fn parse_node(bytes: &[u8]) -> Parse<Nodes> {
    let mut lines = Lines::new(bytes, true);
    lines.next_in("the .node header")?;
    let header = lines.fields_between(".node header", 1, 4, || {
        "1 to 4 (nodes, dimension, attributes, boundary markers)".to_owned()
    })?;
    let line = lines.line;
    let count = parse_unsigned(header[0]).at(line)?;
    let dimension = header_value(header, 1, 3).at(line)?;
    let attributes = header_value(header, 2, 0).at(line)?;
    let markers = header_value(header, 3, 0).at(line)?;
    if dimension != 3 {
        return Err(lines.fail(TetIoErrorKind::Unsupported {
            field: "the dimension",
            found: dimension.to_string(),
            expected: "3",
        }));
    }
    if markers > 1 {
        return Err(lines.fail(TetIoErrorKind::Unsupported {
            field: "the number of boundary markers",
            found: markers.to_string(),
            expected: "0 or 1",
        }));
    }
    let extra = usize::try_from(attributes.saturating_add(markers)).unwrap_or(usize::MAX);
    let list = List {
        section: "the node list",
        header: "the .node header",
        items: "nodes",
        declared: count,
        line: lines.line,
        end: None,
    };
    let mut positions = Vec::with_capacity(lines.capacity(count, MIN_NODE_BYTES));
    let mut first = 0;
    for i in 0..count {
        lines.item(&list, i)?;
        let fields = lines.fields_between("node", 4, extra.saturating_add(4), || {
            if extra == 0 {
                "4 (number, x, y, z)".to_owned()
            } else {
                format!(
                    "4 to {} (number, x, y, z, then up to {attributes} attribute(s) and \
                     {markers} boundary marker)",
                    extra.saturating_add(4)
                )
            }
        })?;
        let line = lines.line;
        let number = parse_int(fields[0]).at(line)?;
        if i == 0 {
            if number != 0 && number != 1 {
                return Err(lines.fail(TetIoErrorKind::FirstNodeNumber(number)));
            }
            first = number;
        }
        let expected = first.saturating_add(i64::try_from(i).unwrap_or(i64::MAX));
        if number != expected {
            return Err(lines.fail(TetIoErrorKind::NodeNumber {
                found: number,
                expected,
            }));
        }
        let position = parse_point(&fields[1..4]).at(line)?;
        for (k, token) in fields[4..].iter().enumerate() {
            if (k as u64) < attributes {
                parse_real(token).at(line)?;
            } else {
                parse_int(token).at(line)?;
            }
        }
        next_index(&positions).at(line)?;
        positions.push(position);
    }
    lines.end_list(&list)?;
    Ok(Nodes { positions, first })
}

/// The tetrahedra of an `.ele` file and the line of each.
fn parse_ele(bytes: &[u8], nodes: &Nodes) -> Parse<(Vec<[u32; 4]>, Vec<usize>)> {
    let mut lines = Lines::new(bytes, true);
    lines.next_in("the .ele header")?;
    let header = lines.fields_between(".ele header", 1, 3, || {
        "1 to 3 (tetrahedra, nodes per tetrahedron, attributes)".to_owned()
    })?;
    let line = lines.line;
    let count = parse_unsigned(header[0]).at(line)?;
    let corners = header_value(header, 1, 4).at(line)?;
    let attributes = header_value(header, 2, 0).at(line)?;
    match corners {
        4 => {}
        10 => return Err(lines.fail(TetIoErrorKind::HigherOrder(10))),
        other => {
            return Err(lines.fail(TetIoErrorKind::Unsupported {
                field: "the number of nodes per tetrahedron",
                found: other.to_string(),
                expected: "4",
            }));
        }
    }
    let attributes = usize::try_from(attributes).unwrap_or(usize::MAX);
    let list = List {
        section: "the tetrahedron list",
        header: "the .ele header",
        items: "tetrahedra",
        declared: count,
        line: lines.line,
        end: None,
    };
    let capacity = lines.capacity(count, MIN_TET_BYTES);
    let (mut tets, mut tet_lines) = (Vec::with_capacity(capacity), Vec::with_capacity(capacity));
    for i in 0..count {
        lines.item(&list, i)?;
        let line = lines.line;
        let fields = &lines.fields;
        // Attributes are optional in TetGen: 5 to 5 + attributes fields.
        let n = fields.len();
        if n < 5 {
            return Err(lines.fail(TetIoErrorKind::TetCorners(n - 1)));
        }
        if n - 5 > attributes {
            return Err(lines.fail(TetIoErrorKind::TetCorners(n - 1 - attributes)));
        }
        parse_int(fields[0]).at(line)?;
        let mut tet = [0u32; 4];
        for (corner, token) in tet.iter_mut().zip(&fields[1..5]) {
            let node = parse_int(token).at(line)?;
            *corner = node
                .checked_sub(nodes.first)
                .and_then(|i| u32::try_from(i).ok())
                .filter(|&i| (i as usize) < nodes.positions.len())
                .ok_or(TetIoErrorKind::NodeOutOfRange {
                    node,
                    count: nodes.positions.len(),
                    first: nodes.first,
                })
                .at(line)?;
        }
        for token in &fields[5..] {
            parse_real(token).at(line)?;
        }
        tets.push(tet);
        tet_lines.push(line);
    }
    lines.end_list(&list)?;
    Ok((tets, tet_lines))
}

// ---------------------------------------------------------------------------
// Gmsh.

/// Gmsh element type of the linear tetrahedron.
const MSH_TET_4: u64 = 4;

/// Node count of Gmsh's higher-order tetrahedron element types.
fn higher_order_tet_nodes(element_type: u64) -> Option<usize> {
    Some(match element_type {
        11 => 10,
        29 => 20,
        30 => 35,
        31 => 56,
        32 => 22,
        33 => 28,
        71 => 84,
        72 => 120,
        73 => 165,
        74 => 220,
        75 => 286,
        79 => 34,
        80 => 40,
        81 => 46,
        82 => 52,
        83 => 58,
        137 => 16,
        _ => return None,
    })
}

/// Node tag → node index: a table while tags are small, a hash map beyond
/// (tags may be sparse and huge).
struct NodeTags {
    dense: Vec<u32>,
    dense_limit: u64,
    sparse: HashMap<u64, u32>,
}

const NO_NODE: u32 = u32::MAX;

impl NodeTags {
    /// A map whose table costs at most about `file_len` bytes.
    fn new(file_len: usize) -> Self {
        Self {
            dense: Vec::new(),
            dense_limit: (file_len / 4) as u64,
            sparse: HashMap::new(),
        }
    }

    fn dense_slot(&self, tag: u64) -> Option<usize> {
        (tag < self.dense_limit).then_some(tag as usize)
    }

    /// Maps `tag` to `index`; `false` (and no change) if `tag` is taken.
    fn insert(&mut self, tag: u64, index: u32) -> bool {
        match self.dense_slot(tag) {
            Some(slot) => {
                if slot >= self.dense.len() {
                    self.dense.resize(slot + 1, NO_NODE);
                }
                let entry = &mut self.dense[slot];
                let free = *entry == NO_NODE;
                if free {
                    *entry = index;
                }
                free
            }
            None => match self.sparse.entry(tag) {
                Entry::Occupied(_) => false,
                Entry::Vacant(v) => {
                    v.insert(index);
                    true
                }
            },
        }
    }

    fn get(&self, tag: u64) -> Option<u32> {
        match self.dense_slot(tag) {
            Some(slot) => self.dense.get(slot).copied().filter(|&i| i != NO_NODE),
            None => self.sparse.get(&tag).copied(),
        }
    }
}

/// A Gmsh reader: one pass over the lines, section by section.
struct MshReader<'a> {
    lines: Lines<'a>,
    version: Option<MshVersion>,
    positions: Vec<Vec3>,
    tags: NodeTags,
    have_nodes: bool,
    have_elements: bool,
    tets: Vec<[u32; 4]>,
    tet_lines: Vec<usize>,
    other_elements: u64,
}

impl<'a> MshReader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self {
            lines: Lines::new(bytes, false),
            version: None,
            positions: Vec::new(),
            tags: NodeTags::new(bytes.len()),
            have_nodes: false,
            have_elements: false,
            tets: Vec::new(),
            tet_lines: Vec::new(),
            other_elements: 0,
        }
    }

    fn run(mut self) -> Parse<TetMesh> {
        while self.lines.advance()? {
            // Like Gmsh, ignore anything between sections.
            if !self.lines.is_section_line() {
                continue;
            }
            match self.lines.fields[0] {
                "$MeshFormat" => self.mesh_format()?,
                "$Nodes" => match self.section_version(self.have_nodes, "$Nodes")? {
                    MshVersion::V2_2 => self.nodes_v2()?,
                    MshVersion::V4_1 => self.nodes_v4()?,
                },
                "$Elements" => {
                    let version = self.section_version(self.have_elements, "$Elements")?;
                    if !self.have_nodes {
                        return Err(self.lines.fail(TetIoErrorKind::MissingSection("$Nodes")));
                    }
                    match version {
                        MshVersion::V2_2 => self.elements_v2()?,
                        MshVersion::V4_1 => self.elements_v4()?,
                    }
                }
                // The sections of format version 1.
                "$NOD" | "$ELM" => {
                    return Err(self.lines.fail(TetIoErrorKind::MshVersion("1".to_owned())));
                }
                // A stray end marker: Gmsh skips it too.
                name if name.starts_with("$End") => {}
                name => self.skip_section(name)?,
            }
        }
        for (seen, section) in [
            (self.version.is_some(), "$MeshFormat"),
            (self.have_nodes, "$Nodes"),
            (self.have_elements, "$Elements"),
        ] {
            if !seen {
                return Err(Fail::whole_file(TetIoErrorKind::MissingSection(section)));
            }
        }
        build_mesh(
            self.positions,
            self.tets,
            &self.tet_lines,
            self.other_elements,
        )
    }

    /// The format version, at the start of a `section` that may appear once.
    fn section_version(&self, seen: bool, section: &'static str) -> Parse<MshVersion> {
        if seen {
            return Err(self.lines.fail(TetIoErrorKind::DuplicateSection(section)));
        }
        self.version.ok_or_else(|| {
            self.lines
                .fail(TetIoErrorKind::MissingSection("$MeshFormat"))
        })
    }

    fn mesh_format(&mut self) -> Parse<()> {
        if self.version.is_some() {
            return Err(self
                .lines
                .fail(TetIoErrorKind::DuplicateSection("$MeshFormat")));
        }
        self.lines.next_in("$MeshFormat")?;
        let fields =
            self.lines
                .fields_exactly("$MeshFormat line", 3, "version, file type, data size")?;
        let (version, file_type) = (fields[0], fields[1]);
        match file_type {
            "0" => {}
            "1" => return Err(self.lines.fail(TetIoErrorKind::BinaryMsh)),
            other => {
                return Err(self.lines.fail(TetIoErrorKind::Unsupported {
                    field: "the file type",
                    found: other.to_owned(),
                    expected: "0 (ASCII)",
                }));
            }
        }
        let number = parse_real(version).at(self.lines.line)?;
        self.version = Some(if (2.0..3.0).contains(&number) {
            MshVersion::V2_2
        } else if number == 4.1 {
            MshVersion::V4_1
        } else {
            return Err(self
                .lines
                .fail(TetIoErrorKind::MshVersion(version.to_owned())));
        });
        self.lines.next_in("$MeshFormat")?;
        self.lines.expect_marker("$EndMeshFormat")
    }

    /// Skips the section `section` (such as `$PhysicalNames`) to its end marker.
    fn skip_section(&mut self, section: &str) -> Parse<()> {
        let end = format!("$End{}", &section[1..]);
        loop {
            self.lines.next_in(section)?;
            if self.lines.fields[0] == end {
                return Ok(());
            }
        }
    }

    /// Adds a node whose tag is on line `line`.
    fn add_node(&mut self, tag: u64, position: Vec3, line: usize) -> Parse<()> {
        let index = next_index(&self.positions).at(line)?;
        if !self.tags.insert(tag, index) {
            return Err(TetIoErrorKind::DuplicateNodeTag(tag)).at(line);
        }
        self.positions.push(position);
        Ok(())
    }

    /// Reads the element on the current line, whose node tags start at field
    /// `nodes_from`: keeps linear tetrahedra, counts other types.
    fn element(&mut self, element_type: u64, nodes_from: usize) -> Parse<()> {
        let line = self.lines.line;
        if element_type != MSH_TET_4 {
            if let Some(nodes) = higher_order_tet_nodes(element_type) {
                return Err(self.lines.fail(TetIoErrorKind::HigherOrder(nodes)));
            }
            self.other_elements += 1;
            return Ok(());
        }
        let nodes = &self.lines.fields[nodes_from..];
        if nodes.len() != 4 {
            return Err(self.lines.fail(TetIoErrorKind::TetCorners(nodes.len())));
        }
        let mut tet = [0u32; 4];
        for (corner, token) in tet.iter_mut().zip(nodes) {
            let tag = parse_unsigned(token).at(line)?;
            *corner = self
                .tags
                .get(tag)
                .ok_or(TetIoErrorKind::UndefinedNodeTag(tag))
                .at(line)?;
        }
        self.tets.push(tet);
        self.tet_lines.push(line);
        Ok(())
    }

    /// Reads a version 4 section header: entity blocks, items, minimum tag,
    /// maximum tag; returns the first two.
    fn counts_v4(&mut self, section: &'static str, record: &'static str) -> Parse<(u64, u64)> {
        self.lines.next_in(section)?;
        let fields = self.lines.fields_exactly(
            record,
            4,
            "entity blocks, total, minimum tag, maximum tag",
        )?;
        let line = self.lines.line;
        let blocks = parse_unsigned(fields[0]).at(line)?;
        let total = parse_unsigned(fields[1]).at(line)?;
        parse_unsigned(fields[2]).at(line)?;
        parse_unsigned(fields[3]).at(line)?;
        Ok((blocks, total))
    }

    /// Reads a version 2 section header: the number of items.
    fn count_v2(&mut self, section: &'static str, record: &'static str) -> Parse<u64> {
        self.lines.next_in(section)?;
        let fields = self.lines.fields_exactly(record, 1, "the count")?;
        parse_unsigned(fields[0]).at(self.lines.line)
    }

    fn nodes_v2(&mut self) -> Parse<()> {
        self.have_nodes = true;
        let count = self.count_v2("$Nodes", "$Nodes header")?;
        let list = List {
            section: "$Nodes",
            header: "the $Nodes header",
            items: "nodes",
            declared: count,
            line: self.lines.line,
            end: Some("$EndNodes"),
        };
        self.positions
            .reserve(self.lines.capacity(count, MIN_NODE_BYTES));
        for i in 0..count {
            self.lines.item(&list, i)?;
            let fields = self.lines.fields_exactly("node", 4, "tag x y z")?;
            let line = self.lines.line;
            let tag = parse_unsigned(fields[0]).at(line)?;
            let position = parse_point(&fields[1..]).at(line)?;
            self.add_node(tag, position, line)?;
        }
        self.lines.end_list(&list)
    }

    fn elements_v2(&mut self) -> Parse<()> {
        self.have_elements = true;
        let count = self.count_v2("$Elements", "$Elements header")?;
        let list = List {
            section: "$Elements",
            header: "the $Elements header",
            items: "elements",
            declared: count,
            line: self.lines.line,
            end: Some("$EndElements"),
        };
        self.tets.reserve(self.lines.capacity(count, MIN_TET_BYTES));
        for i in 0..count {
            self.lines.item(&list, i)?;
            let fields = self.lines.fields_between("element", 3, usize::MAX, || {
                "at least 3 (tag, type, number of tags)".to_owned()
            })?;
            let line = self.lines.line;
            parse_unsigned(fields[0]).at(line)?;
            let element_type = parse_unsigned(fields[1]).at(line)?;
            let tags = parse_unsigned(fields[2]).at(line)?;
            let nodes_from = usize::try_from(tags)
                .ok()
                .and_then(|t| t.checked_add(3))
                .filter(|&n| n <= fields.len())
                .ok_or_else(|| TetIoErrorKind::FieldCount {
                    record: "element",
                    found: fields.len(),
                    expected: format!("at least 3 + {tags} (tag, type, number of tags, tags)"),
                })
                .at(line)?;
            for tag in &fields[3..nodes_from] {
                parse_int(tag).at(line)?;
            }
            self.element(element_type, nodes_from)?;
        }
        self.lines.end_list(&list)
    }

    fn nodes_v4(&mut self) -> Parse<()> {
        self.have_nodes = true;
        let (blocks, count) = self.counts_v4("$Nodes", "$Nodes header")?;
        let header_line = self.lines.line;
        let block_list = List {
            section: "$Nodes",
            header: "the $Nodes header",
            items: "entity blocks",
            declared: blocks,
            line: self.lines.line,
            end: Some("$EndNodes"),
        };
        self.positions
            .reserve(self.lines.capacity(count, MIN_NODE_BYTES));
        let mut total = 0u64;
        // A block lists its tags, then their coordinates.
        let mut tags: Vec<(u64, usize)> = Vec::new();
        for b in 0..blocks {
            self.lines.item(&block_list, b)?;
            let fields = self.lines.fields_exactly(
                "node block header",
                4,
                "entity dimension, entity tag, parametric, nodes",
            )?;
            let line = self.lines.line;
            let dimension = parse_unsigned(fields[0]).at(line)?;
            parse_int(fields[1]).at(line)?;
            let parametric = parse_unsigned(fields[2]).at(line)?;
            let n = parse_unsigned(fields[3]).at(line)?;
            if dimension > 3 {
                return Err(self.lines.fail(TetIoErrorKind::Unsupported {
                    field: "the entity dimension",
                    found: dimension.to_string(),
                    expected: "0 to 3",
                }));
            }
            if parametric > 1 {
                return Err(self.lines.fail(TetIoErrorKind::Unsupported {
                    field: "the parametric flag",
                    found: parametric.to_string(),
                    expected: "0 or 1",
                }));
            }
            // Parametric nodes add their entity's dimension of coordinates.
            let values = 3 + (dimension * parametric) as usize;
            let names = if values == 3 {
                "x y z"
            } else {
                "x y z and parametric coordinates"
            };
            let list = List {
                section: "$Nodes",
                header: "the node block header",
                items: "nodes",
                declared: n,
                line: self.lines.line,
                end: Some("$EndNodes"),
            };
            tags.clear();
            tags.reserve(self.lines.capacity(n, MIN_NODE_BYTES));
            for k in 0..n {
                self.lines.item(&list, k)?;
                let fields = self.lines.fields_exactly("node tag line", 1, "the tag")?;
                tags.push((
                    parse_unsigned(fields[0]).at(self.lines.line)?,
                    self.lines.line,
                ));
            }
            for (k, &(tag, tag_line)) in (0..).zip(&tags) {
                self.lines.item(&list, k)?;
                let fields = self
                    .lines
                    .fields_exactly("node coordinate line", values, names)?;
                let line = self.lines.line;
                let position = parse_point(fields).at(line)?;
                for value in &fields[3..] {
                    parse_real(value).at(line)?;
                }
                self.add_node(tag, position, tag_line)?;
            }
            total = total.saturating_add(n);
        }
        if total != count {
            return Err(TetIoErrorKind::CountMismatch {
                header: "the $Nodes header",
                items: "nodes",
                declared: count,
                found: total,
            })
            .at(header_line);
        }
        self.lines.next_in("$Nodes")?;
        self.lines.expect_marker("$EndNodes")
    }

    fn elements_v4(&mut self) -> Parse<()> {
        self.have_elements = true;
        let (blocks, count) = self.counts_v4("$Elements", "$Elements header")?;
        let header_line = self.lines.line;
        let block_list = List {
            section: "$Elements",
            header: "the $Elements header",
            items: "entity blocks",
            declared: blocks,
            line: self.lines.line,
            end: Some("$EndElements"),
        };
        self.tets.reserve(self.lines.capacity(count, MIN_TET_BYTES));
        let mut total = 0u64;
        for b in 0..blocks {
            self.lines.item(&block_list, b)?;
            let fields = self.lines.fields_exactly(
                "element block header",
                4,
                "entity dimension, entity tag, element type, elements",
            )?;
            let line = self.lines.line;
            parse_unsigned(fields[0]).at(line)?;
            parse_int(fields[1]).at(line)?;
            let element_type = parse_unsigned(fields[2]).at(line)?;
            let n = parse_unsigned(fields[3]).at(line)?;
            let list = List {
                section: "$Elements",
                header: "the element block header",
                items: "elements",
                declared: n,
                line: self.lines.line,
                end: Some("$EndElements"),
            };
            for k in 0..n {
                self.lines.item(&list, k)?;
                parse_unsigned(self.lines.fields[0]).at(self.lines.line)?;
                self.element(element_type, 1)?;
            }
            total = total.saturating_add(n);
        }
        if total != count {
            return Err(TetIoErrorKind::CountMismatch {
                header: "the $Elements header",
                items: "elements",
                declared: count,
                found: total,
            })
            .at(header_line);
        }
        self.lines.next_in("$Elements")?;
        self.lines.expect_marker("$EndElements")
    }
}

// ---------------------------------------------------------------------------
// Writing.

/// [`fsutil::write_atomically`](crate::fsutil::write_atomically) with the
/// error naming `path`.
fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> Result<(), TetIoError> {
    crate::fsutil::write_atomically(path, write)
        .map_err(|e| TetIoError::new(path, TetIoErrorKind::Write(e.to_string())))
}

/// `x y z` in shortest round-trip form.
fn write_xyz<W: Write>(out: &mut W, p: &Vec3) -> io::Result<()> {
    writeln!(out, "{:?} {:?} {:?}", p.x, p.y, p.z)
}

/// The four corners of `tet` plus `offset` (1 for 1-based formats).
fn write_corners<W: Write>(out: &mut W, tet: &[u32; 4], offset: u64) -> io::Result<()> {
    let [a, b, c, d] = tet.map(|v| u64::from(v) + offset);
    writeln!(out, "{a} {b} {c} {d}")
}

/// Writes the mesh as TetGen `.node` and `.ele` files (the paths given by
/// [`tetgen_paths`]), nodes and tetrahedra numbered from 1, each file
/// replaced atomically.
///
/// # Errors
/// [`TetIoErrorKind::Write`] naming the file that could not be written;
/// both files are written before either replaces the old one, so a failure
/// while writing leaves the old pair.
pub fn write_tetgen(path: &Path, mesh: &TetMesh) -> Result<(), TetIoError> {
    let (node_path, ele_path) = tetgen_paths(path);
    crate::fsutil::write_pair_atomically(
        (&node_path, |out: &mut BufWriter<File>| {
            write_node_text(out, mesh)
        }),
        (&ele_path, |out: &mut BufWriter<File>| {
            write_ele_text(out, mesh)
        }),
    )
    .map_err(|(path, e)| TetIoError::new(&path, TetIoErrorKind::Write(e.to_string())))
}

fn write_node_text<W: Write>(out: &mut W, mesh: &TetMesh) -> io::Result<()> {
    writeln!(out, "# TetGen nodes by Softbody Studio: number x y z")?;
    writeln!(out, "{} 3 0 0", mesh.positions().len())?;
    for (i, p) in mesh.positions().iter().enumerate() {
        write!(out, "{} ", i + 1)?;
        write_xyz(out, p)?;
    }
    Ok(())
}

fn write_ele_text<W: Write>(out: &mut W, mesh: &TetMesh) -> io::Result<()> {
    writeln!(
        out,
        "# TetGen tetrahedra by Softbody Studio: number, 4 nodes"
    )?;
    writeln!(out, "{} 4 0", mesh.tets().len())?;
    for (i, tet) in mesh.tets().iter().enumerate() {
        write!(out, "{} ", i + 1)?;
        write_corners(out, tet, 1)?;
    }
    Ok(())
}

/// Writes the mesh as an ASCII Gmsh `.msh` file of the given version,
/// replacing `path` atomically: one volume entity (tag 1) in physical group 1,
/// nodes and elements tagged from 1.
///
/// # Errors
/// [`TetIoErrorKind::Write`] when the file cannot be written.
pub fn write_msh(path: &Path, mesh: &TetMesh, version: MshVersion) -> Result<(), TetIoError> {
    write_atomically(path, |out| match version {
        MshVersion::V2_2 => write_msh_v2(out, mesh),
        MshVersion::V4_1 => write_msh_v4(out, mesh),
    })
}

fn write_msh_v2<W: Write>(out: &mut W, mesh: &TetMesh) -> io::Result<()> {
    let (positions, tets) = (mesh.positions(), mesh.tets());
    writeln!(out, "$MeshFormat\n2.2 0 8\n$EndMeshFormat")?;
    writeln!(out, "$Nodes\n{}", positions.len())?;
    for (i, p) in positions.iter().enumerate() {
        write!(out, "{} ", i + 1)?;
        write_xyz(out, p)?;
    }
    writeln!(out, "$EndNodes\n$Elements\n{}", tets.len())?;
    for (i, tet) in tets.iter().enumerate() {
        // Type 4, two tags: physical group 1, elementary entity 1.
        write!(out, "{} {MSH_TET_4} 2 1 1 ", i + 1)?;
        write_corners(out, tet, 1)?;
    }
    writeln!(out, "$EndElements")
}

fn write_msh_v4<W: Write>(out: &mut W, mesh: &TetMesh) -> io::Result<()> {
    let (positions, tets) = (mesh.positions(), mesh.tets());
    let (n, m) = (positions.len(), tets.len());
    let (lo, hi) = super::bounds(positions);
    writeln!(out, "$MeshFormat\n4.1 0 8\n$EndMeshFormat")?;
    // No points, curves or surfaces; volume 1 with its bounding box, in
    // physical group 1, with no bounding surfaces.
    writeln!(out, "$Entities\n0 0 0 1")?;
    writeln!(
        out,
        "1 {:?} {:?} {:?} {:?} {:?} {:?} 1 1 0",
        lo.x, lo.y, lo.z, hi.x, hi.y, hi.z
    )?;
    writeln!(out, "$EndEntities")?;
    // One block on volume 1, not parametric: the tags, then the coordinates.
    writeln!(out, "$Nodes\n1 {n} 1 {n}\n3 1 0 {n}")?;
    for i in 1..=n {
        writeln!(out, "{i}")?;
    }
    for p in positions {
        write_xyz(out, p)?;
    }
    writeln!(out, "$EndNodes")?;
    writeln!(out, "$Elements\n1 {m} 1 {m}\n3 1 {MSH_TET_4} {m}")?;
    for (i, tet) in tets.iter().enumerate() {
        write!(out, "{} ", i + 1)?;
        write_corners(out, tet, 1)?;
    }
    writeln!(out, "$EndElements")
}

/// Writes the mesh as a legacy ASCII VTK file (`UNSTRUCTURED_GRID`,
/// `VTK_TETRA` cells) for ParaView, replacing `path` atomically.
///
/// # Errors
/// [`TetIoErrorKind::Write`] when the file cannot be written.
pub fn write_vtk(path: &Path, mesh: &TetMesh) -> Result<(), TetIoError> {
    write_atomically(path, |out| write_vtk_text(out, mesh))
}

fn write_vtk_text<W: Write>(out: &mut W, mesh: &TetMesh) -> io::Result<()> {
    /// VTK's cell type of the linear tetrahedron.
    const VTK_TETRA: u8 = 10;
    let (positions, tets) = (mesh.positions(), mesh.tets());
    writeln!(out, "# vtk DataFile Version 3.0")?;
    writeln!(out, "Softbody Studio tetrahedral mesh")?;
    writeln!(out, "ASCII\nDATASET UNSTRUCTURED_GRID")?;
    writeln!(out, "POINTS {} double", positions.len())?;
    for p in positions {
        write_xyz(out, p)?;
    }
    // Each cell: its corner count, then the 0-based corners.
    writeln!(out, "CELLS {} {}", tets.len(), tets.len() * 5)?;
    for tet in tets {
        write!(out, "4 ")?;
        write_corners(out, tet, 0)?;
    }
    writeln!(out, "CELL_TYPES {}", tets.len())?;
    for _ in tets {
        writeln!(out, "{VTK_TETRA}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE_0: &str = "4 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n";
    const ELE_0: &str = "1 4 0\n0 0 1 2 3\n";

    fn tetgen(node: &str, ele: &str) -> Result<TetMesh, TetIoError> {
        parse_tetgen(node.as_bytes(), ele.as_bytes(), Path::new("cube"))
    }

    fn msh(text: &str) -> Result<TetMesh, TetIoError> {
        parse_msh(text.as_bytes(), Path::new("cube.msh"))
    }

    /// The message of the error `result` must be.
    fn message(result: Result<TetMesh, TetIoError>) -> String {
        match result {
            Ok(mesh) => panic!("expected an error, read {mesh:?}"),
            Err(e) => e.to_string(),
        }
    }

    /// A version 2 file with `nodes` and `elements` as their sections' lines.
    fn msh2(nodes: &[&str], elements: &[&str]) -> String {
        format!(
            "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n{}\n{}\n$EndNodes\n\
             $Elements\n{}\n{}\n$EndElements\n",
            nodes.len(),
            nodes.join("\n"),
            elements.len(),
            elements.join("\n")
        )
    }

    const UNIT_NODES: [&str; 4] = ["1 0 0 0", "2 1 0 0", "3 0 1 0", "4 0 0 1"];

    fn unit_tet() -> TetMesh {
        let positions = vec![
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
            Vec3::new(0.0, 0.0, 0.1),
        ];
        TetMesh::new(positions, vec![[0, 1, 2, 3]]).unwrap()
    }

    #[test]
    fn lines_skip_blanks_and_comments_and_keep_numbers() {
        let mut lines = Lines::new(b"# head\n\n  a  b\t c\r\n   # only\nd # tail\ne", true);
        let mut seen = Vec::new();
        while lines.advance().unwrap() {
            seen.push((lines.line, lines.fields.join(",")));
        }
        let expected = [(3, "a,b,c"), (5, "d"), (6, "e")];
        assert_eq!(seen, expected.map(|(l, f)| (l, f.to_owned())));
        // Without comments `#` is an ordinary character.
        let mut lines = Lines::new(b"a # b", false);
        assert!(lines.advance().unwrap());
        assert_eq!(lines.fields, ["a", "#", "b"]);
    }

    #[test]
    fn lines_refuse_binary() {
        for bytes in [&b"ok\nab\0c\n"[..], b"ok\n\xff\xfe\n"] {
            let mut lines = Lines::new(bytes, true);
            assert!(lines.advance().unwrap());
            let fail = lines.advance().unwrap_err();
            assert_eq!((fail.line, fail.kind), (Some(2), TetIoErrorKind::NotText));
        }
    }

    #[test]
    fn tetgen_zero_based() {
        let mesh = tetgen(NODE_0, ELE_0).unwrap();
        assert_eq!(mesh.positions().len(), 4);
        assert_eq!(mesh.tets(), [[0, 1, 2, 3]]);
    }

    #[test]
    fn tetgen_one_based_with_attributes_markers_comments_and_defaults() {
        // The header may omit dimension, attributes and markers; attributes
        // and markers may be left off a line; extra blank and comment lines.
        let node = "# nodes\n4 3 1 1\n\n1 0 0 0 0.5 1\n2 1 0 0 0.5\n3 0 1 0 # x\n4 0 0 1 2 0\n";
        let ele = "1\n\n  1  1 3 2 4  # negatively oriented\n";
        let mesh = tetgen(node, ele).unwrap();
        // Flipped to positive.
        assert_eq!(mesh.tets(), [[0, 2, 3, 1]]);
        assert!(mesh.volume() > 0.0);
        let ele_with_region = "1 4 1\n1 1 2 3 4 7\n";
        assert!(tetgen(node, ele_with_region).is_ok());
    }

    #[test]
    fn tetgen_errors_name_file_line_and_problem() {
        let cases = [
            (
                NODE_0,
                "1 4 0\n\n0 0 1 2\n",
                "cube.ele:3: tetrahedron has 3 corners, expected 4",
            ),
            (
                NODE_0,
                "1 4 0\n0 0 1 2 3 9\n",
                "cube.ele:2: tetrahedron has 5 corners, expected 4",
            ),
            (
                NODE_0,
                "1 10 0\n",
                "cube.ele:1: 10-node tetrahedra: only linear 4-node tetrahedra are supported",
            ),
            (
                NODE_0,
                "1 6 0\n",
                "cube.ele:1: the number of nodes per tetrahedron is 6, expected 4",
            ),
            (
                NODE_0,
                "1 4 0\n0 0 1 2 4\n",
                "cube.ele:2: node 4 is not defined: the .node file has 4 nodes numbered from 0",
            ),
            (
                NODE_0,
                "1 4 0\n0 -1 1 2 3\n",
                "cube.ele:2: node -1 is not defined: the .node file has 4 nodes numbered from 0",
            ),
            (
                NODE_0,
                "2 4 0\n0 0 1 2 3\n",
                "cube.ele:1: the .ele header declares 2 tetrahedra, but the file ends after 1 (is \
                 it truncated?)",
            ),
            (
                NODE_0,
                "1 4 0\n0 0 1 2 3\n1 0 1 2 3\n# end\n2 0 1 2 3\n",
                "cube.ele:3: the .ele header declares 1 tetrahedra, but there are 3",
            ),
            (
                NODE_0,
                "1 4 0\n0 0 1 2 2\n",
                "cube.ele:2: tetrahedron is degenerate (zero volume or a repeated node)",
            ),
            (NODE_0, "0 4 0\n", "cube.ele: no tetrahedra"),
            (
                NODE_0,
                "# nothing\n",
                "cube.ele: unexpected end of file in the .ele header (is the file truncated?)",
            ),
            (
                NODE_0,
                "1 4 0\n0 0 1 2 x\n",
                "cube.ele:2: 'x' is not an integer",
            ),
            (
                NODE_0,
                "-1 4 0\n",
                "cube.ele:1: '-1' is not a non-negative integer",
            ),
            (
                "4 3 0 0\n2 0 0 0\n",
                ELE_0,
                "cube.node:2: the first node is numbered 2; TetGen numbers nodes from 0 or 1",
            ),
            (
                "4 3 0 0\n1 0 0 0\n2 1 0 0\n4 0 1 0\n3 0 0 1\n",
                ELE_0,
                "cube.node:4: node number 4, expected 3: TetGen nodes are numbered consecutively",
            ),
            (
                "4 2 0 0\n",
                ELE_0,
                "cube.node:1: the dimension is 2, expected 3",
            ),
            (
                "4 3 0 2\n",
                ELE_0,
                "cube.node:1: the number of boundary markers is 2, expected 0 or 1",
            ),
            (
                "4 3 0 0\n0 0 0 0\n1 1 0\n",
                ELE_0,
                "cube.node:3: node has 3 values, expected 4 (number, x, y, z)",
            ),
            (
                "4 3 1 0\n0 0 0 0 1 1\n",
                ELE_0,
                "cube.node:2: node has 6 values, expected 4 to 5 (number, x, y, z, then up to 1 \
                 attribute(s) and 0 boundary marker)",
            ),
            (
                "4 3 0 0\n0 0 0 nan\n",
                ELE_0,
                "cube.node:2: coordinate 'nan' is not a finite number",
            ),
            (
                "4 3 0 0\n0 0 -inf 0\n",
                ELE_0,
                "cube.node:2: coordinate '-inf' is not a finite number",
            ),
            (
                "4 3 0 0\n0 0 0 1,5\n",
                ELE_0,
                "cube.node:2: '1,5' is not a number",
            ),
            (
                "4 3 1 1\n0 0 0 0 a 1\n",
                ELE_0,
                "cube.node:2: 'a' is not a number",
            ),
            (
                "4 3 1 1\n0 0 0 0 1 0.5\n",
                ELE_0,
                "cube.node:2: '0.5' is not an integer",
            ),
            (
                "4 3 0 0\n0 0 0 0\n",
                ELE_0,
                "cube.node:1: the .node header declares 4 nodes, but the file ends after 1 (is it \
                 truncated?)",
            ),
            (
                "3 3 0 0\n0 0 0 0\n1 1 0 0\n2 0 1 0\n3 0 0 1\n",
                ELE_0,
                "cube.node:5: the .node header declares 3 nodes, but there are 4",
            ),
            (
                "",
                ELE_0,
                "cube.node: unexpected end of file in the .node header (is the file truncated?)",
            ),
            (
                "4 3 0 0 9\n",
                ELE_0,
                "cube.node:1: .node header has 5 values, expected 1 to 4 (nodes, dimension, attributes, boundary markers)",
            ),
            (
                "\u{1}\0",
                ELE_0,
                "cube.node:1: binary data where text was expected",
            ),
        ];
        for (node, ele, expected) in cases {
            assert_eq!(message(tetgen(node, ele)), expected, "{node:?} {ele:?}");
        }
    }

    #[test]
    fn msh_v2_reads_tets_and_skips_other_elements_and_sections() {
        let text = msh2(
            &["10 0 0 0", "20 1 0 0", "30 0 1 0", "5 0 0 1"],
            &[
                "1 15 2 0 1 10",
                "2 2 2 0 1 10 20 30",
                "3 4 3 1 1 0 10 20 30 5",
            ],
        )
        .replacen(
            "$Nodes",
            "$PhysicalNames\n1\n3 1 \"body $Nodes\"\n$EndPhysicalNames\n\
             not in any section\n$Nodes",
            1,
        ) + "$Comments\nanything\n$EndComments\n";
        let mesh = msh(&text).unwrap();
        assert_eq!(mesh.positions()[3], Vec3::new(0.0, 0.0, 1.0));
        assert_eq!(mesh.tets(), [[0, 1, 2, 3]]);
        // Version 2.0 and 2.1 files have the same sections.
        assert!(msh(&msh2(&UNIT_NODES, &["1 4 0 1 2 3 4"]).replace("2.2 0 8", "2.1 0 8")).is_ok());
    }

    #[test]
    fn msh_v4_reads_blocks_sparse_tags_and_parametric_nodes() {
        let text = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Entities\n0 0 0 1\n1 0 0 0 1 1 1 0 0\n$EndEntities\n\
                    $Nodes\n2 4 3 900\n1 1 1 2\n900\n3\n0 0 0 0.25\n1 0 0 0.5\n\
                    3 1 0 2\n77\n12\n0 1 0\n0 0 1\n$EndNodes\n\
                    $Elements\n3 2 1 3\n1 1 1 1\n1 900 3\n3 1 4 1\n2 12 3 77 900\n\
                    2 1 2 0\n$EndElements\n";
        let mesh = msh(text).unwrap();
        assert_eq!(mesh.positions()[0], Vec3::new(0.0, 0.0, 0.0));
        assert_eq!(mesh.positions()[3], Vec3::new(0.0, 0.0, 1.0));
        // Tags 12 3 77 900 are nodes 3 1 2 0, negatively oriented: flipped.
        assert_eq!(mesh.tets(), [[3, 1, 0, 2]]);
    }

    #[test]
    fn msh_errors_name_file_line_and_problem() {
        let v4 = |nodes: &str, elements: &str| {
            format!(
                "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n{nodes}$EndNodes\n\
                 $Elements\n{elements}$EndElements\n"
            )
        };
        let v4_nodes = "1 4 1 4\n3 1 0 4\n1\n2\n3\n4\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n";
        let v4_tets = "1 1 1 1\n3 1 4 1\n1 1 2 3 4\n";
        // Line 14 is the second element.
        let undefined = msh2(&UNIT_NODES, &["1 4 0 1 2 3 4", "2 4 2 1 1 1 2 3 12"]);
        let cases = [
            (
                undefined,
                "cube.msh:14: node tag 12 is not defined".to_owned(),
            ),
            (
                msh2(&UNIT_NODES, &["1 4 0 1 2 3"]),
                "cube.msh:13: tetrahedron has 3 corners, expected 4".to_owned(),
            ),
            (
                msh2(&UNIT_NODES, &["1 11 0 1 2 3 4 5 6 7 8 9 10"]),
                "cube.msh:13: 10-node tetrahedra: only linear 4-node tetrahedra are supported"
                    .to_owned(),
            ),
            (
                msh2(&UNIT_NODES, &["1 2 0 1 2 3", "2 1 0 1 2"]),
                "cube.msh: no tetrahedra (only 2 elements of other types: is it a surface mesh? \
                 Mesh the volume first)"
                    .to_owned(),
            ),
            (
                msh2(&UNIT_NODES, &["1 4 0 1 2 3 3"]),
                "cube.msh:13: tetrahedron is degenerate (zero volume or a repeated node)"
                    .to_owned(),
            ),
            (
                msh2(&UNIT_NODES, &["1 4 5 1 2 3 4"]),
                "cube.msh:13: element has 7 values, expected at least 3 + 5 (tag, type, number \
                 of tags, tags)"
                    .to_owned(),
            ),
            (
                msh2(
                    &["1 0 0 0", "1 1 0 0", "3 0 1 0", "4 0 0 1"],
                    &["1 4 0 1 2 3 4"],
                ),
                "cube.msh:7: node tag 1 is defined twice".to_owned(),
            ),
            (
                msh2(
                    &["1 0 0 0", "2 1 0 0", "3 0 inf 0", "4 0 0 1"],
                    &["1 4 0 1 2 3 4"],
                ),
                "cube.msh:8: coordinate 'inf' is not a finite number".to_owned(),
            ),
            (
                msh2(
                    &["1 0 0 0", "2 1 0", "3 0 1 0", "4 0 0 1"],
                    &["1 4 0 1 2 3 4"],
                ),
                "cube.msh:7: node has 3 values, expected 4 (tag x y z)".to_owned(),
            ),
            (
                msh2(&UNIT_NODES, &["1 4 0 1 2 3 4"]).replace("$Nodes\n4", "$Nodes\n5"),
                "cube.msh:5: the $Nodes header declares 5 nodes, but there are 4".to_owned(),
            ),
            (
                msh2(&UNIT_NODES, &["1 4 0 1 2 3 4"]).replace("$Nodes\n4", "$Nodes\n2"),
                "cube.msh:8: the $Nodes header declares 2 nodes, but there are 4".to_owned(),
            ),
            (
                msh2(&UNIT_NODES, &["1 4 0 1 2 3 4"]).replace("$EndNodes", "$EndNode"),
                "cube.msh:10: expected $EndNodes, found '$EndNode'".to_owned(),
            ),
            (
                msh2(&UNIT_NODES, &[])[..60].to_owned(),
                "cube.msh:5: the $Nodes header declares 4 nodes, but the file ends after 2 (is it \
                 truncated?)"
                    .to_owned(),
            ),
            (
                msh2(&UNIT_NODES, &["1 4 0 1 2 3 4"]).replace("2.2 0 8", "2.2 1 8"),
                "cube.msh:2: binary .msh is not supported; re-save as ASCII".to_owned(),
            ),
            (
                msh2(&UNIT_NODES, &["1 4 0 1 2 3 4"]).replace("2.2 0 8", "4 0 8"),
                "cube.msh:2: MSH format version 4 is not supported; re-save as ASCII version 4.1 \
                 or 2.2"
                    .to_owned(),
            ),
            (
                "$NOD\n4\n".to_owned(),
                "cube.msh:1: MSH format version 1 is not supported; re-save as ASCII version 4.1 \
                 or 2.2"
                    .to_owned(),
            ),
            (
                msh2(&UNIT_NODES, &["1 4 0 1 2 3 4"]).replace("2.2 0 8", "2.2 0"),
                "cube.msh:2: $MeshFormat line has 2 values, expected 3 (version, file type, data \
                 size)"
                    .to_owned(),
            ),
            (
                msh2(&UNIT_NODES, &["1 4 0 1 2 3 4"])
                    .split_once("$EndMeshFormat\n")
                    .unwrap()
                    .1
                    .to_owned(),
                "cube.msh:1: missing $MeshFormat section".to_owned(),
            ),
            (
                "just some text\n".to_owned(),
                "cube.msh: missing $MeshFormat section".to_owned(),
            ),
            (
                msh2(&UNIT_NODES, &["1 4 0 1 2 3 4"])
                    .split("$Elements")
                    .next()
                    .unwrap()
                    .to_owned(),
                "cube.msh: missing $Elements section".to_owned(),
            ),
            (
                msh2(&UNIT_NODES, &["1 4 0 1 2 3 4"])
                    .replace("$EndNodes\n", "$EndNodes\n$Nodes\n0\n$EndNodes\n"),
                "cube.msh:11: a second $Nodes section; only one is supported".to_owned(),
            ),
            (
                "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Elements\n0\n$EndElements\n".to_owned(),
                "cube.msh:4: missing $Nodes section".to_owned(),
            ),
            (
                "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Periodic\n1\n".to_owned(),
                "cube.msh: unexpected end of file in $Periodic (is the file truncated?)".to_owned(),
            ),
            (
                v4(
                    "1 4 1 4\n3 1 0 4\n1\n2\n3\n4\n0 0 0\n1 0 0\n0 1 0\n",
                    v4_tets,
                ),
                "cube.msh:6: the node block header declares 4 nodes, but there are 3".to_owned(),
            ),
            (
                v4(&v4_nodes.replace("1 4 1 4", "1 5 1 4"), v4_tets),
                "cube.msh:5: the $Nodes header declares 5 nodes, but there are 4".to_owned(),
            ),
            (
                v4(&v4_nodes.replace("1 4 1 4", "2 4 1 4"), v4_tets),
                "cube.msh:5: the $Nodes header declares 2 entity blocks, but there are 1"
                    .to_owned(),
            ),
            (
                v4(&v4_nodes.replace("3 1 0 4", "3 1 2 4"), v4_tets),
                "cube.msh:6: the parametric flag is 2, expected 0 or 1".to_owned(),
            ),
            (
                v4(&v4_nodes.replace("3 1 0 4", "3 1 1 4"), v4_tets),
                "cube.msh:11: node coordinate line has 3 values, expected 6 (x y z and \
                 parametric coordinates)"
                    .to_owned(),
            ),
            (
                v4(v4_nodes, "1 1 1 1\n3 1 4 1\n1 1 2 3 5\n"),
                "cube.msh:19: node tag 5 is not defined".to_owned(),
            ),
            (
                v4(v4_nodes, "1 2 1 2\n3 1 4 1\n1 1 2 3 4\n"),
                "cube.msh:17: the $Elements header declares 2 elements, but there are 1".to_owned(),
            ),
            (
                v4(v4_nodes, "1 1 1 1\n3 1 4 2\n1 1 2 3 4\n"),
                "cube.msh:18: the element block header declares 2 elements, but there are 1"
                    .to_owned(),
            ),
            (
                v4(v4_nodes, "1 1 1 1\n3 1 29 1\n1 1 2 3 4\n"),
                "cube.msh:19: 20-node tetrahedra: only linear 4-node tetrahedra are supported"
                    .to_owned(),
            ),
            (
                v4(v4_nodes, "1 1 1 1\n3 1 4 1\n1 1 2 3 4\n5\n"),
                "cube.msh:20: expected $EndElements, found '5'".to_owned(),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(message(msh(&text)), expected, "{text}");
        }
    }

    #[test]
    fn huge_counts_reserve_nothing_unreasonable() {
        let huge = u64::MAX.to_string();
        let node = format!("{huge} 3 0 0\n0 0 0 0\n");
        let ends = |header: &str, items: &str, found: u64| {
            format!("{header} declares {huge} {items}, but the file ends after {found}")
        };
        assert!(message(tetgen(&node, ELE_0)).contains(&ends("the .node header", "nodes", 1)));
        let ele = format!("{huge} 4 {huge}\n0 0 1 2 3\n");
        assert!(message(tetgen(NODE_0, &ele)).contains(&ends("the .ele header", "tetrahedra", 1)));
        let v2 = format!("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n{huge}\n1 0 0 0\n");
        assert!(message(msh(&v2)).contains(&ends("the $Nodes header", "nodes", 1)));
        let v4 = format!(
            "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n{huge} {huge} 1 {huge}\n\
             0 1 0 {huge}\n1\n"
        );
        assert!(message(msh(&v4)).contains(&ends("the node block header", "nodes", 1)));
        // A huge tag goes to the hash map, not a table of that size.
        let sparse = msh2(
            &[
                "1 0 0 0",
                "2 1 0 0",
                "3 0 1 0",
                &format!("{} 0 0 1", u64::MAX),
            ],
            &[&format!("1 4 0 1 2 3 {}", u64::MAX)],
        );
        assert_eq!(msh(&sparse).unwrap().tets().len(), 1);
    }

    #[test]
    fn node_tags_map_dense_and_sparse_tags() {
        let mut tags = NodeTags::new(400);
        for (i, tag) in [5, 99, 100, 7_000_000_000, u64::MAX]
            .into_iter()
            .enumerate()
        {
            assert!(tags.insert(tag, i as u32), "{tag}");
        }
        assert!(!tags.insert(99, 9));
        assert!(!tags.insert(7_000_000_000, 9));
        assert_eq!(
            [5, 99, 100, 7_000_000_000, u64::MAX, 6, 0, 101].map(|t| tags.get(t)),
            [
                Some(0),
                Some(1),
                Some(2),
                Some(3),
                Some(4),
                None,
                None,
                None
            ]
        );
    }

    /// Valid files in each format, each a little different.
    fn samples() -> Vec<(Vec<u8>, Vec<u8>)> {
        let v2 = msh2(&UNIT_NODES, &["1 2 2 0 1 1 2 3", "2 4 2 1 1 1 2 3 4"]);
        let v4 = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Nodes\n1 4 1 4\n3 1 1 4\n1\n2\n3\n4\n\
                  0 0 0 1 1 1\n1 0 0 1 1 1\n0 1 0 1 1 1\n0 0 1 1 1 1\n$EndNodes\n\
                  $Elements\n1 1 1 1\n3 1 4 1\n1 1 2 3 4\n$EndElements\n";
        vec![
            (NODE_0.into(), ELE_0.into()),
            (
                "4 3 1 1\n1 0 0 0 1 1\n2 1 0 0 1 1\n3 0 1 0 1 1\n4 0 0 1 1 1\n".into(),
                "1 4 1\n1 1 2 3 4 2\n".into(),
            ),
            (v2.into_bytes(), Vec::new()),
            (v4.into(), Vec::new()),
        ]
    }

    /// Reads a sample: TetGen when it has an `.ele` part, Gmsh otherwise.
    fn read_sample(first: &[u8], ele: &[u8]) -> Result<TetMesh, TetIoError> {
        if ele.is_empty() {
            parse_msh(first, Path::new("s.msh"))
        } else {
            parse_tetgen(first, ele, Path::new("s"))
        }
    }

    #[test]
    fn truncated_and_corrupted_input_never_panics() {
        for (first, ele) in samples() {
            assert!(read_sample(&first, &ele).is_ok());
            for cut in 0..first.len() {
                let _ = read_sample(&first[..cut], &ele);
            }
            for cut in 0..ele.len() {
                let _ = read_sample(&first, &ele[..cut]);
            }
            for at in 0..first.len() {
                for byte in [b'\n', b' ', b'9', b'-', b'$', b'#', b'.', 0, 0xff] {
                    let mut corrupt = first.clone();
                    corrupt[at] = byte;
                    let _ = read_sample(&corrupt, &ele);
                }
            }
        }
    }

    #[test]
    fn writers_write_the_documented_text() {
        let mesh = unit_tet();
        let text = |write: fn(&mut Vec<u8>, &TetMesh) -> io::Result<()>| {
            let mut out = Vec::new();
            write(&mut out, &mesh).unwrap();
            String::from_utf8(out).unwrap()
        };
        let nodes = "0.0 0.0 0.0\n1.0 0.0 0.0\n0.0 1.0 0.0\n0.0 0.0 0.1\n";
        let numbered = "1 0.0 0.0 0.0\n2 1.0 0.0 0.0\n3 0.0 1.0 0.0\n4 0.0 0.0 0.1\n";
        assert_eq!(
            text(write_node_text),
            format!("# TetGen nodes by Softbody Studio: number x y z\n4 3 0 0\n{numbered}")
        );
        assert_eq!(
            text(write_ele_text),
            "# TetGen tetrahedra by Softbody Studio: number, 4 nodes\n1 4 0\n1 1 2 3 4\n"
        );
        assert_eq!(
            text(write_msh_v2),
            format!(
                "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n4\n{numbered}$EndNodes\n\
                 $Elements\n1\n1 4 2 1 1 1 2 3 4\n$EndElements\n"
            )
        );
        assert_eq!(
            text(write_msh_v4),
            format!(
                "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n\
                 $Entities\n0 0 0 1\n1 0.0 0.0 0.0 1.0 1.0 0.1 1 1 0\n$EndEntities\n\
                 $Nodes\n1 4 1 4\n3 1 0 4\n1\n2\n3\n4\n{nodes}$EndNodes\n\
                 $Elements\n1 1 1 1\n3 1 4 1\n1 1 2 3 4\n$EndElements\n"
            )
        );
        assert_eq!(
            text(write_vtk_text),
            format!(
                "# vtk DataFile Version 3.0\nSoftbody Studio tetrahedral mesh\nASCII\n\
                 DATASET UNSTRUCTURED_GRID\nPOINTS 4 double\n{nodes}\
                 CELLS 1 5\n4 0 1 2 3\nCELL_TYPES 1\n10\n"
            )
        );
    }

    #[test]
    fn written_text_reads_back() {
        let mesh = unit_tet();
        let mut node = Vec::new();
        let mut ele = Vec::new();
        write_node_text(&mut node, &mesh).unwrap();
        write_ele_text(&mut ele, &mesh).unwrap();
        assert_eq!(parse_tetgen(&node, &ele, Path::new("t")).unwrap(), mesh);
        for write in [write_msh_v2::<Vec<u8>>, write_msh_v4] {
            let mut out = Vec::new();
            write(&mut out, &mesh).unwrap();
            assert_eq!(parse_msh(&out, Path::new("t.msh")).unwrap(), mesh);
        }
    }

    #[test]
    fn tetgen_paths_accept_either_file_or_the_base() {
        let pair = |a: &str, b: &str| (PathBuf::from(a), PathBuf::from(b));
        assert_eq!(
            tetgen_paths(Path::new("d/cube.1.node")),
            pair("d/cube.1.node", "d/cube.1.ele")
        );
        assert_eq!(
            tetgen_paths(Path::new("d/cube.1.ele")),
            pair("d/cube.1.node", "d/cube.1.ele")
        );
        assert_eq!(
            tetgen_paths(Path::new("d/cube.1")),
            pair("d/cube.1.node", "d/cube.1.ele")
        );
        assert_eq!(
            tetgen_paths(Path::new("CUBE.ELE")),
            pair("CUBE.NODE", "CUBE.ELE")
        );
        assert_eq!(
            tetgen_paths(Path::new("cube.Node")),
            pair("cube.node", "cube.ele")
        );
    }

    #[test]
    fn extensions_dispatch_case_insensitively() {
        let err = read_tet_mesh(Path::new("/nonexistent/Cube.MSH")).unwrap_err();
        assert!(matches!(err.kind, TetIoErrorKind::Read(_)), "{err}");
        let err = read_tet_mesh(Path::new("cube.vtk")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cube.vtk: unsupported file extension '.vtk'; supported: .node or .ele (TetGen), .msh (Gmsh)"
        );
        let err = write_tet_mesh(Path::new("cube.obj"), &unit_tet(), MshVersion::V4_1).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cube.obj: unsupported file extension '.obj'; supported: .node or .ele (TetGen), \
             .msh (Gmsh), .vtk (legacy VTK)"
        );
    }
}
