//! `Display` like torch's `repr`: `tensor(indices=tensor([[0, 1, 1],\n [2, 0, 2]]), values=...,
//! size=(2, 3), nnz=3, layout=sparse_coo)`, following torch's element formatter (integer mode,
//! fixed 4 decimals or scientific), its nesting indentation, its summarisation of tensors over
//! 1000 elements and its suffix wrapping at 80 columns. Names drop torch's `torch.` prefix.

use crate::host::{with_floats, with_ints};
use crate::semi_structured::{SemiKind, SemiStructuredTensor};
use crate::tensor::{Indices, SparseTensor};
use burn::tensor::{DType, Int, Tensor};
use core::fmt;

const LINEWIDTH: usize = 80;
const THRESHOLD: usize = 1000;
const EDGEITEMS: usize = 3;

/// How elements print: integers, or floats in torch's integer / fixed / scientific modes.
enum Style {
    Int,
    FloatInt,
    Fixed,
    Sci,
}

fn sci(v: f64) -> String {
    if !v.is_finite() {
        return nonfinite(v);
    }
    let s = format!("{v:.4e}");
    let (mantissa, exp) = s.split_once('e').expect("e format");
    let exp: i32 = exp.parse().expect("exponent");
    format!("{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

fn nonfinite(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v > 0.0 {
        "inf".into()
    } else {
        "-inf".into()
    }
}

impl Style {
    fn choose(vals: &[f64], is_int: bool) -> Style {
        if is_int {
            return Style::Int;
        }
        let nz: Vec<f64> = vals.iter().copied().filter(|v| v.is_finite() && *v != 0.0).map(f64::abs).collect();
        let int_mode = nz.iter().all(|v| v.fract() == 0.0);
        let (max, min) = nz.iter().fold((0.0f64, f64::INFINITY), |(mx, mn), &v| (mx.max(v), mn.min(v)));
        if nz.is_empty() {
            return if int_mode { Style::FloatInt } else { Style::Fixed };
        }
        if int_mode {
            if max / min > 1000.0 || max > 1e8 {
                Style::Sci
            } else {
                Style::FloatInt
            }
        } else if max / min > 1000.0 || max > 1e8 || min < 1e-4 {
            Style::Sci
        } else {
            Style::Fixed
        }
    }

    fn format(&self, v: f64) -> String {
        match self {
            Style::Int => format!("{}", v as i64),
            _ if !v.is_finite() => nonfinite(v),
            Style::FloatInt => format!("{v:.0}."),
            Style::Fixed => format!("{v:.4}"),
            Style::Sci => sci(v),
        }
    }
}

/// The row-major positions shown: all, or the edge items of every dim when summarising.
fn shown(shape: &[usize], summarize: bool) -> Vec<Vec<usize>> {
    shape
        .iter()
        .map(|&n| {
            if summarize && n > 2 * EDGEITEMS {
                (0..EDGEITEMS).chain(n - EDGEITEMS..n).collect()
            } else {
                (0..n).collect()
            }
        })
        .collect()
}

/// What every level of [`render`]'s recursion shares: the values, their formatter, and whether
/// the dims are summarised.
struct Grid<'a> {
    vals: &'a [f64],
    fmt: &'a dyn Fn(f64) -> String,
    summarize: bool,
}

/// The rows of the sub-tensor at `offset` (its dims `shape`, `strides`, the positions shown
/// `idx`), nested rows indented past `indent`.
fn render(grid: &Grid, shape: &[usize], strides: &[usize], offset: usize, idx: &[Vec<usize>], indent: usize) -> String {
    let Grid { vals, fmt, summarize } = *grid;
    if shape.is_empty() {
        return fmt(vals[offset]);
    }
    let n = shape[0];
    let mut parts: Vec<String> = Vec::new();
    for (k, &i) in idx[0].iter().enumerate() {
        if summarize && n > 2 * EDGEITEMS && k == EDGEITEMS {
            // torch's `_vector_str` pads the ellipsis of a row (`1.,  ..., 1.`), not of a dim.
            parts.push(if shape.len() == 1 { " ...".into() } else { "...".into() });
        }
        parts.push(render(grid, &shape[1..], &strides[1..], offset + i * strides[0], &idx[1..], indent + 1));
    }
    let sep = if shape.len() == 1 { ", ".to_string() } else { format!(",\n{}", " ".repeat(indent + 1)) };
    format!("[{}]", parts.join(&sep))
}

fn size_tuple(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!("({})", shape.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// torch's `_tensor_str`: the text inside `tensor(...)`, nested rows indented past `indent`.
fn tensor_body(vals: &[f64], shape: &[usize], is_int: bool, indent: usize) -> String {
    let numel: usize = shape.iter().product();
    if numel == 0 {
        return format!("[], size={}", size_tuple(shape));
    }
    let summarize = numel > THRESHOLD;
    let idx = shown(shape, summarize);
    let mut strides = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    // The formatter sees only the shown elements, as torch's does.
    let mut seen = Vec::new();
    collect(vals, shape, &strides, 0, &idx, &mut seen);
    let style = Style::choose(&seen, is_int);
    let width = seen.iter().map(|&v| style.format(v).len()).max().unwrap_or(0);
    let fmt = move |v: f64| format!("{:>width$}", style.format(v));
    render(&Grid { vals, fmt: &fmt, summarize }, shape, &strides, 0, &idx, indent)
}

fn collect(vals: &[f64], shape: &[usize], strides: &[usize], offset: usize, idx: &[Vec<usize>], out: &mut Vec<f64>) {
    if shape.is_empty() {
        out.push(vals[offset]);
        return;
    }
    for &i in &idx[0] {
        collect(vals, &shape[1..], &strides[1..], offset + i * strides[0], &idx[1..], out);
    }
}

fn dtype_name(dtype: DType) -> String {
    match dtype {
        DType::F64 => "float64".into(),
        DType::F32 => "float32".into(),
        DType::F16 => "float16".into(),
        DType::BF16 => "bfloat16".into(),
        DType::I64 => "int64".into(),
        DType::I32 => "int32".into(),
        DType::I16 => "int16".into(),
        DType::I8 => "int8".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

fn index_str(t: &Tensor<2, Int>, shape: &[usize], indent: usize) -> String {
    let vals: Vec<f64> = with_ints(t, |s| s.to_i64()).into_iter().map(|v| v as f64).collect();
    let mut body = tensor_body(&vals, shape, true, indent);
    if t.dtype() != DType::I64 {
        body.push_str(&format!(", dtype={}", dtype_name(t.dtype())));
    }
    body
}

/// Appends suffixes as torch's `_add_suffixes`: a new line when `force_newline` (first suffix of
/// COO tensors) or when the line would pass the line width.
fn add_suffixes(mut s: String, suffixes: &[String], indent: usize, mut force_newline: bool) -> String {
    let mut last = s.len() - s.rfind('\n').map_or(0, |i| i) + 1;
    for suffix in suffixes {
        if force_newline || last + suffix.len() + 2 > LINEWIDTH {
            s.push_str(&format!(",\n{}{suffix}", " ".repeat(indent)));
            last = indent + suffix.len();
            force_newline = false;
        } else {
            s.push_str(&format!(", {suffix}"));
            last += suffix.len() + 2;
        }
    }
    s.push(')');
    s
}

impl<const D: usize> fmt::Display for SparseTensor<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const INDENT: usize = "tensor(".len();
        let values: Vec<f64> = with_floats(&self.values, |s| s.to_f64());
        let vshape = self.values_shape();
        let batch = &self.shape[..self.batch_dim];
        let mut suffixes = vec![format!("size={}", size_tuple(&self.shape)), format!("nnz={}", self.nnz())];
        if self.dtype() != DType::F32 {
            suffixes.push(format!("dtype={}", dtype_name(self.dtype())));
        }
        suffixes.push(format!("layout={}", self.layout));
        let pad = " ".repeat(INDENT);
        let (body, force) = match &self.indices {
            Indices::Coo(indices) => {
                let ip = "indices=tensor(";
                let vp = "values=tensor(";
                let i = index_str(indices, &indices.dims(), INDENT + ip.len());
                let v = tensor_body(&values, &vshape, false, INDENT + vp.len());
                (format!("tensor({ip}{i}),\n{pad}{vp}{v})"), true)
            }
            Indices::Compressed { compressed, plain, .. } => {
                let (cname, pname) = self.layout.index_names();
                let (cp, pp, vp) = (format!("{cname}=tensor("), format!("{pname}=tensor("), "values=tensor(");
                let mut cshape = batch.to_vec();
                cshape.push(compressed.dims()[1]);
                let mut pshape = batch.to_vec();
                pshape.push(plain.dims()[1]);
                let c = index_str(compressed, &cshape, INDENT + cp.len());
                let p = index_str(plain, &pshape, INDENT + pp.len());
                let v = tensor_body(&values, &vshape, false, INDENT + vp.len());
                (format!("tensor({cp}{c}),\n{pad}{pp}{p}),\n{pad}{vp}{v})"), false)
            }
        };
        f.write_str(&add_suffixes(body, &suffixes, INDENT, force))
    }
}

/// torch's `repr` of a dense tensor: `tensor(<body>)`, with `dtype=` when not the default
/// (float32, int64).
fn dense_repr(vals: &[f64], shape: &[usize], is_int: bool, dtype: DType) -> String {
    const INDENT: usize = "tensor(".len();
    let body = format!("tensor({}", tensor_body(vals, shape, is_int, INDENT));
    let default = if is_int { DType::I64 } else { DType::F32 };
    let suffixes = if dtype == default { vec![] } else { vec![format!("dtype={}", dtype_name(dtype))] };
    add_suffixes(body, &suffixes, INDENT, false)
}

/// torch's `SparseSemiStructuredTensor(shape=torch.Size([r, c]), transposed=False,
/// values=tensor(...), metadata=tensor(...))`, `torch.` dropped.
impl<K: SemiKind> fmt::Display for SemiStructuredTensor<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let values = dense_repr(&K::host_f64(&self.values), &self.values.dims(), K::INTEGER, self.values.dtype());
        let meta: Vec<f64> = with_ints(&self.metadata, |s| s.to_i64()).into_iter().map(|v| v as f64).collect();
        let metadata = dense_repr(&meta, &self.metadata.dims(), true, self.metadata.dtype());
        let transposed = if self.transposed { "True" } else { "False" };
        write!(f, "SparseSemiStructuredTensor(shape=Size({:?}), transposed={transposed}, values={values}, metadata={metadata})", self.shape())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_styles_follow_torch() {
        assert_eq!(tensor_body(&[3.0, 4.0, 5.0], &[3], false, 0), "[3., 4., 5.]");
        let v = [0.8415, 0.9093, 0.1411, -0.7568, -0.9589, -0.2794];
        assert_eq!(tensor_body(&v, &[6], false, 0), "[ 0.8415,  0.9093,  0.1411, -0.7568, -0.9589, -0.2794]");
        assert_eq!(tensor_body(&[1e-5, 1.0], &[2], false, 0), "[1.0000e-05, 1.0000e+00]");
        assert_eq!(tensor_body(&[0.0, 1.0, 10.0, 2.0], &[2, 2], true, 7), "[[ 0,  1],\n        [10,  2]]");
        assert_eq!(tensor_body(&[], &[2, 0], true, 0), "[], size=(2, 0)");
        assert_eq!(tensor_body(&[], &[0], false, 0), "[], size=(0,)");
    }
}
