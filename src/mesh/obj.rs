//! Wavefront OBJ reading and writing.
//!
//! The reader is a single streaming pass over the bytes that keeps the line
//! number of everything it reads, so every error names the file and line. It
//! reads `v` (3 coordinates; an optional `w` or vertex colour is ignored), `f`
//! with any of the `v`, `v/vt`, `v//vn`, `v/vt/vn` forms and with negative
//! (relative) indices resolved at the face's line, statements continued
//! over lines ending in `\` (errors name the line they start on), `o`/`g`
//! names, which become named vertex sets, and texture coordinates (`vt u v`, referenced
//! per face corner), which the exports carry. A texture coordinate that is
//! not a finite number, or a corner that refers to one not defined, drops
//! the texture coordinates (the report says which line), not the mesh: they
//! play no part in physics. Materials are kept for the exports too: each
//! polygon's `usemtl` name and the `mtllib` files named (joined to the OBJ
//! file's directory), never read, so a missing library is not an error.
//! `vn`, `vp`, `l`, `p`, `s` and unknown statements are ignored (counted in
//! the report).
//!
//! We do not use `tobj` for reading (it is used in the tests as an oracle):
//! it renumbers vertices per object, so a vertex shared by two groups and two
//! duplicated vertices cannot be told apart; its errors carry no line number;
//! it accepts `nan`/`inf` coordinates and two-vertex faces; and it
//! fan-triangulates concave polygons.

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::Vec3;
use super::raw::{GroupKind, NO_TEXCOORD, RawMesh};

/// Options for reading an OBJ file.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// Files larger than this many bytes are refused before reading
    /// (default 2 GiB, about 40 million triangles).
    pub max_bytes: u64,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self { max_bytes: 2 << 30 }
    }
}

/// What is wrong with an input file.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ImportErrorKind {
    /// The file could not be read.
    #[error("cannot read the file: {0}")]
    Io(String),
    /// The file exceeds [`ImportOptions::max_bytes`].
    #[error(
        "the file is {size} bytes, more than the limit of {limit} bytes; decimate the mesh first"
    )]
    TooLarge {
        /// File size in bytes.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// The file has no bytes at all.
    #[error("the file is empty")]
    Empty,
    /// NUL bytes or invalid UTF-8 where OBJ text was expected.
    #[error("binary data, not OBJ text; is this really a .obj file?")]
    NotText,
    /// A token that should be a number is not one.
    #[error("'{token}' is not a number")]
    BadNumber {
        /// The offending token.
        token: String,
    },
    /// `nan`, `inf` and friends parse as floats but are not positions.
    #[error("coordinate '{token}' is not a finite number")]
    NonFinite {
        /// The offending token.
        token: String,
    },
    /// A `v` line with fewer than three coordinates.
    #[error("vertex has {found} coordinate(s); a vertex needs x, y and z")]
    TooFewCoordinates {
        /// How many coordinates were found.
        found: usize,
    },
    /// A face corner that is not an integer index.
    #[error("'{token}' is not a vertex index (expected forms: v, v/vt, v//vn, v/vt/vn)")]
    BadIndex {
        /// The offending token.
        token: String,
    },
    /// OBJ indices start at 1 (or are negative); 0 is invalid.
    #[error("vertex index 0 is invalid: OBJ indices start at 1 (or count back from -1)")]
    IndexZero,
    /// An index that refers to a vertex not defined before this line.
    #[error(
        "vertex index {index} is out of range: {defined} vertices are defined before this line"
    )]
    IndexOutOfRange {
        /// The index as written.
        index: i64,
        /// Vertices defined so far.
        defined: usize,
    },
    /// A face with fewer than three corners (often a file cut mid-line).
    #[error("face has {found} corner(s); a face needs at least 3 (is the file truncated?)")]
    TooFewCorners {
        /// How many corners were found.
        found: usize,
    },
    /// No OBJ statement at all, but something else (a tet mesh, a preset,
    /// prose): the line of its first word.
    #[error(
        "'{keyword}' is not an OBJ statement, and the file has no vertices or faces: is it an \
         OBJ file? (Tet meshes, .msh or .node/.ele, go in a preset's mesh.tet_file.)"
    )]
    NotObj {
        /// The first word of the file's first statement.
        keyword: String,
    },
    /// Vertices but no faces.
    #[error("no faces ({vertices} vertices, 0 faces): nothing to simulate")]
    NoFaces {
        /// Vertices defined in the file.
        vertices: usize,
    },
    /// Faces exist but all of them are degenerate or duplicated.
    #[error(
        "{} degenerate (zero area) or {}: nothing to simulate",
        if *faces == 1 { "the only face is" } else { "all faces are" },
        if *faces == 1 { "a duplicate" } else { "duplicates" }
    )]
    NoValidTriangles {
        /// Faces before validation.
        faces: usize,
    },
    /// The mesh is too small or too large to simulate in metres.
    #[error(
        "the mesh is {} (its bounding box's diagonal); meshes from 1e-9 to 1e9 across can be simulated: scale it in your modeller",
        if diagonal.is_finite() { format!("{diagonal:.3e} across") } else { "too large to measure across".to_owned() }
    )]
    Size {
        /// The bounding box's diagonal.
        diagonal: f64,
    },
    /// Too many vertices for 32-bit indices.
    #[error("more than 4 billion vertices are not supported")]
    TooManyVertices,
}

/// An import failure: the file, the line where the format allows, and what is wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportError {
    /// The file that was being read.
    pub path: PathBuf,
    /// 1-based line number, when the problem is on one line.
    pub line: Option<usize>,
    /// What is wrong.
    pub kind: ImportErrorKind,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::located::write_located(f, &self.path, self.line, &self.kind)
    }
}

impl std::error::Error for ImportError {}

/// Statistics of the parse, for the report.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ParseStats {
    /// `v` statements.
    pub vertices: usize,
    /// `f` statements.
    pub faces: usize,
    /// Faces with more than three corners (triangulated later).
    pub polygons: usize,
    /// `vt`, `vn`, `vp` statements.
    pub texcoords_and_normals: usize,
    /// Why the texture coordinates were dropped, if they were: the first
    /// problem with them and its line.
    pub texcoords_dropped: Option<(String, usize)>,
    /// Faces giving texture coordinates to some of their corners only
    /// (they have none in the exports), and the first one's line.
    pub partly_textured_faces: Option<(usize, usize)>,
    /// `l` and `p` statements (ignored).
    pub lines_and_points: usize,
    /// The first one's line, if any.
    pub first_line_or_point: Option<usize>,
    /// Statements of unknown or unsupported kinds (ignored).
    pub unsupported: usize,
    /// The first unsupported keyword and its line, if any.
    pub first_unsupported: Option<(String, usize)>,
    /// The first line whose object or group name was not UTF-8 (read as
    /// Latin-1, the encoding of older Western exporters), if any.
    pub latin1_names: Option<usize>,
    /// Vertices with words after their coordinates that are not numbers
    /// (a weight `w` or a colour `r g b` are; ignored either way).
    pub vertex_words: usize,
    /// The first such word and its line, if any.
    pub first_vertex_word: Option<(String, usize)>,
}

/// Reads and parses an OBJ file.
///
/// # Errors
/// [`ImportError`] naming the file (and line) when the file cannot be read, is
/// larger than `options.max_bytes`, or is not valid OBJ.
pub fn import_obj(
    path: &Path,
    options: &ImportOptions,
) -> Result<(RawMesh, ParseStats), ImportError> {
    let err = |kind| ImportError {
        path: path.to_owned(),
        line: None,
        kind,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(ImportErrorKind::Io(e.to_string())))?;
    if let Some(what) = crate::fsutil::not_regular(&meta) {
        return Err(err(ImportErrorKind::Io(what.to_owned())));
    }
    let size = meta.len();
    if size > options.max_bytes {
        return Err(err(ImportErrorKind::TooLarge {
            size,
            limit: options.max_bytes,
        }));
    }
    let bytes = std::fs::read(path).map_err(|e| err(ImportErrorKind::Io(e.to_string())))?;
    let (mut raw, stats) = import_obj_bytes(&bytes, path, options)?;
    // Named relative to the file (where readers look for them).
    let dir = path.parent().unwrap_or(Path::new(""));
    for library in &mut raw.material_libraries {
        *library = dir.join(&*library);
    }
    Ok((raw, stats))
}

/// Parses OBJ text already in memory; `path` is only used in error messages.
///
/// # Errors
/// As [`import_obj`].
pub fn import_obj_bytes(
    bytes: &[u8],
    path: &Path,
    options: &ImportOptions,
) -> Result<(RawMesh, ParseStats), ImportError> {
    if bytes.len() as u64 > options.max_bytes {
        return Err(ImportError {
            path: path.to_owned(),
            line: None,
            kind: ImportErrorKind::TooLarge {
                size: bytes.len() as u64,
                limit: options.max_bytes,
            },
        });
    }
    Parser::default()
        .run(bytes)
        .map_err(|(line, kind)| ImportError {
            path: path.to_owned(),
            line,
            kind,
        })
}

type ParseResult<T> = Result<T, (Option<usize>, ImportErrorKind)>;

#[derive(Default)]
struct Parser {
    mesh: RawMesh,
    stats: ParseStats,
    corners: Vec<u32>,
    corner_texcoords: Vec<u32>,
    object: Option<u32>,
    groups: Vec<u32>,
    current_membership: u32,
    material: Option<u32>,
    line_no: usize,
    /// The indices of the names and membership sets met so far: a file
    /// with a group per face (as some CAD exports write) looked each up
    /// among all before it, 8.5 s for 50,000 groups.
    seen: Seen,
}

/// What [`Parser`] has registered in its mesh, by name or set.
#[derive(Default)]
struct Seen {
    groups: HashMap<(GroupKind, String), u32>,
    materials: HashMap<String, u32>,
    memberships: HashMap<Vec<u32>, u32>,
}

/// The lines of an OBJ file's bytes: ended by LF (a CR before it is
/// trailing space), or, in a file of classic Mac OS (`lone_cr_ends`), by
/// CR, LF or CR LF alike.
struct Lines<'a> {
    rest: Option<&'a [u8]>,
    lone_cr_ends: bool,
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        let ends = |b: &u8| *b == b'\n' || (self.lone_cr_ends && *b == b'\r');
        let Some(end) = rest.iter().position(ends) else {
            self.rest = None;
            return Some(rest);
        };
        let crlf = rest[end] == b'\r' && rest.get(end + 1) == Some(&b'\n');
        self.rest = Some(&rest[end + 1 + usize::from(crlf)..]);
        Some(&rest[..end])
    }
}

fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t' || b == b'\r' || b == 0x0c || b == 0x0b
}

fn tokens(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|&b| is_space(b)).filter(|t| !t.is_empty())
}

fn text(token: &[u8]) -> Result<&str, ImportErrorKind> {
    std::str::from_utf8(token).map_err(|_| ImportErrorKind::NotText)
}

impl Parser {
    fn run(mut self, bytes: &[u8]) -> ParseResult<(RawMesh, ParseStats)> {
        if bytes.is_empty() {
            return Err((None, ImportErrorKind::Empty));
        }
        // A UTF-8 byte-order mark (some Windows editors write one) used to
        // make the first statement unknown and drop it.
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        self.mesh = RawMesh::new();
        // Its entry 0, the empty set (no object or group).
        self.seen.memberships.insert(Vec::new(), 0);
        // A statement continued over lines (each but the last ending in
        // `\`), and the line it starts on.
        let mut continued: Vec<u8> = Vec::new();
        let mut first = 0;
        // Lines end in LF (or CR LF); a file of classic Mac OS ends them in
        // CR alone (it read as one line: "no faces (1 vertices)"), and one
        // with more lone CRs than LFs is taken as such, its LFs and CR LFs
        // ending lines too (one stray LF made it one line again).
        let lone_crs = bytes
            .windows(2)
            .filter(|w| w[0] == b'\r' && w[1] != b'\n')
            .count()
            + usize::from(bytes.last() == Some(&b'\r'));
        let lfs = bytes.iter().filter(|&&b| b == b'\n').count();
        let lines = Lines {
            rest: Some(bytes),
            lone_cr_ends: lone_crs > lfs,
        };
        for (line_no, raw_line) in (1..).zip(lines) {
            let end = raw_line.trim_ascii_end();
            if let Some(part) = end.strip_suffix(b"\\")
                && !raw_line.contains(&b'#')
            {
                if continued.is_empty() {
                    first = line_no;
                }
                continued.extend_from_slice(part);
                continued.push(b' ');
                continue;
            }
            let statement = if continued.is_empty() {
                first = line_no;
                raw_line
            } else {
                continued.extend_from_slice(raw_line);
                &continued
            };
            self.line_no = first;
            self.line(statement).map_err(|kind| (Some(first), kind))?;
            continued.clear();
        }
        if !continued.is_empty() {
            // The file ends on a `\`: the statement ends there.
            self.line_no = first;
            self.line(&continued).map_err(|kind| (Some(first), kind))?;
        }
        if self.mesh.positions.len() > u32::MAX as usize {
            return Err((None, ImportErrorKind::TooManyVertices));
        }
        if self.stats.texcoords_dropped.is_some() {
            self.mesh.texcoords = Vec::new();
            self.mesh.corner_texcoords = Vec::new();
        }
        if self.stats.faces == 0
            && self.stats.vertices == 0
            && let Some((keyword, line)) = self.stats.first_unsupported.take()
        {
            return Err((Some(line), ImportErrorKind::NotObj { keyword }));
        }
        if self.stats.faces == 0 {
            return Err((
                None,
                ImportErrorKind::NoFaces {
                    vertices: self.stats.vertices,
                },
            ));
        }
        Ok((self.mesh, self.stats))
    }

    fn line(&mut self, line: &[u8]) -> Result<(), ImportErrorKind> {
        if line.contains(&0) {
            return Err(ImportErrorKind::NotText);
        }
        let line = match line.iter().position(|&b| b == b'#') {
            Some(c) => &line[..c],
            None => line,
        };
        let mut toks = tokens(line);
        let Some(keyword) = toks.next() else {
            return Ok(());
        };
        match keyword {
            b"v" => self.vertex(toks),
            b"f" | b"fo" => self.face(toks),
            b"vt" => {
                self.stats.texcoords_and_normals += 1;
                self.texcoord(toks);
                Ok(())
            }
            b"vn" | b"vp" => {
                self.stats.texcoords_and_normals += 1;
                Ok(())
            }
            b"l" | b"p" => {
                self.stats.lines_and_points += 1;
                self.stats.first_line_or_point.get_or_insert(self.line_no);
                Ok(())
            }
            b"o" => {
                let name = self.name(toks);
                self.object = Some(self.group(name, GroupKind::Object));
                self.update_membership();
                Ok(())
            }
            b"g" => {
                let mut groups = Vec::new();
                for t in toks {
                    let name = self.name(std::iter::once(t));
                    groups.push(self.group(name, GroupKind::Group));
                }
                self.groups = groups;
                self.update_membership();
                Ok(())
            }
            b"usemtl" => {
                let name = self.name(toks);
                self.material = Some(self.material(name));
                Ok(())
            }
            b"mtllib" => {
                for t in toks {
                    let name = self.name(std::iter::once(t));
                    self.mesh.material_libraries.push(name.into());
                }
                Ok(())
            }
            b"s" | b"mg" => Ok(()),
            other => {
                let word = text(other)?;
                if word.chars().any(|c| c.is_control()) {
                    return Err(ImportErrorKind::NotText);
                }
                self.stats.unsupported += 1;
                if self.stats.first_unsupported.is_none() {
                    self.stats.first_unsupported = Some((word.to_owned(), self.line_no));
                }
                Ok(())
            }
        }
    }

    /// An object or group name from its words. Words that are not UTF-8
    /// are read as Latin-1 (older exporters write names such as "Fl\xe4che"
    /// in their system's encoding), noted for the import report.
    fn name<'a>(&mut self, toks: impl Iterator<Item = &'a [u8]>) -> String {
        let parts: Vec<String> = toks
            .map(|t| match std::str::from_utf8(t) {
                Ok(word) => word.to_owned(),
                Err(_) => {
                    self.stats.latin1_names.get_or_insert(self.line_no);
                    t.iter().map(|&b| char::from(b)).collect()
                }
            })
            .collect();
        parts.join(" ")
    }

    /// The index of a group or object name, registered if new.
    fn group(&mut self, name: String, kind: GroupKind) -> u32 {
        let mesh = &mut self.mesh;
        *(self.seen.groups.entry((kind, name)))
            .or_insert_with_key(|(kind, name)| mesh.push_group(name.clone(), *kind))
    }

    /// The index of a material name, registered if new.
    fn material(&mut self, name: String) -> u32 {
        let mesh = &mut self.mesh;
        *(self.seen.materials.entry(name)).or_insert_with_key(|n| mesh.push_material(n.clone()))
    }

    fn update_membership(&mut self) {
        let mut set = self.groups.clone();
        set.extend(self.object);
        set.sort_unstable();
        set.dedup();
        let mesh = &mut self.mesh;
        self.current_membership = *(self.seen.memberships.entry(set))
            .or_insert_with_key(|set| mesh.push_membership(set.clone()));
    }

    fn vertex<'a>(
        &mut self,
        mut toks: impl Iterator<Item = &'a [u8]>,
    ) -> Result<(), ImportErrorKind> {
        let mut xyz = [0.0f64; 3];
        let mut found = 0;
        for t in toks.by_ref().take(3) {
            let s = text(t)?;
            let value: f64 = s.parse().map_err(|_| ImportErrorKind::BadNumber {
                token: s.to_owned(),
            })?;
            if !value.is_finite() {
                return Err(ImportErrorKind::NonFinite {
                    token: s.to_owned(),
                });
            }
            xyz[found] = value;
            found += 1;
        }
        if found < 3 {
            return Err(ImportErrorKind::TooFewCoordinates { found });
        }
        // (`v 0 0 0 junk` passed unnoticed.)
        let word = toks.find(|t| {
            std::str::from_utf8(t)
                .ok()
                .and_then(|t| t.parse::<f64>().ok())
                .is_none()
        });
        if let Some(word) = word {
            self.stats.vertex_words += 1;
            let line = self.line_no;
            (self.stats.first_vertex_word)
                .get_or_insert_with(|| (String::from_utf8_lossy(word).into_owned(), line));
        }
        self.mesh.positions.push(Vec3::new(xyz[0], xyz[1], xyz[2]));
        self.stats.vertices += 1;
        Ok(())
    }

    /// A `vt u [v [w]]` statement: `v` is 0 when missing, `w` is ignored.
    fn texcoord<'a>(&mut self, mut toks: impl Iterator<Item = &'a [u8]>) {
        let mut uv = [0.0; 2];
        for (k, c) in uv.iter_mut().enumerate() {
            let token = toks.next();
            if k > 0 && token.is_none() {
                break;
            }
            let value = token
                .and_then(|t| std::str::from_utf8(t).ok())
                .and_then(|t| t.parse::<f64>().ok())
                .filter(|v| v.is_finite());
            match value {
                Some(value) => *c = value,
                None => {
                    self.drop_texcoords("a texture coordinate ('vt') that is not a finite number");
                    return;
                }
            }
        }
        self.mesh.texcoords.push(uv);
    }

    /// Records the first problem with the texture coordinates; they are
    /// dropped at the end of the parse.
    fn drop_texcoords(&mut self, why: &str) {
        if self.stats.texcoords_dropped.is_none() {
            self.stats.texcoords_dropped = Some((why.to_owned(), self.line_no));
        }
    }

    fn face<'a>(&mut self, toks: impl Iterator<Item = &'a [u8]>) -> Result<(), ImportErrorKind> {
        let defined = self.mesh.positions.len();
        self.corners.clear();
        self.corner_texcoords.clear();
        for t in toks {
            let s = text(t)?;
            let mut parts = s.split('/');
            let v = parts.next().unwrap_or("");
            let index: i64 = v.parse().map_err(|_| ImportErrorKind::BadIndex {
                token: s.to_owned(),
            })?;
            // Normal indices are ignored, but they must still be integers
            // (or empty) for the token to be valid.
            let mut texcoord = None;
            for (k, part) in parts.enumerate() {
                if k >= 2 || !(part.is_empty() || part.parse::<i64>().is_ok()) {
                    return Err(ImportErrorKind::BadIndex {
                        token: s.to_owned(),
                    });
                }
                if k == 0 && !part.is_empty() {
                    texcoord = part.parse::<i64>().ok();
                }
            }
            if index == 0 {
                return Err(ImportErrorKind::IndexZero);
            }
            let resolved = resolve(index, defined)
                .ok_or(ImportErrorKind::IndexOutOfRange { index, defined })?;
            self.corners.push(resolved);
            let texcoord = match texcoord {
                None => NO_TEXCOORD,
                Some(t) => resolve(t, self.mesh.texcoords.len()).unwrap_or_else(|| {
                    self.drop_texcoords(
                        "a face corner refers to a texture coordinate not defined before its line",
                    );
                    NO_TEXCOORD
                }),
            };
            self.corner_texcoords.push(texcoord);
        }
        if self.corners.len() < 3 {
            return Err(ImportErrorKind::TooFewCorners {
                found: self.corners.len(),
            });
        }
        if self.corners.len() > 3 {
            self.stats.polygons += 1;
        }
        self.stats.faces += 1;
        // Line numbers past u32::MAX are far beyond the size limit.
        let line = u32::try_from(self.line_no).unwrap_or(u32::MAX);
        self.mesh
            .push_polygon(&self.corners, line, self.current_membership);
        let textured = self
            .corner_texcoords
            .iter()
            .filter(|&&t| t != NO_TEXCOORD)
            .count();
        if textured > 0 {
            self.mesh.set_last_texcoords(&self.corner_texcoords);
        }
        if let Some(material) = self.material {
            self.mesh.set_last_material(material);
        }
        if (1..self.corners.len()).contains(&textured) {
            let (count, _) = self
                .stats
                .partly_textured_faces
                .get_or_insert((0, self.line_no));
            *count += 1;
        }
        Ok(())
    }
}

/// What an OBJ reader applies to the next polygon it reads: its object,
/// its groups and its material.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ObjState {
    /// The object (an index into [`RawMesh::groups`]).
    object: Option<u32>,
    /// A membership whose groups are the current ones.
    membership: u32,
    material: Option<u32>,
}

impl ObjState {
    /// A reader in polygon `p`'s object of `raw` (its `o` statement
    /// written already), with no group or material yet; also that object's
    /// name.
    pub(crate) fn in_object_of(raw: &RawMesh, p: usize) -> (Self, Option<&str>) {
        let object = object_of(raw, raw.membership.get(p).copied().unwrap_or(0));
        let state = Self {
            object,
            ..Self::default()
        };
        (state, object.map(|o| raw.groups[o as usize].name.as_str()))
    }

    /// Appends to `out` the `o`, `g` and `usemtl` statements that move a
    /// reader from this state (the polygon before's; the default before
    /// the first) to polygon `p`'s of `raw`, and becomes `p`'s. (A reader
    /// keeps the groups through an `o`, and `g` names all of them at once:
    /// one line each.)
    pub(crate) fn write_changes(&mut self, raw: &RawMesh, p: usize, out: &mut String) {
        use std::fmt::Write as _;
        let membership = raw.membership.get(p).copied().unwrap_or(0);
        if membership != self.membership {
            let object = object_of(raw, membership);
            if object != self.object
                && let Some(o) = object
            {
                let _ = writeln!(out, "o {}", raw.groups[o as usize].name);
            }
            self.object = object;
            let groups = |m: u32| {
                raw.memberships[m as usize]
                    .iter()
                    .map(|&g| &raw.groups[g as usize])
                    .filter(|g| g.kind == GroupKind::Group)
                    .map(|g| g.name.as_str())
            };
            if !groups(membership).eq(groups(self.membership)) {
                out.push('g');
                for name in groups(membership) {
                    let _ = write!(out, " {name}");
                }
                out.push('\n');
            }
            self.membership = membership;
        }
        let material = raw.polygon_material(p);
        if material != self.material {
            // (A reader has no statement for "no material": a polygon
            // without one after one with keeps the last.)
            if let Some(m) = material {
                let _ = writeln!(out, "usemtl {}", raw.materials[m as usize]);
            }
            self.material = material;
        }
    }
}

/// The object among a membership's groups.
fn object_of(raw: &RawMesh, membership: u32) -> Option<u32> {
    raw.memberships[membership as usize]
        .iter()
        .copied()
        .find(|&g| raw.groups[g as usize].kind == GroupKind::Object)
}

/// A 1-based OBJ index (or a negative one, counting back from the last of
/// `defined` elements) as a 0-based one, if it refers to a defined element
/// and fits 32 bits.
fn resolve(index: i64, defined: usize) -> Option<u32> {
    let resolved = match index {
        i if i > 0 => i - 1,
        i => (defined as i64).checked_add(i).filter(|_| i < 0)?,
    };
    // (A negative one does not fit.)
    u32::try_from(resolved)
        .ok()
        .filter(|&r| (r as usize) < defined)
}

/// Writes positions, texture coordinates and polygons as OBJ text (`v`,
/// `vt`, then `f` lines, 1-based; `f v/vt` where every corner of a polygon
/// has a texture coordinate, else `f v`).
///
/// The material libraries are named first (`mtllib`, as stored), and each
/// polygon's object, groups and material are set where they change (`o`,
/// `g`, `usemtl`); `header` lines are written as `#` comments.
///
/// # Errors
/// Any I/O error of `out`.
pub fn write_obj<W: Write>(out: &mut W, raw: &RawMesh, header: &[&str]) -> std::io::Result<()> {
    for h in header {
        writeln!(out, "# {h}")?;
    }
    for p in &raw.positions {
        writeln!(out, "v {} {} {}", p.x, p.y, p.z)?;
    }
    for [u, v] in &raw.texcoords {
        writeln!(out, "vt {u} {v}")?;
    }
    for library in &raw.material_libraries {
        writeln!(out, "mtllib {}", library.display())?;
    }
    let mut state = ObjState::default();
    let mut statements = String::new();
    for poly in 0..raw.polygon_count() {
        statements.clear();
        state.write_changes(raw, poly, &mut statements);
        out.write_all(statements.as_bytes())?;
        out.write_all(b"f")?;
        let texcoords = raw.polygon_texcoords(poly);
        for (k, &i) in raw.polygon(poly).iter().enumerate() {
            match texcoords {
                Some(t) => write!(out, " {}/{}", i + 1, t[k] + 1)?,
                None => write!(out, " {}", i + 1)?,
            }
        }
        out.write_all(b"\n")?;
    }
    Ok(())
}
