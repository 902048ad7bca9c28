//! File-system helpers: atomic replacement of a file, and whether two paths
//! name one file.

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Whether `a` and `b` name the same file (spelled alike, or after
/// resolving links and `..`).
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || a.canonicalize()
            .is_ok_and(|a| b.canonicalize().is_ok_and(|b| a == b))
}

/// Why a file of metadata `meta` is not one to read, if it is not a
/// regular file: a directory, or a device or a pipe (`/dev/zero` never
/// ends).
pub fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    if meta.is_file() {
        None
    } else if meta.is_dir() {
        Some("it is a directory")
    } else {
        Some("not a regular file (a device or a pipe)")
    }
}

/// Creates the directory `path` is to be written in, if it is missing.
///
/// # Errors
/// What failed, in words: a file on the way (`… is a file, not a
/// directory`: "File exists" said nothing of which), or the error of
/// creating the directory.
pub fn create_dir_of(path: &Path) -> Result<(), String> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => std::fs::create_dir_all(dir).map_err(|e| {
            no_directory_there(dir)
                .unwrap_or_else(|| format!("cannot create the directory {}: {e}", dir.display()))
        }),
        None => Ok(()),
    }
}

/// Why no directory `dir` can be made, if something is on the way
/// ([`file_on_the_way`]): `… is a file, not a directory` ("File exists"
/// said nothing of which), `… is not a directory` (a device, a pipe), or
/// `… is a symbolic link to …, which leads to no directory`.
pub fn no_directory_there(dir: &Path) -> Option<String> {
    file_on_the_way(dir).map(|file| match std::fs::read_link(file) {
        Ok(target) => format!(
            "{} is a symbolic link to {}, which leads to no directory",
            file.display(),
            target.display()
        ),
        Err(_) if std::fs::metadata(file).is_ok_and(|m| m.is_file()) => {
            format!("{} is a file, not a directory", file.display())
        }
        Err(_) => format!("{} is not a directory", file.display()),
    })
}

/// The first of `dir` and its ancestors that is there but is no directory
/// (a file, a device such as `/dev/null`, a pipe, a symbolic link to
/// nothing or to itself), where no directory can be made, if any. (A
/// device was let through, and making the directory then failed with "File
/// exists", as it did below a dangling link.)
pub fn file_on_the_way(dir: &Path) -> Option<&Path> {
    dir.ancestors().find(|a| match std::fs::metadata(a) {
        Ok(m) => !m.is_dir(),
        // (A link into a directory this user cannot search is no obstacle
        // it can tell.)
        Err(e) => {
            e.kind() != std::io::ErrorKind::PermissionDenied
                && std::fs::symlink_metadata(a).is_ok_and(|m| m.file_type().is_symlink())
        }
    })
}

/// Writes `path` atomically: `write` fills a new temporary file beside it
/// (same directory, so the rename cannot cross file systems), which is
/// flushed to disk and then renamed over `path`. Readers see the old file or
/// the new one, never a half-written one. A symbolic link is followed (the
/// file it names is replaced, the link stays), and an existing file's
/// permissions are kept (a `0640` preset used to become `0644`).
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

/// Writes two files together, as [`write_atomically`] each, both filled
/// before either is renamed into place: a failure while writing (a full
/// disk) leaves both old files, not a new one beside an old one (a TetGen
/// `.node` of one mesh beside the `.ele` of another reads as a wrong mesh).
///
/// # Errors
/// As [`write_atomically`], with the path of the file that failed.
pub fn write_pair_atomically(
    (first, write_first): (&Path, impl FnOnce(&mut BufWriter<File>) -> io::Result<()>),
    (second, write_second): (&Path, impl FnOnce(&mut BufWriter<File>) -> io::Result<()>),
) -> Result<(), (PathBuf, io::Error)> {
    let a = Prepared::write(first, write_first, true).map_err(|e| (first.to_owned(), e))?;
    let b = match Prepared::write(second, write_second, true) {
        Ok(b) => b,
        Err(e) => {
            a.discard();
            return Err((second.to_owned(), e));
        }
    };
    if let Err(e) = a.commit() {
        b.discard();
        return Err((first.to_owned(), e));
    }
    b.commit().map_err(|e| (second.to_owned(), e))
}

fn replace(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
    sync: bool,
) -> io::Result<()> {
    Prepared::write(path, write, sync)?.commit()
}

/// The temporary files being written or waiting to be renamed, for
/// [`remove_unfinished`].
static UNFINISHED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Removes the temporary files of writes not yet done (by any thread),
/// for a process about to end at once: a bake's second Ctrl-C left a
/// hidden partial frame behind.
pub fn remove_unfinished() {
    let unfinished = UNFINISHED.lock().unwrap_or_else(|e| e.into_inner());
    for temp in unfinished.iter() {
        // Best effort: the process is ending.
        let _ = std::fs::remove_file(temp);
    }
    // Held to the end: a write starting meanwhile would make a new one.
    std::mem::forget(unfinished);
}

/// Takes `temp` off the [`UNFINISHED`] list.
fn finished(temp: &Path) {
    let mut unfinished = UNFINISHED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = unfinished.iter().position(|t| t == temp) {
        unfinished.swap_remove(k);
    }
}

/// A temporary file written beside the file it is to replace.
struct Prepared {
    temp: PathBuf,
    path: PathBuf,
}

impl Prepared {
    /// Fills a new temporary file beside `path` (a symbolic link followed,
    /// an existing file's permissions kept) with `write`, flushed to disk
    /// with `sync`; removed again on failure. A read-only file (no write
    /// permission for anyone) is not replaced.
    fn write(
        path: &Path,
        write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
        sync: bool,
    ) -> io::Result<Self> {
        static TEMP_FILES: AtomicU64 = AtomicU64::new(0);
        let path = if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            std::fs::canonicalize(path)?
        } else {
            path.to_owned()
        };
        let permissions = std::fs::metadata(&path).ok().map(|m| m.permissions());
        if permissions
            .as_ref()
            .is_some_and(std::fs::Permissions::readonly)
        {
            // Renamed over, it was replaced whatever its permissions (a
            // preset made read-only to keep it was saved over in silence).
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the file is read-only: make it writable or save under another name",
            ));
        }
        let name = path.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "the path does not name a file")
        })?;
        let suffix = format!(
            ".{}-{}.tmp",
            std::process::id(),
            TEMP_FILES.fetch_add(1, Ordering::Relaxed)
        );
        let mut temp_name = std::ffi::OsString::from(".");
        // At most 255 bytes, as file systems take: a legal name of 241 bytes
        // or more used to fail ("File name too long") for its temporary's.
        let room = 255 - 1 - suffix.len();
        if name.len() <= room {
            temp_name.push(name);
        } else {
            let lossy = name.to_string_lossy();
            let end = (0..=room)
                .rev()
                .find(|&i| lossy.is_char_boundary(i))
                .unwrap_or(0);
            temp_name.push(&lossy[..end]);
        }
        temp_name.push(suffix);
        let temp = path.with_file_name(temp_name);
        let created = {
            // Listed and made together: listed alone, it could be made
            // after `remove_unfinished` looked.
            let mut unfinished = UNFINISHED.lock().unwrap_or_else(|e| e.into_inner());
            unfinished.push(temp.clone());
            File::create_new(&temp)
        };
        let result = created.and_then(|file| {
            if let Some(permissions) = permissions {
                file.set_permissions(permissions)?;
            }
            let mut out = BufWriter::new(file);
            write(&mut out)?;
            let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
            if sync {
                file.sync_all()?;
            }
            Ok(())
        });
        let prepared = Self { temp, path };
        match result {
            Ok(()) => Ok(prepared),
            Err(e) => {
                prepared.discard();
                Err(e)
            }
        }
    }

    /// Renames the temporary file over the file (removed on failure).
    fn commit(self) -> io::Result<()> {
        let renamed = std::fs::rename(&self.temp, &self.path);
        match renamed {
            Ok(()) => finished(&self.temp),
            Err(_) => self.discard(),
        }
        renamed
    }

    /// Removes the temporary file.
    fn discard(&self) {
        // Best effort: the write error matters, not a failed clean-up.
        let _ = std::fs::remove_file(&self.temp);
        finished(&self.temp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A new empty directory for the test `name`.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("softbody-fsutil-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_failing_writer_leaves_the_old_file_and_no_temporary() {
        let dir = scratch("old");
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

    /// A read-only file is left as it is, even to a user (root) who may
    /// write it, and says why.
    #[test]
    fn a_read_only_file_is_not_replaced() {
        let dir = scratch("read-only");
        let path = dir.join("kept.toml");
        write_atomically(&path, |out| out.write_all(b"kept")).unwrap();
        let mut permissions = std::fs::metadata(&path).unwrap().permissions();
        permissions.set_readonly(true);
        std::fs::set_permissions(&path, permissions).unwrap();
        let err = write_atomically(&path, |out| out.write_all(b"new")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        assert!(err.to_string().contains("read-only"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"kept");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A file name of 255 bytes, the most file systems take, is written
    /// (its temporary's name is cut to fit).
    #[test]
    fn the_longest_names_are_written() {
        let dir = scratch("long");
        let path = dir.join(format!("{}.toml", "é".repeat(125)));
        assert_eq!(path.file_name().unwrap().len(), 255);
        write_atomically(&path, |out| out.write_all(b"long")).unwrap();
        write_atomically(&path, |out| out.write_all(b"longer")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"longer");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A pair whose second file fails leaves both old files (the first
    /// used to be replaced already) and no temporary file.
    #[test]
    fn a_pair_is_replaced_together_or_not_at_all() {
        let dir = scratch("pair");
        let (a, b) = (dir.join("m.node"), dir.join("m.ele"));
        let put = |text: &'static [u8]| move |out: &mut BufWriter<File>| out.write_all(text);
        write_pair_atomically((&a, put(b"node 1")), (&b, put(b"ele 1"))).unwrap();
        let failing = |out: &mut BufWriter<File>| {
            out.write_all(b"ele 2")?;
            Err(io::Error::other("disk full"))
        };
        let (path, err) = write_pair_atomically((&a, put(b"node 2")), (&b, failing)).unwrap_err();
        assert_eq!((path, err.to_string()), (b.clone(), "disk full".to_owned()));
        assert_eq!(std::fs::read(&a).unwrap(), b"node 1");
        assert_eq!(std::fs::read(&b).unwrap(), b"ele 1");
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2);
        write_pair_atomically((&a, put(b"node 3")), (&b, put(b"ele 3"))).unwrap();
        assert_eq!(std::fs::read(&b).unwrap(), b"ele 3");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A symbolic link stays one (the file it names is replaced), and the
    /// replaced file keeps its permissions.
    #[cfg(unix)]
    #[test]
    fn links_and_permissions_are_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("link");
        std::fs::create_dir_all(dir.join("real")).unwrap();
        let target = dir.join("real/target.toml");
        write_atomically(&target, |out| out.write_all(b"old")).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.join("link.toml");
        std::os::unix::fs::symlink("real/target.toml", &link).unwrap();
        write_atomically(&link, |out| out.write_all(b"new")).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
