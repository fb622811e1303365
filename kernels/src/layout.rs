//! `Layout`: the storage formats of `SparseTensor`, with torch's names.

use core::fmt;

/// How a `SparseTensor` (of `sparsegrad-backend`) stores its specified elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// Coordinate format: `indices [sparse_dim, nse]`, `values [nse, *dense]`; may be uncoalesced.
    Coo,
    /// Compressed sparse rows: `crow_indices [*batch, rows + 1]`, `col_indices [*batch, nse]`.
    Csr,
    /// Compressed sparse columns: `ccol_indices [*batch, cols + 1]`, `row_indices [*batch, nse]`.
    Csc,
    /// Block compressed sparse rows: CSR over blocks of `blocksize`.
    Bsr,
    /// Block compressed sparse columns: CSC over blocks of `blocksize`.
    Bsc,
}

impl Layout {
    /// torch's name without the `torch.` prefix: `sparse_coo`, `sparse_csr`, ...
    pub fn name(self) -> &'static str {
        match self {
            Layout::Coo => "sparse_coo",
            Layout::Csr => "sparse_csr",
            Layout::Csc => "sparse_csc",
            Layout::Bsr => "sparse_bsr",
            Layout::Bsc => "sparse_bsc",
        }
    }

    /// CSR, CSC, BSR or BSC.
    pub fn is_compressed(self) -> bool {
        self != Layout::Coo
    }

    /// BSR or BSC.
    pub fn is_blocked(self) -> bool {
        matches!(self, Layout::Bsr | Layout::Bsc)
    }

    /// Whether the compressed dimension is the row (CSR, BSR) rather than the column.
    pub fn compresses_rows(self) -> bool {
        matches!(self, Layout::Csr | Layout::Bsr)
    }

    /// Names of the compressed and plain index components.
    pub fn index_names(self) -> (&'static str, &'static str) {
        if self.compresses_rows() {
            ("crow_indices", "col_indices")
        } else {
            ("ccol_indices", "row_indices")
        }
    }

    /// The layout that stores the transpose with the same index arrays (CSR <-> CSC, BSR <-> BSC).
    pub fn transposed(self) -> Layout {
        match self {
            Layout::Coo => Layout::Coo,
            Layout::Csr => Layout::Csc,
            Layout::Csc => Layout::Csr,
            Layout::Bsr => Layout::Bsc,
            Layout::Bsc => Layout::Bsr,
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
