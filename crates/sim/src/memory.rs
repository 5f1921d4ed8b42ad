//! The process's memory as the scale benchmarks report it (the sim's with 100,000 pods stored,
//! the informer cache's per pod): the resident set size, the figure the memory targets are
//! stated in.

/// The resident set size of this process in bytes, from `/proc/self/status`; `None` where that
/// file or its `VmRSS` line is missing (not Linux).
pub fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
