//! The memory a factorisation may take: checked against what the machine
//! has free before the factor is allocated, so a model too large for it is
//! an error naming both sizes instead of a process the kernel kills (with
//! the editor's unsaved work) or a machine that swaps for minutes.
//!
//! On Linux the free memory is `MemAvailable` from `/proc/meminfo`, lowered
//! to what the process's cgroup limits leave (v2 at the root and at its
//! own cgroup, as in a container or a `systemd-run` scope; v1's memory
//! controller) and to what its address-space limit (`ulimit -v`) leaves;
//! elsewhere it is not known and nothing is checked.
//!
//! Also the memory the process holds ([`resident`]), which the editor's
//! status bar, the terminal UI and `softbody bench` report: what a model
//! of a given size costs on the machine, measured where it runs.

use super::SolverError;

/// Bytes the process may still allocate, if known.
pub(crate) fn available() -> Option<u64> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let free = parse_meminfo(&read("/proc/meminfo")?)?;
    let cgroups = cgroup_files(&read("/proc/self/cgroup").unwrap_or_default());
    let rooms = (cgroups.iter()).filter_map(|[max, current]| cgroup_room(read(max), read(current)));
    let address = address_room(
        &read("/proc/self/limits").unwrap_or_default(),
        &read("/proc/self/status").unwrap_or_default(),
    );
    Some(rooms.chain(address).fold(free, u64::min))
}

/// The limit and usage files of the memory cgroups of a process whose
/// `/proc/self/cgroup` reads `proc_cgroup`: v2's at the root (a container's
/// own view) and at its cgroup (`0::/path`), v1's memory controller's
/// (`N:…memory…:/path`). A v1 "no limit" is a number beyond any memory.
fn cgroup_files(proc_cgroup: &str) -> Vec<[String; 2]> {
    let v2 = |dir: &str| [format!("{dir}/memory.max"), format!("{dir}/memory.current")];
    let mut files = vec![v2("/sys/fs/cgroup")];
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let path = path.trim_end_matches('/');
        if controllers.is_empty() {
            if !path.is_empty() {
                files.push(v2(&format!("/sys/fs/cgroup{path}")));
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            let dir = format!("/sys/fs/cgroup/memory{path}");
            files.push([
                format!("{dir}/memory.limit_in_bytes"),
                format!("{dir}/memory.usage_in_bytes"),
            ]);
        }
    }
    files
}

/// What the address-space limit (`Max address space` of
/// `/proc/self/limits`, `ulimit -v`) leaves above the process's virtual
/// size (`VmSize` of `/proc/self/status`); `None` when unlimited.
fn address_room(limits: &str, status: &str) -> Option<u64> {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    let limit: u64 = line.split_whitespace().nth(3)?.parse().ok()?;
    let size = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kib: u64 = size.split_whitespace().nth(1)?.parse().ok()?;
    Some(limit.saturating_sub(kib.saturating_mul(1024)))
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
        // A systemd-run scope (v2) and a v1 memory controller.
        let files = cgroup_files("0::/system.slice/run-u7.scope\n");
        assert_eq!(
            files[1],
            [
                "/sys/fs/cgroup/system.slice/run-u7.scope/memory.max".to_owned(),
                "/sys/fs/cgroup/system.slice/run-u7.scope/memory.current".to_owned()
            ]
        );
        let files = cgroup_files("12:cpu,cpuacct:/\n9:memory:/docker/ab\n0::/\n");
        assert_eq!(files.len(), 2, "{files:?}");
        assert_eq!(
            files[1][0],
            "/sys/fs/cgroup/memory/docker/ab/memory.limit_in_bytes"
        );
        // `ulimit -v 1500000` (KiB) with 200 MB mapped.
        let limits = "Max stack size            8388608              unlimited            bytes\n\
                      Max address space         1536000000           unlimited            bytes\n";
        let status = "VmPeak:\t  300000 kB\nVmSize:\t  200000 kB\n";
        assert_eq!(
            address_room(limits, status),
            Some(1_536_000_000 - 204_800_000)
        );
        let unlimited =
            "Max address space         unlimited            unlimited            bytes\n";
        assert_eq!(address_room(unlimited, status), None);
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
