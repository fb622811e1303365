//! The compressed product `out[r, :] = Σ_q values[v(q)] · x[idx[q], :]` on Cube devices, in the
//! manner of GE-SpMM (Huang et al., SC'20) and Sputnik (Gale et al., SC'20): a team of units per
//! row, each unit a vector of consecutive columns of the dense operand (so a plane's loads of
//! `x`'s rows coalesce), the row's column indices and values staged through shared memory in
//! chunks loaded by the whole team at once (each index and value read from global memory once
//! per team instead of once per unit), and the dense rows read as `Vector<F, N>` of 4 (or 2)
//! elements where `n` allows.
//!
//! A cube holds several teams (rows) when the rows are narrow, so that a cube still has 128
//! units; its teams stage and sum in lock step, the cube's barriers taken the same number of times
//! by every unit (the longest of its rows sets the count). Rows of very different lengths are
//! the job of the row split of `spmm::RowSplit`, applied before this kernel as before the naive
//! one: a power-law hub is cut into pieces of 256 entries, each piece a row here.
//!
//! Each output vector is summed in the order of the pattern's entries, with the same products
//! and sums as the naive kernel (`spmm::compressed_times_dense`), so the two agree bit for bit
//! where the device does not contract them differently.

use super::census;
use burn::backend::cubecl::dtype_to_storage_type;
use burn_cubecl::cubecl::{self, calculate_cube_count_elemwise, prelude::*, CubeDim};
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::tensor::CubeTensor;

/// The units of a cube: enough to hide latency, few enough that the staging fits any device's
/// shared memory (at most 6 KiB: see [`TiledLaunch::new`]).
const CUBE_UNITS: usize = 128;

/// The widest team: a plane on most GPUs, so that a team's loads of one dense row coalesce.
const MAX_TEAM: usize = 32;

/// The sizes a launch of [`rows_times_dense_tiled`] works with (the comptime ones are its
/// `#[comptime]` arguments).
#[derive(CubeLaunch, CubeType)]
struct TiledShape {
    /// Rows of the pattern (and of `out`).
    rows: usize,
    /// Vectors of a dense row: `n / N`.
    vectors: usize,
    /// Tiles of a dense row: `ceil(vectors / team)`, the cubes a row block takes.
    tiles: usize,
    /// Cubes that do work: `ceil(rows / teams) * tiles` (the launch may round the count up).
    cubes: usize,
}

/// The compressed operand of [`rows_times_dense_tiled`]: the pattern `ptr`, `idx`, the entry
/// order `perm` (read when `permuted`) and the values.
#[derive(CubeLaunch, CubeType)]
struct TiledPattern<F: Float, P: Int, J: Int> {
    ptr: OwnedTensor<P>,
    idx: OwnedTensor<J>,
    perm: OwnedTensor<J>,
    values: OwnedTensor<F>,
}

/// `out[r, c] = Σ_{q ∈ ptr[r]..ptr[r + 1]} values[v(q)] · x[idx[q], c]` for the vector columns
/// `c` of `x [k, vectors]`, `v(q)` being `perm[q]` when `permuted` (a transposed view's entry
/// order), else `q`. A cube is `plan.teams` rows by `plan.team` vector columns (`UNIT_POS_Y`,
/// `UNIT_POS_X`); each team stages `plan.chunk` entries of its row at a time.
#[cube(launch)]
// CubeCL's kernels have no `div_ceil`.
#[allow(clippy::manual_div_ceil)]
fn rows_times_dense_tiled<F: Float, P: Int, J: Int, N: Size>(
    a: &TiledPattern<F, P, J>,
    x: &Tensor<Vector<F, N>>,
    out: &mut Tensor<Vector<F, N>>,
    shape: TiledShape,
    #[comptime] plan: TiledLaunch,
    #[comptime] permuted: bool,
    #[define(F, P, J)] _dtypes: [ElemType; 3],
) {
    // A whole cube leaves here or none of it: the barriers below are taken by all its units.
    if CUBE_POS >= shape.cubes {
        terminate!();
    }
    let block = CUBE_POS / shape.tiles;
    let tile = CUBE_POS % shape.tiles;
    let t = UNIT_POS_Y as usize;
    let lane = UNIT_POS_X as usize;
    let row = block * plan.teams + t;
    let col = tile * plan.team + lane;
    let in_rows = row < shape.rows;
    // A team past the last row reads the empty range `ptr[rows]..ptr[rows]`.
    let clamped = select(in_rows, row, shape.rows);
    let start = usize::cast_from(a.ptr[clamped]);
    let end = usize::cast_from(a.ptr[select(in_rows, row + 1, shape.rows)]);

    // The cube's trip count: the longest of its rows, in chunks, through shared memory so that
    // every unit takes the barriers of the loop below the same number of times.
    let mut lengths = Shared::<[u32]>::new_slice(plan.teams);
    if lane == 0 {
        lengths[t] = u32::cast_from(end - start);
    }
    sync_cube();
    let mut longest = 0u32;
    for i in 0..plan.teams {
        longest = select(lengths[i] > longest, lengths[i], longest);
    }
    let chunks = (usize::cast_from(longest) + plan.chunk - 1) / plan.chunk;

    let mut staged_cols = Shared::<[u32]>::new_slice(comptime!(plan.teams * plan.chunk));
    let mut staged_values = Shared::<[F]>::new_slice(comptime!(plan.teams * plan.chunk));
    let base = t * plan.chunk;
    let mut acc = Vector::<F, N>::new(F::new(0.0));
    for c in 0..chunks {
        let first = start + c * plan.chunk;
        // The team loads the chunk together, consecutive units consecutive entries (coalesced).
        let mut s = lane;
        while s < plan.chunk {
            let q = first + s;
            if q < end {
                staged_cols[base + s] = u32::cast_from(a.idx[q]);
                staged_values[base + s] = if permuted { a.values[usize::cast_from(a.perm[q])] } else { a.values[q] };
            }
            s += plan.team;
        }
        sync_cube();
        if col < shape.vectors && first < end {
            let count = select(end - first < plan.chunk, end - first, plan.chunk);
            for e in 0..count {
                let v = Vector::<F, N>::new(staged_values[base + e]);
                acc += v * x[usize::cast_from(staged_cols[base + e]) * shape.vectors + col];
            }
        }
        // The chunk is read by every unit before the team overwrites it.
        sync_cube();
    }
    if in_rows && col < shape.vectors {
        out[row * shape.vectors + col] = acc;
    }
}

/// The shape of one launch: the team (units per row, a power of two covering the row's vectors
/// up to [`MAX_TEAM`]), the teams of a cube, and the entries a team stages at once: a comptime
/// argument of [`rows_times_dense_tiled`].
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
struct TiledLaunch {
    team: usize,
    teams: usize,
    chunk: usize,
}

impl TiledLaunch {
    /// For rows of `vectors` vectors. The staging takes `teams * chunk` indices and values:
    /// `chunk = min(32, 4 · team)` keeps that at `128 / team · 4 · team = 512` entries at most
    /// (6 KiB in f64), far below any device's shared memory, while a wide team still stages a
    /// whole plane's worth of entries per barrier.
    fn new(vectors: usize) -> Self {
        let team = vectors.next_power_of_two().clamp(1, MAX_TEAM);
        Self { team, teams: CUBE_UNITS / team, chunk: (4 * team).min(32) }
    }
}

/// The product of the compressed pattern `ptr [rows + 1]`, `idx` (and `perm`, the entry order,
/// if given) with values `values` and `x [k, n]` into `out [rows, n]`, read in vectors of `width`
/// (which divides `n`). The operands are checked by the caller (`spmm::compressed_product`): a
/// valid pattern over the rows of `x`, every operand addressable in 32 bits, `rows · n > 0`.
pub(crate) fn launch(
    ptr: CubeTensor,
    idx: CubeTensor,
    perm: Option<CubeTensor>,
    values: CubeTensor,
    x: CubeTensor,
    out: &CubeTensor,
    width: usize,
) {
    let permuted = perm.is_some();
    let perm = perm.unwrap_or_else(|| idx.clone());
    let rows = ptr.meta.shape()[0] - 1;
    let vectors = x.meta.shape()[1] / width;
    let plan = TiledLaunch::new(vectors);
    let tiles = vectors.div_ceil(plan.team);
    let cubes = rows.div_ceil(plan.teams) * tiles;
    let cube_dim = CubeDim::new_2d(plan.team as u32, plan.teams as u32);
    let count = calculate_cube_count_elemwise(&out.client, cubes * CUBE_UNITS, cube_dim);
    let types = [out.dtype, ptr.dtype, idx.dtype].map(dtype_to_storage_type);
    census::launched("rows_times_dense_tiled");
    rows_times_dense_tiled::launch(
        &out.client,
        count,
        cube_dim,
        width,
        TiledPatternLaunch::new(
            into_contiguous(ptr).into_tensor_arg(),
            into_contiguous(idx).into_tensor_arg(),
            into_contiguous(perm).into_tensor_arg(),
            into_contiguous(values).into_tensor_arg(),
        ),
        into_contiguous(x).into_tensor_arg(),
        out.clone().into_tensor_arg(),
        TiledShapeLaunch::new(rows, vectors, tiles, cubes),
        plan,
        permuted,
        types,
    );
}
