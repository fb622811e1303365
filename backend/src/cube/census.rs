//! Which Cube kernels a process launched: the record CI checks to prove that its device suites
//! reach every kernel of this module, with burn's `fusion` and without.
//!
//! Every launch site calls `launched` with the kernel's name just before the launch. Where
//! `SPARSEGRAD_KERNEL_CENSUS` names a file, the first launch of each kernel in the process
//! appends a line `kernel<TAB>test` to it (the test is the name the test harness was asked to
//! run: nextest runs one test per process and names it after `--exact`). Lines of one `write`
//! on a file opened for appending do not interleave between processes, so parallel test
//! processes share the file. Without the variable a launch costs one relaxed atomic load.
//!
//! `KERNELS` lists every `#[cube(launch)]` kernel; a unit test reads this module's sources and
//! checks the list and the launch sites against them, so a new kernel cannot be left out of the
//! census, and `.ci/run` fails if a listed kernel is missing from the record of a suite.

use std::collections::HashSet;
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;

/// Every kernel of `crate::cube` that is launched from the host, by name.
pub const KERNELS: &[&str] = &[
    "add_shifted",
    "compressed_times_dense",
    "coordinates",
    "entry_rows",
    "flagged_positions",
    "gradient_on_first",
    "gradient_on_second",
    "group_bounds",
    "input_gradient",
    "iota",
    "linear_keys_of",
    "list_products",
    "mask_hits",
    "match_runs",
    "merge_runs",
    "non_increases",
    "nonzero_flags",
    "place_matches",
    "place_runs",
    "product_counts",
    "row_extremes",
    "rows_times_dense_tiled",
    "run_keys",
    "run_offsets",
    "run_starts",
    "sampled_dots_planes",
    "sampled_row_dots",
    "segment_softmax_backward_columns",
    "segment_softmax_backward_planes",
    "segment_softmax_columns",
    "segment_softmax_planes",
    "semi_sampled_dots",
    "semi_times_dense",
    "semi_transposed_times_dense",
    "values_gradient",
    "values_on_pattern",
];

/// The environment variable naming the census file.
pub const CENSUS_VAR: &str = "SPARSEGRAD_KERNEL_CENSUS";

/// Notes that `kernel` is about to be launched (see the module docs).
pub(crate) fn launched(kernel: &'static str) {
    // 0: not yet read; 1: no census; 2: census on.
    static STATE: AtomicU8 = AtomicU8::new(0);
    static SEEN: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let state = match STATE.load(Ordering::Relaxed) {
        0 => {
            let on = std::env::var_os(CENSUS_VAR).is_some_and(|v| !v.is_empty());
            let state = if on { 2 } else { 1 };
            STATE.store(state, Ordering::Relaxed);
            state
        }
        s => s,
    };
    if state != 2 {
        return;
    }
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if !seen.get_or_insert_with(HashSet::new).insert(kernel) {
        return;
    }
    let Some(path) = std::env::var_os(CENSUS_VAR) else { return };
    let args: Vec<String> = std::env::args().collect();
    let test = args.iter().position(|a| a == "--exact").and_then(|i| args.get(i + 1)).map_or("?", String::as_str);
    // A census that cannot be written is a CI failure found by the check of its contents, not
    // a reason to fail the kernel: the error is dropped here.
    if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = file.write_all(format!("{kernel}\t{test}\n").as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::KERNELS;

    /// The kernel sources of this module, by file.
    const SOURCES: &[(&str, &str)] = &[
        ("keys.rs", include_str!("keys.rs")),
        ("matches.rs", include_str!("matches.rs")),
        ("sddmm_planes.rs", include_str!("sddmm_planes.rs")),
        ("semi.rs", include_str!("semi.rs")),
        ("softmax.rs", include_str!("softmax.rs")),
        ("softmax_planes.rs", include_str!("softmax_planes.rs")),
        ("sort.rs", include_str!("sort.rs")),
        ("spgemm/mod.rs", include_str!("spgemm/mod.rs")),
        ("spgemm/numeric.rs", include_str!("spgemm/numeric.rs")),
        ("spgemm/pattern.rs", include_str!("spgemm/pattern.rs")),
        ("spgemm/product.rs", include_str!("spgemm/product.rs")),
        ("spmm.rs", include_str!("spmm.rs")),
        ("spmm_tiled.rs", include_str!("spmm_tiled.rs")),
        ("spmm_reduce.rs", include_str!("spmm_reduce.rs")),
    ];

    /// The name of the first `fn` at or after the line following `#[cube(launch)]`.
    fn kernel_names(src: &str) -> Vec<String> {
        let lines: Vec<&str> = src.lines().collect();
        let mut names = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            if line.trim_start().starts_with("#[cube(launch") {
                let f =
                    lines[i + 1..].iter().find_map(|l| l.split_once("fn ")).expect("a kernel fn after #[cube(launch)]");
                let name: String = f.1.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                names.push(name);
            }
        }
        names
    }

    /// Every `#[cube(launch)]` kernel is listed, and nothing else; every `name::launch(` site
    /// is matched by a `launched("name")` call in the same file.
    #[test]
    fn census_lists_every_kernel_and_every_launch_site() {
        let mut found: Vec<String> = SOURCES.iter().flat_map(|(_, src)| kernel_names(src)).collect();
        found.sort();
        let mut listed: Vec<String> = KERNELS.iter().map(|s| s.to_string()).collect();
        listed.sort();
        assert_eq!(found, listed, "census::KERNELS against the #[cube(launch)] kernels of crate::cube");
        for (file, src) in SOURCES {
            for kernel in KERNELS {
                let sites = src.matches(&format!("{kernel}::launch(")).count();
                let notes = src.matches(&format!("census::launched(\"{kernel}\")")).count();
                assert_eq!(sites, notes, "{file}: `{kernel}` is launched {sites} times and noted {notes} times");
            }
        }
    }
}
