//! One entry's tokens: a 1-based index checked against the declared size, and a value parsed
//! for the banner's field under the caller's [`ReadOptions`] (which live here because they
//! govern exactly this: what a value may be). Shared by the `coordinate` and `array` readers.

use super::MtxField;

/// How the Matrix Market readers treat what scipy accepts but a caller may not want.
///
/// Built from the default, which accepts what scipy's `mmread` accepts, one setting at a time
/// (`ReadOptions::default().allow_non_finite(false)`): non-exhaustive, so a later option does
/// not break a caller's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadOptions {
    /// Whether a `real` value may be `nan`, `inf`, `-inf` or `infinity` (any case, as scipy and
    /// numpy take them), or overflow to an infinity (`1e999`). Default `true`; with `false` such
    /// a value is an error naming the file and line.
    pub allow_non_finite: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self { allow_non_finite: true }
    }
}

impl ReadOptions {
    /// These options with [`Self::allow_non_finite`] set to `allow`.
    pub fn allow_non_finite(mut self, allow: bool) -> Self {
        self.allow_non_finite = allow;
        self
    }
}

/// A 1-based index of a Matrix Market entry, as 0-based, checked against `1..=size`.
pub(super) fn index(token: &str, what: &str, size: usize) -> Result<usize, String> {
    match token.parse::<usize>() {
        Ok(i) if (1..=size).contains(&i) => Ok(i - 1),
        Ok(i) => Err(format!("{what} {i} is outside 1..={size}")),
        Err(_) => Err(format!("{what} {token:?} is not a positive integer")),
    }
}

/// The value of an entry of a `real` or `integer` file. A `real` takes Rust's `f64` syntax, which
/// is scipy's and numpy's: `nan`, `inf` and `infinity`, signed or not, in any case, and a
/// decimal too large for `f64` is an infinity; `options` may refuse those.
pub(super) fn value(token: &str, field: MtxField, options: &ReadOptions) -> Result<f64, String> {
    match field {
        MtxField::Pattern => Ok(1.0),
        MtxField::Real => match token.parse::<f64>() {
            Ok(v) if v.is_finite() || options.allow_non_finite => Ok(v),
            Ok(_) => Err(format!("value {token:?} is not finite (refused: `ReadOptions::allow_non_finite` is false)")),
            Err(_) => Err(format!("value {token:?} is not a real number")),
        },
        MtxField::Integer => {
            // Larger magnitudes would not survive the conversion to f64 exactly.
            const EXACT: i64 = 1 << 53;
            match token.parse::<i64>() {
                Ok(v) if (-EXACT..=EXACT).contains(&v) => Ok(v as f64),
                Ok(v) => Err(format!("integer value {v} is beyond 2^53 and would not be exact as f64")),
                Err(_) => Err(format!("value {token:?} is not an integer")),
            }
        }
    }
}
