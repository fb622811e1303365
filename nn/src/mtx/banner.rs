//! The `%%MatrixMarket` banner: the field ([`MtxField`]) and symmetry ([`MtxSymmetry`]) it
//! declares, its parser (which refuses by name what the readers do not handle), and the comment
//! and blank lines that may follow it. Shared by the `coordinate` and `array` readers.

use std::fmt;

/// What each entry of a Matrix Market file stores besides its position (the banner's field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MtxField {
    /// A floating-point value.
    Real,
    /// An integer value (held as `f64`, exactly: magnitudes above 2^53 are refused).
    Integer,
    /// No value: the entry is there or not (its value is 1).
    Pattern,
}

/// Which entries a Matrix Market file stores (the banner's symmetry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MtxSymmetry {
    /// Every entry.
    General,
    /// The lower triangle (`row >= col`) of a symmetric matrix: `a[j][i] = a[i][j]`.
    Symmetric,
    /// The strict lower triangle (`row > col`) of a skew-symmetric matrix: `a[j][i] = -a[i][j]`
    /// and a zero diagonal.
    SkewSymmetric,
}

impl fmt::Display for MtxField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MtxField::Real => "real",
            MtxField::Integer => "integer",
            MtxField::Pattern => "pattern",
        })
    }
}

impl fmt::Display for MtxSymmetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MtxSymmetry::General => "general",
            MtxSymmetry::Symmetric => "symmetric",
            MtxSymmetry::SkewSymmetric => "skew-symmetric",
        })
    }
}

/// The field and symmetry of a `%%MatrixMarket matrix coordinate <field> <symmetry>` banner (its
/// words are case-insensitive); anything this reader does not handle is refused by name.
pub(super) fn parse_banner(line: &str) -> Result<(MtxField, MtxSymmetry), String> {
    parse_banner_of(line, "coordinate")
}

/// [`parse_banner`] for the storage format `wanted` (`coordinate` or `array`).
pub(super) fn parse_banner_of(line: &str, wanted: &str) -> Result<(MtxField, MtxSymmetry), String> {
    let fields = if wanted == "array" { "<real|integer>" } else { "<real|integer|pattern>" };
    let expected = format!("`%%MatrixMarket matrix {wanted} {fields} <general|symmetric|skew-symmetric>`");
    let mut words = line.split_whitespace();
    let (Some(banner), Some(object), Some(format), Some(field), Some(symmetry), None) =
        (words.next(), words.next(), words.next(), words.next(), words.next(), words.next())
    else {
        return Err(if line.starts_with("%%") {
            format!("banner {line:?} is not {expected}")
        } else {
            format!("no Matrix Market banner: the first line is {line:?}, not {expected}")
        });
    };
    if !banner.eq_ignore_ascii_case("%%MatrixMarket") {
        return Err(format!("banner {line:?} is not {expected}"));
    }
    if !object.eq_ignore_ascii_case("matrix") {
        return Err(format!("banner {line:?}: object {object:?} is not supported (only `matrix`)"));
    }
    if !format.eq_ignore_ascii_case(wanted) {
        let hint = if wanted == "coordinate" {
            "`array` is dense storage: read it with `io::read_dense`"
        } else {
            "`coordinate` is sparse storage: read it with `read_mtx` or `io::read_sparse`"
        };
        return Err(format!("banner {line:?}: format {format:?} is not supported (only `{wanted}`; {hint})"));
    }
    let field = match field.to_ascii_lowercase().as_str() {
        "real" => MtxField::Real,
        "integer" => MtxField::Integer,
        "pattern" => MtxField::Pattern,
        _ => return Err(format!("banner {line:?}: field {field:?} is not supported (real, integer or pattern)")),
    };
    let symmetry = match symmetry.to_ascii_lowercase().as_str() {
        "general" => MtxSymmetry::General,
        "symmetric" => MtxSymmetry::Symmetric,
        "skew-symmetric" => MtxSymmetry::SkewSymmetric,
        _ => {
            return Err(format!(
                "banner {line:?}: symmetry {symmetry:?} is not supported (general, symmetric or skew-symmetric)"
            ))
        }
    };
    if field == MtxField::Pattern && wanted == "array" {
        return Err(format!("banner {line:?}: an `array` file has no `pattern` field (it stores every value)"));
    }
    if field == MtxField::Pattern && symmetry == MtxSymmetry::SkewSymmetric {
        return Err(format!("banner {line:?}: `pattern skew-symmetric` has no values to negate"));
    }
    Ok((field, symmetry))
}

/// Comment and blank lines, which may follow the banner anywhere.
pub(super) fn skipped(line: &str) -> bool {
    line.starts_with('%') || line.trim().is_empty()
}
