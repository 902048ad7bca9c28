//! The memory a factorisation may take: checked against what the machine
//! has free before the factor is allocated, so a model too large for it is
//! an error naming both sizes instead of a process the kernel kills (with
//! the editor's unsaved work) or a machine that swaps for minutes.
//!
//! On Linux the free memory is `MemAvailable` from `/proc/meminfo`, lowered
//! to what a cgroup v2 limit (a container's) leaves; elsewhere it is not
//! known and nothing is checked.
//!
//! Also the memory the process holds ([`resident`]), which the editor's
//! status bar, the terminal UI and `softbody bench` report: what a model
//! of a given size costs on the machine, measured where it runs.

use super::SolverError;

/// Bytes the process may still allocate, if known.
pub(crate) fn available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let free = parse_meminfo(&meminfo)?;
    let limit = cgroup_room(
        std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok(),
        std::fs::read_to_string("/sys/fs/cgroup/memory.current").ok(),
    );
    Some(limit.map_or(free, |room| room.min(free)))
}

/// `MemAvailable` of `/proc/meminfo`'s text, in bytes.
fn parse_meminfo(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// What a cgroup v2 limit leaves: `memory.max` (`max`: no limit) less
/// `memory.current`.
fn cgroup_room(max: Option<String>, current: Option<String>) -> Option<u64> {
    let max: u64 = max?.trim().parse().ok()?;
    let current: u64 = current.and_then(|c| c.trim().parse().ok()).unwrap_or(0);
    Some(max.saturating_sub(current))
}

/// The memory the process holds in RAM, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resident {
    /// Now (`VmRSS`).
    pub current: u64,
    /// The most it has held since it started (`VmHWM`).
    pub peak: u64,
}

impl std::fmt::Display for Resident {
    /// `1.07 GB (peak 1.10 GB)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (peak {})", size(self.current), size(self.peak))
    }
}

/// The memory this process holds, from `/proc/self/status` (Linux; `None`
/// elsewhere or if it cannot be read).
pub fn resident() -> Option<Resident> {
    parse_status(&std::fs::read_to_string("/proc/self/status").ok()?)
}

/// Resets the kernel's high-water mark of the memory the process holds
/// ([`Resident::peak`]) to what it holds now, so that a later [`resident`]
/// gives the peak since (writing `5` to `/proc/self/clear_refs`, Linux 4.0
/// on). Returns whether it was reset; where not, the peak stays the
/// process's since it started.
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// [`resident`] for a display redrawn every frame: read again at most
/// every [`Gauge::EVERY`] (a read of `/proc/self/status` takes some tens
/// of microseconds; the figure moves with a refactorisation or a new model,
/// not from frame to frame).
#[derive(Debug, Default)]
pub struct Gauge {
    read: Option<(std::time::Instant, Option<Resident>)>,
}

impl Gauge {
    /// The shortest time between two reads.
    pub const EVERY: std::time::Duration = std::time::Duration::from_millis(500);

    /// What the process holds: the last read, or a new one once it is
    /// [`Gauge::EVERY`] old.
    pub fn resident(&mut self) -> Option<Resident> {
        let now = std::time::Instant::now();
        match self.read {
            Some((at, last)) if now - at < Self::EVERY => last,
            _ => {
                let read = resident();
                self.read = Some((now, read));
                read
            }
        }
    }

    /// The last read (`None` before the first, or where it cannot be
    /// read).
    pub fn last(&self) -> Option<Resident> {
        self.read.and_then(|(_, read)| read)
    }
}

/// `VmRSS` and `VmHWM` of a `/proc/{pid}/status` text.
fn parse_status(text: &str) -> Option<Resident> {
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kib: u64 = line[name.len()..].split_whitespace().next()?.parse().ok()?;
        kib.checked_mul(1024)
    };
    let current = field("VmRSS:")?;
    // The peak is at least the current size, even read a moment apart.
    let peak = field("VmHWM:").unwrap_or(current).max(current);
    Some(Resident { current, peak })
}

/// `bytes` for a person: megabytes (10⁶) without decimals below a
/// gigabyte, gigabytes with two decimals from there (`556 MB`, `1.07 GB`).
pub fn size(bytes: u64) -> String {
    if bytes < 999_500_000 {
        format!("{:.0} MB", bytes as f64 / 1e6)
    } else {
        format!("{:.2} GB", bytes as f64 / 1e9)
    }
}

/// `Ok` if `needed` bytes fit in `available` (unknown: assumed to fit).
///
/// # Errors
/// [`SolverError::OutOfMemory`] naming both sizes.
pub(crate) fn check(needed: u64, available: Option<u64>) -> Result<(), SolverError> {
    match available {
        Some(available) if needed > available => {
            Err(SolverError::OutOfMemory { needed, available })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_available_memory_and_a_containers_limit() {
        let meminfo = "MemTotal:       32000000 kB\nMemFree:         1000 kB\n\
                       MemAvailable:   23962052 kB\nBuffers: 1 kB\n";
        assert_eq!(parse_meminfo(meminfo), Some(23_962_052 * 1024));
        assert_eq!(parse_meminfo("MemTotal: 1 kB\n"), None);
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(cgroup_room(some("max\n"), some("5\n")), None);
        assert_eq!(cgroup_room(some("1000\n"), some("400\n")), Some(600));
        assert_eq!(cgroup_room(some("1000\n"), None), Some(1000));
        assert_eq!(cgroup_room(some("1000"), some("4000")), Some(0));
        assert_eq!(cgroup_room(None, some("4000")), None);
        // This machine has some, whatever it is.
        assert!(available().is_none_or(|bytes| bytes > 0));
    }

    #[test]
    fn reads_what_the_process_holds() {
        let status = "Name:\tsoftbody\nVmPeak:\t 9999 kB\nVmHWM:\t   1046000 kB\n\
                      VmRSS:\t   1040000 kB\nThreads:\t5\n";
        let r = parse_status(status).unwrap();
        assert_eq!(r.current, 1_040_000 * 1024);
        assert_eq!(r.peak, 1_046_000 * 1024);
        assert_eq!(r.to_string(), "1.06 GB (peak 1.07 GB)");
        // No peak line: the current size; no current size: nothing.
        assert_eq!(parse_status("VmRSS: 10 kB\n").unwrap().peak, 10_240);
        assert_eq!(parse_status("VmHWM: 10 kB\n"), None);
        assert_eq!(parse_status("VmRSS: many kB\n"), None);
        assert_eq!(size(556_300_000), "556 MB");
        assert_eq!(size(999_499_999), "999 MB");
        assert_eq!(size(999_500_000), "1.00 GB");
        // This process holds something, and its peak is at least that.
        if cfg!(target_os = "linux") {
            let here = resident().unwrap();
            assert!(here.current > 0 && here.peak >= here.current, "{here:?}");
        }
    }

    #[test]
    fn a_factor_larger_than_the_free_memory_is_refused_with_both_sizes() {
        assert!(check(1 << 30, Some(2 << 30)).is_ok());
        assert!(check(1 << 40, None).is_ok());
        let e = check(34_200_000_000, Some(610_000_000)).unwrap_err();
        assert!(matches!(e, SolverError::OutOfMemory { .. }));
        let text = e.to_string();
        assert!(
            text.contains("34.20 GB") && text.contains("610 MB"),
            "{text}"
        );
    }
}
