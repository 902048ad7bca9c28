//! The one way every file error reads: `file:line: what` (or `file: what`
//! when the problem is not on one line), shared by the OBJ, tet-file and
//! preset errors.

use std::fmt;
use std::path::Path;

/// Writes `path:line: what`, or `path: what` without a line.
pub(crate) fn write_located(
    f: &mut fmt::Formatter<'_>,
    path: &Path,
    line: Option<usize>,
    what: &dyn fmt::Display,
) -> fmt::Result {
    match line {
        Some(line) => write!(f, "{}:{line}: {what}", path.display()),
        None => write!(f, "{}: {what}", path.display()),
    }
}
