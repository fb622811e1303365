//! Resident memory of the examples' own process (Linux: `/proc/self/status`), for the reports
//! of peak memory; `n/a` where the kernel gives no such file.

#![allow(dead_code)]

/// A field of `/proc/self/status` in KiB (`VmHWM`: the peak, `VmRSS`: now).
pub fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The peak resident size so far.
pub fn peak_kib() -> Option<u64> {
    status_kib("VmHWM:")
}

/// Resets the peak to the current resident size (Linux >= 4.0: writing 5 to `clear_refs`);
/// whether it could.
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// `kib` in MiB for a report.
pub fn mib(kib: Option<u64>) -> String {
    kib.map_or("n/a".into(), |k| format!("{:.0} MiB", k as f64 / 1024.0))
}
