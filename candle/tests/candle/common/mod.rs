//! Test data shared by the candle tests: seeded random matrices (with empty rows, repeats for
//! COO, no entries at all), their candle sparse and dense forms, and tolerant comparisons.

#![allow(dead_code)]

use candle_core::{DType, Device, Tensor};
use sparsegrad_candle::SparseTensor;

/// A splitmix stream: the data of a case follows from its seed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// A value in ±[0.5, 2).
    pub fn value(&mut self) -> f64 {
        let v = 0.5 + 1.5 * ((self.next() >> 11) as f64 / (1u64 << 53) as f64);
        if self.next() & 1 == 0 {
            v
        } else {
            -v
        }
    }
    pub fn values(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.value()).collect()
    }
}

/// A sparse matrix as entries `(row, col, value)` in storage order.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub shape: [usize; 2],
    pub rows: Vec<i64>,
    pub cols: Vec<i64>,
    pub values: Vec<f64>,
}

impl Case {
    pub fn nnz(&self) -> usize {
        self.rows.len()
    }

    /// The dense matrix (repeats summed), row-major.
    pub fn dense(&self) -> Vec<f64> {
        let [m, k] = self.shape;
        let mut d = vec![0.0; m * k];
        for j in 0..self.nnz() {
            d[self.rows[j] as usize * k + self.cols[j] as usize] += self.values[j];
        }
        d
    }

    /// 1 where an entry is stored, else 0.
    pub fn mask(&self) -> Vec<f64> {
        let [m, k] = self.shape;
        let mut d = vec![0.0; m * k];
        for j in 0..self.nnz() {
            d[self.rows[j] as usize * k + self.cols[j] as usize] = 1.0;
        }
        d
    }

    /// COO with int64 indices, entries in the case's order.
    pub fn coo(&self, values: Tensor) -> SparseTensor {
        let mut idx = self.rows.clone();
        idx.extend(&self.cols);
        let indices = Tensor::from_vec(idx, (2, self.nnz()), &Device::Cpu).unwrap();
        SparseTensor::coo(&indices, values, self.shape).unwrap()
    }

    /// The case's CSR arrays (the case must be sorted and unique).
    pub fn csr_arrays(&self) -> (Vec<i64>, Vec<i64>) {
        let m = self.shape[0];
        let mut crow = vec![0i64; m + 1];
        for &r in &self.rows {
            crow[r as usize + 1] += 1;
        }
        for i in 0..m {
            crow[i + 1] += crow[i];
        }
        (crow, self.cols.clone())
    }

    /// CSR with int64 indices (the case must be sorted and unique).
    pub fn csr(&self, values: Tensor) -> SparseTensor {
        let (crow, col) = self.csr_arrays();
        let dev = Device::Cpu;
        let crow = Tensor::from_vec(crow, self.shape[0] + 1, &dev).unwrap();
        let col = Tensor::from_vec(col, self.nnz(), &dev).unwrap();
        SparseTensor::csr(&crow, &col, values, self.shape).unwrap()
    }

    pub fn is_coalesced(&self) -> bool {
        let k = self.shape[1] as i64;
        (1..self.nnz()).all(|j| self.rows[j - 1] * k + self.cols[j - 1] < self.rows[j] * k + self.cols[j])
    }
}

/// A sorted, unique random pattern of `m x k` with about `density` of the elements stored,
/// every third row empty.
pub fn random(name: &str, m: usize, k: usize, density: f64, rng: &mut Rng) -> Case {
    let (mut rows, mut cols) = (Vec::new(), Vec::new());
    for r in 0..m {
        if r % 3 == 1 {
            continue;
        }
        for c in 0..k {
            if (rng.next() % 1000) as f64 / 1000.0 < density {
                rows.push(r as i64);
                cols.push(c as i64);
            }
        }
    }
    let values = rng.values(rows.len());
    Case { name: name.into(), shape: [m, k], rows, cols, values }
}

/// The same entries shuffled with some repeated (an uncoalesced COO input).
pub fn uncoalesced(case: &Case, rng: &mut Rng) -> Case {
    let mut order: Vec<usize> = (0..case.nnz()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let repeats = case.nnz() / 3;
    order.extend((0..repeats).map(|_| rng.below(case.nnz())));
    Case {
        name: format!("{} uncoalesced", case.name),
        shape: case.shape,
        rows: order.iter().map(|&j| case.rows[j]).collect(),
        cols: order.iter().map(|&j| case.cols[j]).collect(),
        values: rng.values(order.len()),
    }
}

/// The standard cases: random with empty rows, one with no entries, one with a single row.
pub fn cases(seed: u64) -> Vec<Case> {
    let mut rng = Rng(seed);
    let a = random("random 9x7", 9, 7, 0.4, &mut rng);
    let tall = random("random 40x13", 40, 13, 0.2, &mut rng);
    let wide =
        Case { name: "one row".into(), shape: [1, 6], rows: vec![0, 0, 0], cols: vec![0, 2, 5], values: rng.values(3) };
    let empty = Case { name: "nnz = 0".into(), shape: [5, 4], rows: vec![], cols: vec![], values: vec![] };
    vec![a, tall, wide, empty]
}

pub fn tensor(data: &[f64], shape: &[usize], dtype: DType) -> Tensor {
    Tensor::from_slice(data, shape, &Device::Cpu).unwrap().to_dtype(dtype).unwrap()
}

pub fn host(t: &Tensor) -> Vec<f64> {
    t.flatten_all().unwrap().to_dtype(DType::F64).unwrap().to_vec1().unwrap()
}

/// Relative tolerance for a dtype.
pub fn tol(dtype: DType) -> f64 {
    if dtype == DType::F32 {
        2e-5
    } else {
        1e-11
    }
}

pub fn assert_close(actual: &[f64], expected: &[f64], tol: f64, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: length");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!((a - e).abs() <= tol * (1.0 + e.abs()), "{what}: element {i}: {a} != {e}");
    }
}

/// The dense gradient `g [m, k]` read at every stored entry (the masked gradient of the values).
pub fn at_entries(g: &[f64], case: &Case) -> Vec<f64> {
    let k = case.shape[1];
    (0..case.nnz()).map(|j| g[case.rows[j] as usize * k + case.cols[j] as usize]).collect()
}
