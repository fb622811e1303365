//! The benchmark workloads of `docs/WORKLOADS.md`, rebuilt bit for bit: a
//! counter-based splitmix64 stream, so Rust and Python draw the same numbers.

#![allow(dead_code)]

/// `sm(seed, k)`: the k-th splitmix64 output of the stream `seed` (`sparsegrad::kernels::rng`).
pub fn sm(seed: u64, k: u64) -> u64 {
    sparsegrad::kernels::rng::stream_at(seed, k)
}

/// Uniform in [0, 1) from the top 53 bits.
pub fn unit(seed: u64, k: u64) -> f64 {
    (sm(seed, k) >> 11) as f64 / (1u64 << 53) as f64
}

/// A CSR matrix with f32 values, duplicates summed and columns sorted within rows.
pub struct Csr {
    pub rows: usize,
    pub cols: usize,
    pub crow: Vec<i64>,
    pub col: Vec<i64>,
    pub val: Vec<f32>,
}

impl Csr {
    pub fn nnz(&self) -> usize {
        self.val.len()
    }

    pub fn value_sum(&self) -> f64 {
        self.val.iter().map(|&v| v as f64).sum()
    }

    pub fn to_dense(&self) -> Vec<f32> {
        let mut d = vec![0f32; self.rows * self.cols];
        for r in 0..self.rows {
            for k in self.crow[r] as usize..self.crow[r + 1] as usize {
                d[r * self.cols + self.col[k] as usize] += self.val[k];
            }
        }
        d
    }
}

fn entries(rows: usize, cols: usize, deg: &[usize], seed: u64, start: u64) -> Csr {
    let mut crow = vec![0i64; rows + 1];
    let mut col = Vec::new();
    let mut val = Vec::new();
    let mut j: u64 = 0;
    let mut row: Vec<(i64, f32)> = Vec::new();
    for (r, &d) in deg.iter().enumerate() {
        row.clear();
        for _ in 0..d {
            let c = (sm(seed, start + 2 * j) % cols as u64) as i64;
            let v = (unit(seed, start + 2 * j + 1) * 2.0 - 1.0) as f32;
            row.push((c, v));
            j += 1;
        }
        row.sort_by_key(|e| e.0);
        for &(c, v) in row.iter() {
            if col.len() > crow[r] as usize && *col.last().unwrap() == c {
                *val.last_mut().unwrap() += v;
            } else {
                col.push(c);
                val.push(v);
            }
        }
        crow[r + 1] = col.len() as i64;
    }
    Csr { rows, cols, crow, col, val }
}

pub fn powerlaw(n: usize, avg: f64, seed: u64) -> Csr {
    let deg: Vec<usize> = (0..n as u64)
        .map(|i| {
            let d = ((avg / 2.0) / (1.0 - unit(seed, i)).sqrt()).floor() as usize;
            d.clamp(1, n / 10)
        })
        .collect();
    entries(n, n, &deg, seed, n as u64)
}

pub fn uniform(r: usize, c: usize, density: f64, seed: u64) -> Csr {
    let d = (c as f64 * density).round() as usize;
    entries(r, c, &vec![d; r], seed, 0)
}

pub fn dense(r: usize, c: usize, seed: u64) -> Vec<f32> {
    (0..(r * c) as u64).map(|i| (unit(seed, i) * 2.0 - 1.0) as f32).collect()
}

/// A workload: name, matrix, dense operand columns, dense operand seed, expected (nnz, value sum).
pub type Workload = (&'static str, fn() -> Csr, usize, u64, (usize, f64));

/// The three workloads of the anchors.
pub fn set() -> Vec<Workload> {
    vec![
        ("powerlaw100k", || powerlaw(100_000, 10.0, 1), 64, 11, (953_975, 648.035)),
        ("uniform4096_d10", || uniform(4096, 4096, 0.10, 2), 128, 12, (1_598_471, -262.284)),
        ("uniform4096_d01", || uniform(4096, 4096, 0.01, 3), 128, 13, (167_102, 41.842)),
    ]
}
