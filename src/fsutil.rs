//! File-system helpers shared by the writers: atomic replacement of a file.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `path` atomically: `write` fills a new temporary file beside it
/// (same directory, so the rename cannot cross file systems), which is
/// flushed to disk and then renamed over `path`. Readers see the old file or
/// the new one, never a half-written one.
///
/// # Errors
/// Any I/O error of creating, writing, syncing or renaming the temporary
/// file, or of `write` itself. On failure the temporary file is removed and
/// `path` is untouched: an existing file keeps its old contents.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    replace(path, write, true)
}

/// [`write_atomically`] without flushing the temporary file to disk before
/// the rename: a killed process still leaves the old file or the new one,
/// a power cut may not. For the many files of a bake, where a sync per
/// frame would cost more than the frame.
///
/// # Errors
/// As [`write_atomically`].
pub fn write_replacing(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    replace(path, write, false)
}

fn replace(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
    sync: bool,
) -> io::Result<()> {
    static TEMP_FILES: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "the path does not name a file")
    })?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(
        ".{}-{}.tmp",
        std::process::id(),
        TEMP_FILES.fetch_add(1, Ordering::Relaxed)
    ));
    let temp = path.with_file_name(temp_name);
    let result = File::create_new(&temp).and_then(|file| {
        let mut out = BufWriter::new(file);
        write(&mut out)?;
        let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        if sync {
            file.sync_all()?;
        }
        std::fs::rename(&temp, path)
    });
    result.inspect_err(|_| {
        // Best effort: the write error matters, not a failed clean-up.
        let _ = std::fs::remove_file(&temp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_failing_writer_leaves_the_old_file_and_no_temporary() {
        let dir = std::env::temp_dir().join(format!("softbody-fsutil-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("data.txt");
        write_atomically(&path, |out| out.write_all(b"old")).unwrap();
        let err = write_atomically(&path, |out| {
            out.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
