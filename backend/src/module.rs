//! [`SparseParam`]: a sparse tensor as a field of a burn module. Its index tensors are module
//! state (saved, loaded and moved with the module, never trained: optimizers see only float
//! parameters), its values a float parameter, trainable or frozen as asked. A struct with a
//! `SparseParam` field derives `Module` like any other, and saves and loads through burn's
//! recorders.
//!
//! Records are untrusted (files on disk) and the kernels walk patterns unchecked, so loading
//! checks what it loaded ([`crate::record::load_checked`]): component shapes and dtypes against
//! the tensor's own, then the layout's invariants; a bad record is a `RecordError::Validation`
//! naming the violation. A module loaded as part of a bigger one goes through `map`, which
//! cannot fail, so [`SparseParam::tensor`] checks again before it hands out a tensor (once per
//! index storage: [`PatternMemo`] recognises the tensors it checked).

use crate::error::{Result, SparseError};
use crate::memo::PatternMemo;
use crate::record::load_checked;
use crate::tensor::{Indices, SparseTensor, Trust};
use burn::module::{
    Content, Devices, Module, ModuleDisplay, ModuleDisplayDefault, ModuleMapper, ModuleVisitor, Param, ParamId,
};
use burn::store::{ModuleRecord, RecordError};
use burn::tensor::{Device, Int, Tensor};
use std::fmt;
use std::sync::{Arc, Mutex};

const CONTAINER: &str = "Struct:SparseParam";

/// COO index tensors and whether they are sorted and unique.
type SortedFinding = (Tensor<2, Int>, bool);

/// A sparse tensor held by a burn module: indices as state, values as a parameter.
///
/// ```
/// use burn::module::Module;
/// use burn::tensor::Device;
/// use sparsegrad_backend::{module::SparseParam, SparseTensor};
///
/// #[derive(Module, Debug)]
/// struct Model {
///     adjacency: SparseParam<2>,
/// }
///
/// let device = Device::flex();
/// let a = SparseTensor::csr_from_vecs(vec![0, 1, 2], vec![1, 0], vec![0.5f32, 2.0], [2, 2], &device)?;
/// let model = Model { adjacency: SparseParam::new(a, true) };
/// assert_eq!(model.num_params(), 2); // the stored values; indices are not parameters
/// let record = model.clone().into_record();
/// let loaded = model.load_record(record);
/// assert_eq!(loaded.adjacency.tensor()?.to_dense().into_data().try_to_vec::<f32>().unwrap(), [0.0, 0.5, 2.0, 0.0]);
/// # Ok::<(), sparsegrad_backend::SparseError>(())
/// ```
#[derive(Clone, Debug)]
pub struct SparseParam<const D: usize> {
    /// Layout, shape, dims and block size: what the parameters below are the components of.
    template: SparseTensor<D>,
    /// COO `indices [sparse_dim, nse]`, or the compressed indices `[batch, n + 1]`.
    indices: Param<Tensor<2, Int>>,
    /// The plain indices `[batch, nse]` of a compressed layout; `None` for COO.
    plain: Option<Param<Tensor<2, Int>>>,
    /// The values, folded to `[batch * nse, item]`.
    values: Param<Tensor<2>>,
    memo: PatternMemo<2>,
    /// The COO indices last found sorted and unique or not, and the finding (so a loaded COO
    /// pattern keeps its coalesced state, computed once per index storage).
    sorted: Arc<Mutex<Option<SortedFinding>>>,
}

impl<const D: usize> SparseParam<D> {
    /// `tensor` as a module field: its values a parameter that trains when `trainable` (a frozen
    /// one keeps its values out of gradients and optimizers), its indices state.
    pub fn new(tensor: SparseTensor<D>, trainable: bool) -> Self {
        let values = Param::from_tensor(tensor.values.clone().detach()).set_require_grad(trainable);
        let state = |t: &Tensor<2, Int>| Param::initialized(ParamId::new(), t.clone());
        let (indices, plain) = match &tensor.indices {
            Indices::Coo(i) => (state(i), None),
            Indices::Compressed { compressed, plain, .. } => (state(compressed), Some(state(plain))),
        };
        Self { template: tensor, indices, plain, values, memo: PatternMemo::new(), sorted: Arc::default() }
    }

    /// The sparse tensor the module holds now, its values the parameter's current tensor (so
    /// gradients reach the parameter). Checked: components loaded from a record or replaced
    /// through `map` must make a valid tensor of this one's layout and dims (an error names
    /// the violation); the check runs once per index storage.
    pub fn tensor(&self) -> Result<SparseTensor<D>> {
        let t = &self.template;
        let (indices, plain, values) = (self.indices.val(), self.plain.as_ref().map(Param::val), self.values.val());
        let item = t.values.dims()[1];
        let nse = match &plain {
            Some(p) => p.dims()[1],
            None => indices.dims()[1],
        };
        let expect = |component: &'static str, actual: [usize; 2], expected: [usize; 2]| {
            if actual == expected {
                Ok(())
            } else {
                Err(SparseError::ShapeMismatch { component, expected: expected.to_vec(), actual: actual.to_vec() })
            }
        };
        let batch = t.batch_numel();
        let rows = batch.checked_mul(nse).ok_or_else(|| SparseError::InvalidArgument {
            operation: "SparseParam",
            message: format!("{batch} batches of {nse} entries overflow"),
        })?;
        expect("values", values.dims(), [rows, item])?;
        match (&t.indices, &plain) {
            (Indices::Coo(_), None) => expect("indices", indices.dims(), [t.sparse_dim, nse])?,
            (Indices::Compressed { .. }, Some(p)) => {
                let (n, _) = t.compressed_extents();
                let (cname, pname) = t.layout.index_names();
                expect(cname, indices.dims(), [batch, n + 1])?;
                expect(pname, p.dims(), [batch, nse])?;
                if indices.dtype() != p.dtype() {
                    return Err(SparseError::InvalidArgument {
                        operation: "SparseParam",
                        message: format!(
                            "{cname} are {:?} but {pname} are {:?}; both must have one dtype",
                            indices.dtype(),
                            p.dtype()
                        ),
                    });
                }
            }
            _ => unreachable!("`new` gives a compressed layout its plain indices and COO none"),
        }
        crate::algebra::validate::check_shape(&t.shape[..t.batch_dim + t.sparse_dim], indices.dtype())?;
        let mut candidate = SparseTensor {
            indices: match plain {
                None => Indices::Coo(indices.clone()),
                Some(p) => Indices::Compressed {
                    compressed: indices.clone(),
                    plain: p,
                    transposed: std::sync::Arc::new(sparsegrad_kernels::pattern::TransposeCell::new()),
                },
            },
            values,
            // Set below, from the check.
            coalesced: false,
            trust: Trust::unchecked(),
            ..t.clone()
        };
        let tensors: Vec<&Tensor<2, Int>> = match &candidate.indices {
            Indices::Coo(i) => vec![i],
            Indices::Compressed { compressed, plain, .. } => vec![compressed, plain],
        };
        let key: Vec<usize> = t.shape.iter().copied().chain([t.batch_dim, t.dense_dim, item]).collect();
        let transposed = self.memo.check_once(&tensors, &key, || candidate.check_invariants())?;
        candidate.coalesced = match &candidate.indices {
            Indices::Coo(i) if nse >= 2 => {
                let mut seen = self.sorted.lock().unwrap_or_else(|e| e.into_inner());
                match seen.as_ref() {
                    Some((known, sorted)) if crate::host::same_int_storage(known, i) => *sorted,
                    _ => {
                        let sorted = coo_sorted_unique(&candidate);
                        *seen = Some((i.clone(), sorted));
                        sorted
                    }
                }
            }
            _ => true,
        };
        if let Indices::Compressed { transposed: cell, .. } = &mut candidate.indices {
            *cell = transposed;
        }
        candidate.trust = Trust::Checked;
        Ok(candidate)
    }

    /// The values parameter (for an optimizer's view, freezing, or inspection).
    pub fn values(&self) -> &Param<Tensor<2>> {
        &self.values
    }
}

impl<const D: usize> Module for SparseParam<D> {
    fn collect_devices(&self, devices: Devices) -> Devices {
        let devices = Module::collect_devices(&self.indices, devices);
        let devices = Module::collect_devices(&self.plain, devices);
        Module::collect_devices(&self.values, devices)
    }

    fn fork(self, device: &Device) -> Self {
        let template = self.template.to_device(device);
        Self {
            indices: Module::fork(self.indices, device),
            plain: Module::fork(self.plain, device),
            values: Module::fork(self.values, device),
            template,
            memo: PatternMemo::new(),
            sorted: Arc::default(),
        }
    }

    fn to_device(self, device: &Device) -> Self {
        let template = self.template.to_device(device);
        Self {
            indices: Module::to_device(self.indices, device),
            plain: Module::to_device(self.plain, device),
            values: Module::to_device(self.values, device),
            template,
            memo: PatternMemo::new(),
            sorted: Arc::default(),
        }
    }

    fn train(self) -> Self {
        Self {
            indices: Module::train(self.indices),
            plain: Module::train(self.plain),
            values: Module::train(self.values),
            template: self.template,
            memo: self.memo,
            sorted: self.sorted,
        }
    }

    fn valid(&self) -> Self {
        Self {
            indices: Module::valid(&self.indices),
            plain: Module::valid(&self.plain),
            values: Module::valid(&self.values),
            template: self.template.clone(),
            memo: self.memo.clone(),
            sorted: self.sorted.clone(),
        }
    }

    fn materialize(self) -> Self {
        Self {
            indices: Module::materialize(self.indices),
            plain: Module::materialize(self.plain),
            values: Module::materialize(self.values),
            template: self.template,
            memo: self.memo,
            sorted: self.sorted,
        }
    }

    fn visit<V: ModuleVisitor>(&self, visitor: &mut V) {
        visitor.enter_module("indices", CONTAINER);
        Module::visit(&self.indices, visitor);
        visitor.exit_module("indices", CONTAINER);
        visitor.enter_module("plain", CONTAINER);
        Module::visit(&self.plain, visitor);
        visitor.exit_module("plain", CONTAINER);
        visitor.enter_module("values", CONTAINER);
        Module::visit(&self.values, visitor);
        visitor.exit_module("values", CONTAINER);
    }

    fn map<M: ModuleMapper>(self, mapper: &mut M) -> Self {
        mapper.enter_module("indices", CONTAINER);
        let indices = Module::map(self.indices, mapper);
        mapper.exit_module("indices", CONTAINER);
        mapper.enter_module("plain", CONTAINER);
        let plain = Module::map(self.plain, mapper);
        mapper.exit_module("plain", CONTAINER);
        mapper.enter_module("values", CONTAINER);
        let values = Module::map(self.values, mapper);
        mapper.exit_module("values", CONTAINER);
        Self { indices, plain, values, template: self.template, memo: self.memo, sorted: self.sorted }
    }

    /// Burn's loading, then [`SparseParam::tensor`]'s check: a record whose components do not
    /// make a valid tensor of this layout and these dims is a `RecordError::Validation`.
    fn try_load_record(self, record: ModuleRecord) -> std::result::Result<Self, RecordError> {
        load_checked(self, record, "SparseParam", |m| m.tensor().map(drop))
    }
}

impl<const D: usize> ModuleDisplayDefault for SparseParam<D> {
    fn content(&self, content: Content) -> Option<Content> {
        content
            .set_top_level_type("SparseParam")
            .add_debug_attribute("layout", &self.template.layout)
            .add_debug_attribute("shape", &self.template.shape)
            .add("values", &self.values)
            .optional()
    }

    fn num_params(&self) -> usize {
        Module::num_params(self)
    }
}

impl<const D: usize> ModuleDisplay for SparseParam<D> {}

impl<const D: usize> fmt::Display for SparseParam<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", ModuleDisplay::format(self, Default::default()))
    }
}

/// Whether a COO tensor's entries are in strictly increasing lexicographic order (true for the
/// compressed layouts, whose order is an invariant).
pub(crate) fn coo_sorted_unique<const D: usize>(t: &SparseTensor<D>) -> bool {
    let Indices::Coo(i) = &t.indices else { return true };
    let flat = crate::util::read_i64(i);
    let (flat, nse) = (&flat, t.nnz());
    let key = |k: usize| (0..t.sparse_dim).map(move |d| flat[d * nse + k]);
    (1..nse).all(|k| key(k - 1).lt(key(k)))
}
