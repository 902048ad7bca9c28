//! The memory a factorisation may take: checked against what the machine
//! has free before the factor is allocated, so a model too large for it is
//! an error naming both sizes instead of a process the kernel kills (with
//! the editor's unsaved work) or a machine that swaps for minutes.
//!
//! On Linux the free memory is `MemAvailable` from `/proc/meminfo`, lowered
//! to what a cgroup v2 limit (a container's) leaves; elsewhere it is not
//! known and nothing is checked.

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

/// `bytes` as gigabytes (10⁹) with one decimal: `34.2 GB`.
pub(crate) fn gigabytes(bytes: u64) -> String {
    format!("{:.1} GB", bytes as f64 / 1e9)
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
    fn a_factor_larger_than_the_free_memory_is_refused_with_both_sizes() {
        assert!(check(1 << 30, Some(2 << 30)).is_ok());
        assert!(check(1 << 40, None).is_ok());
        let e = check(34_200_000_000, Some(6_100_000_000)).unwrap_err();
        assert!(matches!(e, SolverError::OutOfMemory { .. }));
        let text = e.to_string();
        assert!(
            text.contains("34.2 GB") && text.contains("6.1 GB"),
            "{text}"
        );
    }
}
