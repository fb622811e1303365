//! Lexicographic keys of COO entries: the row-major linear index of an entry's sparse
//! coordinates, so that sorting keys sorts entries lexicographically.

use super::{IndexElem, PARALLEL_MIN};
use rayon::prelude::*;

/// Row-major strides of `sizes` (the last dimension has stride 1).
pub fn strides(sizes: &[usize]) -> Vec<u64> {
    let mut strides = vec![1u64; sizes.len()];
    for d in (0..sizes.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * sizes[d + 1] as u64;
    }
    strides
}

/// The key of every entry of `indices` (laid out `[sparse_dim, nse]`); indices must be in bounds.
pub fn linear_keys<I: IndexElem>(indices: &[I], nse: usize, sizes: &[usize]) -> Vec<u64> {
    let strides = strides(sizes);
    let mut keys = vec![0u64; nse];
    let fill = |start: usize, chunk: &mut [u64]| {
        for (d, &stride) in strides.iter().enumerate() {
            let row = &indices[d * nse + start..d * nse + start + chunk.len()];
            for (k, &i) in chunk.iter_mut().zip(row) {
                *k += i.to_i64() as u64 * stride;
            }
        }
    };
    if nse >= PARALLEL_MIN {
        let chunk = nse.div_ceil(rayon::current_num_threads() * 4).max(4096);
        keys.par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(c, out)| fill(c * chunk, out));
    } else {
        fill(0, &mut keys);
    }
    keys
}

/// The coordinates of each key, laid out `[sizes.len(), keys.len()]`.
pub fn delinearize(keys: &[u64], sizes: &[usize]) -> Vec<i64> {
    let n = keys.len();
    let mut out = vec![0i64; sizes.len() * n];
    let strides = strides(sizes);
    for (d, row) in out.chunks_mut(n.max(1)).enumerate().take(sizes.len()) {
        let (stride, size) = (strides[d], sizes[d] as u64);
        let fill = |start: usize, row: &mut [i64]| {
            for (o, &k) in row.iter_mut().zip(&keys[start..]) {
                *o = ((k / stride) % size.max(1)) as i64;
            }
        };
        if n >= PARALLEL_MIN {
            row.par_chunks_mut(1 << 14)
                .enumerate()
                .for_each(|(c, r)| fill(c << 14, r));
        } else {
            fill(0, row);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_row_major_and_invert() {
        let sizes = [2, 3, 4];
        // entries (1,2,3), (0,0,1), (1,0,0)
        let idx: Vec<i32> = vec![1, 0, 1, 2, 0, 0, 3, 1, 0];
        let keys = linear_keys(&idx, 3, &sizes);
        assert_eq!(keys, vec![12 + 8 + 3, 1, 12]);
        let back = delinearize(&keys, &sizes);
        assert_eq!(back, idx.iter().map(|&v| v as i64).collect::<Vec<_>>());
    }
}
