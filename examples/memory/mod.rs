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

/// Asks glibc's allocator to keep freed memory for reuse instead of handing it back to the
/// kernel (Linux with glibc; elsewhere nothing): no trimming of the heap's top, no separate
/// mappings for blocks under 32 MiB (glibc's largest threshold), and 256 MiB of padding when the
/// heap grows. A training step frees and allocates the same large buffers every time; handed
/// back, each comes back as fresh pages, faulted in one 4 KiB page at a time. Returns whether
/// glibc accepted all three settings.
pub fn keep_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // glibc's `mallopt` parameters (malloc.h).
        const M_TRIM_THRESHOLD: i32 = -1;
        const M_TOP_PAD: i32 = -2;
        const M_MMAP_THRESHOLD: i32 = -3;
        const M_MMAP_MAX: i32 = -4;
        extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        // SAFETY: `mallopt` only changes the allocator's tuning parameters; glibc documents it
        // as callable at any time, and the values are in the ranges it accepts (it returns 0
        // and changes nothing otherwise).
        unsafe {
            mallopt(M_TRIM_THRESHOLD, i32::MAX) == 1
                && mallopt(M_TOP_PAD, 256 << 20) == 1
                && mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1
                && mallopt(M_MMAP_MAX, 0) == 1
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}
