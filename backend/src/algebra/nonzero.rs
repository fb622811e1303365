//! Which items of a dense buffer hold a non-zero: the pattern of a dense -> sparse conversion.
//! An item is one element, or the dense sub-tensor (block x dense dims) stored per index.

use super::PARALLEL_MIN;
use half::{bf16, f16};
use rayon::prelude::*;

/// A value that can be asked whether it is zero (NaN counts as non-zero, as in torch).
pub trait IsZero: Copy + Send + Sync {
    /// Whether the value equals zero.
    fn is_zero(self) -> bool;
}

impl IsZero for f32 {
    fn is_zero(self) -> bool {
        self == 0.0
    }
}
impl IsZero for f64 {
    fn is_zero(self) -> bool {
        self == 0.0
    }
}
impl IsZero for f16 {
    fn is_zero(self) -> bool {
        self.to_f32() == 0.0
    }
}
impl IsZero for bf16 {
    fn is_zero(self) -> bool {
        self.to_f32() == 0.0
    }
}

/// Positions (in item units) of the items of length `item_len` with a non-zero element, ascending.
pub fn nonzero_items<F: IsZero>(data: &[F], item_len: usize) -> Vec<i64> {
    if item_len == 0 {
        return Vec::new();
    }
    let items = data.len() / item_len;
    let scan = |start: usize, part: &[F]| -> Vec<i64> {
        if item_len > 1 {
            return part
                .chunks(item_len)
                .enumerate()
                .filter(|(_, item)| item.iter().any(|v| !v.is_zero()))
                .map(|(i, _)| (start + i) as i64)
                .collect();
        }
        // Branch-free compaction through a small buffer: write every index, advance on non-zero.
        let mut out = Vec::new();
        let mut buf = [0i64; 1024];
        for (b, block) in part.chunks(1024).enumerate() {
            let base = (start + b * 1024) as i64;
            let mut len = 0;
            for (i, v) in block.iter().enumerate() {
                buf[len] = base + i as i64;
                len += usize::from(!v.is_zero());
            }
            out.extend_from_slice(&buf[..len]);
        }
        out
    };
    if data.len() < PARALLEL_MIN {
        return scan(0, data);
    }
    let per_task = items.div_ceil(rayon::current_num_threads() * 4).max(1);
    let parts: Vec<Vec<i64>> = data
        .par_chunks(per_task * item_len)
        .enumerate()
        .map(|(t, part)| scan(t * per_task, part))
        .collect();
    parts.concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_items_with_any_nonzero() {
        let data = [0.0f32, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 2.0];
        assert_eq!(nonzero_items(&data, 1), vec![2, 7]);
        assert_eq!(nonzero_items(&data, 2), vec![1, 3]);
        let big: Vec<f64> = (0..200_000).map(|i| if i % 7 == 0 { 1.0 } else { 0.0 }).collect();
        let expected: Vec<i64> = (0..200_000).filter(|i| i % 7 == 0).collect();
        assert_eq!(nonzero_items(&big, 1), expected);
    }
}
