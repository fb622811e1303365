//! The checks across MPI ranks of `sparsegrad::dist` (feature `mpi`), run under `mpirun`.
//!
//! MPI initialises once a process and the test harness runs tests in threads, so this target
//! has a main of its own (`harness = false`): the checks run one after another, every rank
//! agrees on each verdict (an all-reduce), rank 0 prints them, and the process exits non-zero
//! when one failed.
//!
//! `cargo test --features mpi --test mpi_ranks` (outside `mpirun`) starts itself under
//! `mpirun -np 2` and `mpirun -np 3 --oversubscribe`, each run bounded by `timeout`, on shared
//! memory (`--mca btl self,vader`); under `mpirun` it runs the checks. As root, Open MPI needs
//! `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`, which the launcher sets.
//!
//! The checks, in f64 on a random directed graph (so `A` and `Aᵀ` differ):
//! - `mm` forward and backward (the operand's and the values' gradients) equal the one-process
//!   `mm` on the whole matrix, for contiguous row blocks and for `partition_graph`'s parts;
//! - a gradcheck across ranks: central differences of the global loss (summed over ranks), each
//!   entry of `X` and of `A`'s values perturbed on its owner, against the distributed gradients;
//! - bad input is an error, not a panic or a hang: partitions that differ between ranks, a
//!   partition for another number of ranks, an operand of the wrong shape;
//! - data-parallel training (`all_reduce_gradients`) keeps bit-identical weights on every rank
//!   and equals one-process training of the same GCN (f32, to 1e-5).

use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::log_softmax;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use sparsegrad::dist::{all_reduce_gradients, init_process_group, models, DistCsr, ProcessGroup, RowPartition};
use sparsegrad::nn::models::{Gcn, GcnConfig};
use sparsegrad::nn::partition_graph;
use sparsegrad::prelude::*;
use std::process::{Command, ExitCode};

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [-1, 1).
    fn signed(&mut self) -> f64 {
        2.0 * self.unit() - 1.0
    }
}

/// A random directed graph of `n` nodes (each entry with probability `p`, a ring `i -> i + 1` so
/// every row has one), with values in [-1, 1): host CSR arrays.
struct Graph {
    n: usize,
    crow: Vec<usize>,
    col: Vec<usize>,
    values: Vec<f64>,
}

fn graph(n: usize, p: f64, seed: u64) -> Graph {
    let mut rng = Rng(seed);
    let (mut crow, mut col, mut values) = (vec![0], Vec::new(), Vec::new());
    for i in 0..n {
        for j in 0..n {
            if j == (i + 1) % n || rng.unit() < p {
                col.push(j);
                values.push(rng.signed());
            }
        }
        crow.push(col.len());
    }
    Graph { n, crow, col, values }
}

fn ints(v: &[usize], device: &Device) -> Tensor<1, Int> {
    Tensor::from_data(TensorData::new(v.iter().map(|&x| x as i64).collect::<Vec<_>>(), [v.len()]), (device, DType::I64))
}

fn floats<const D: usize>(t: Tensor<D>) -> Vec<f64> {
    t.into_data().convert::<f64>().try_to_vec::<f64>().expect("f64 data")
}

fn dense(v: Vec<f64>, rows: usize, cols: usize, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(v, [rows, cols]), (device, DType::F64))
}

fn vector(v: Vec<f64>, device: &Device) -> Tensor<1> {
    let len = v.len();
    Tensor::from_data(TensorData::new(v, [len]), (device, DType::F64))
}

/// The rows `rows` of a row-major `[_, width]` buffer.
fn take_rows(v: &[f64], rows: &[usize], width: usize) -> Vec<f64> {
    rows.iter().flat_map(|&i| v[i * width..(i + 1) * width].iter().copied()).collect()
}

const WIDTH: usize = 3;

/// The test's loss, `sum(W ⊙ A (A X)²)`: two products (two exchanges at different depths), a
/// nonlinearity between them. `mm` is the one-process or the distributed product; `w` holds the
/// rows of `W` that `mm`'s output has.
fn loss(mm: &dyn Fn(Tensor<2>) -> Tensor<2>, x: Tensor<2>, w: Tensor<2>) -> Tensor<1> {
    let z = mm(x);
    (mm(z.clone() * z) * w).sum()
}

/// The inputs, the same on every rank: the graph, `X` and `W` of the whole problem.
struct Problem {
    g: Graph,
    x: Vec<f64>,
    w: Vec<f64>,
}

fn problem(n: usize, seed: u64) -> Problem {
    let g = graph(n, 0.2, seed);
    let mut rng = Rng(seed ^ 0xABCD);
    let x = (0..n * WIDTH).map(|_| rng.signed()).collect();
    let w = (0..n * WIDTH).map(|_| rng.signed()).collect();
    Problem { g, x, w }
}

/// The one-process loss and its gradients w.r.t. `X` (row-major) and the values (storage order).
fn reference(p: &Problem, device: &Device) -> (f64, Vec<f64>, Vec<f64>) {
    let n = p.g.n;
    let values = vector(p.g.values.clone(), device).require_grad();
    let a = SparseTensor::csr(ints(&p.g.crow, device), ints(&p.g.col, device), values.clone(), [n, n]).unwrap();
    let x = dense(p.x.clone(), n, WIDTH, device).require_grad();
    let l = loss(&|t| sparsegrad::sparse::mm(&a, t), x.clone(), dense(p.w.clone(), n, WIDTH, device));
    let value = floats(l.clone())[0];
    let grads = l.backward();
    (value, floats(x.grad(&grads).unwrap()), floats(values.grad(&grads).unwrap()))
}

/// This rank's block of the problem's matrix.
fn block(group: &ProcessGroup, partition: &RowPartition, p: &Problem, device: &Device) -> sparsegrad::SparseTensor<2> {
    let _ = (group, partition);
    SparseTensor::csr(
        ints(&p.g.crow, device),
        ints(&p.g.col, device),
        vector(p.g.values.clone(), device),
        [p.g.n, p.g.n],
    )
    .unwrap()
}

/// The distributed loss of this rank (its share of the global one) with its gradients w.r.t.
/// its rows of `X` and its block's values.
fn distributed(dist: &DistCsr, p: &Problem, x_local: Vec<f64>, device: &Device) -> (f64, Vec<f64>, Vec<f64>) {
    let rows = dist.rows();
    let values = dist.values().detach().require_grad();
    let a = dist.with_values(values.clone()).unwrap();
    let x = dense(x_local, rows.len(), WIDTH, device).require_grad();
    let w = dense(take_rows(&p.w, rows, WIDTH), rows.len(), WIDTH, device);
    let l = loss(&|t| a.mm(t).unwrap(), x.clone(), w);
    let value = floats(l.clone())[0];
    let grads = l.backward();
    (value, floats(x.grad(&grads).unwrap()), floats(values.grad(&grads).unwrap()))
}

fn max_abs_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "compared buffers");
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

/// The position of every stored entry `(i, j)` of the whole matrix.
fn entry_index(g: &Graph, (i, j): (usize, usize)) -> usize {
    g.crow[i] + g.col[g.crow[i]..g.crow[i + 1]].binary_search(&j).expect("a stored entry")
}

/// `mm` forward and backward against one process: the largest difference over the ranks.
fn matches_one_process(group: &ProcessGroup, partition: &RowPartition, p: &Problem) -> Result<String, String> {
    let device = Device::flex().autodiff();
    let dist =
        DistCsr::from_global(group, partition, &block(group, partition, p, &device)).map_err(|e| e.to_string())?;
    let rows = dist.rows().to_vec();
    let (l_ref, dx_ref, dv_ref) = reference(p, &device);
    let (l, dx, dv) = distributed(&dist, p, take_rows(&p.x, &rows, WIDTH), &device);
    let mut total = [l];
    group.all_reduce_sum(&mut total);
    let dv_expected: Vec<f64> = dist.global_entries().into_iter().map(|e| dv_ref[entry_index(&p.g, e)]).collect();
    let err_loss = (total[0] - l_ref).abs() / l_ref.abs().max(1.0);
    let err = group.all_reduce_max(
        err_loss.max(max_abs_diff(&dx, &take_rows(&dx_ref, &rows, WIDTH))).max(max_abs_diff(&dv, &dv_expected)),
    );
    let halo = group.all_reduce_max(dist.halo_stats().rows_received as f64);
    if err < 1e-12 {
        Ok(format!("loss {l_ref:.6}, largest difference {err:.1e} (largest halo {halo} rows)"))
    } else {
        Err(format!("largest difference {err:.3e} from the one-process loss and gradients"))
    }
}

/// Central differences of the global loss, each input entry perturbed on its owner.
fn gradcheck_across_ranks(group: &ProcessGroup, partition: &RowPartition, p: &Problem) -> Result<String, String> {
    let device = Device::flex().autodiff();
    let dist =
        DistCsr::from_global(group, partition, &block(group, partition, p, &device)).map_err(|e| e.to_string())?;
    let (rank, rows) = (group.rank(), dist.rows().to_vec());
    let x_local = take_rows(&p.x, &rows, WIDTH);
    let (_, dx, dv) = distributed(&dist, p, x_local.clone(), &device);
    let plain = Device::flex();
    let values = floats(dist.values());
    let w = dense(take_rows(&p.w, &rows, WIDTH), rows.len(), WIDTH, &plain);
    // The global loss at perturbed inputs (collective).
    let global = |x: &[f64], v: &[f64]| {
        let a = dist.with_values(vector(v.to_vec(), &plain)).unwrap();
        let l = loss(&|t| a.mm(t).unwrap(), dense(x.to_vec(), rows.len(), WIDTH, &plain), w.clone());
        let mut s = [floats(l)[0]];
        group.all_reduce_sum(&mut s);
        s[0]
    };
    let h = 1e-6;
    let mut worst = 0.0f64;
    let mut checked = 0;
    // Every global entry of X, in order: its owner perturbs it, everyone evaluates.
    for i in 0..p.g.n {
        let owner = partition.owner(i);
        for c in 0..WIDTH {
            let at = partition.local_index(i) * WIDTH + c;
            let shifted = |d: f64| {
                let mut x = x_local.clone();
                if owner == rank {
                    x[at] += d;
                }
                global(&x, &values)
            };
            let numeric = (shifted(h) - shifted(-h)) / (2.0 * h);
            if owner == rank {
                worst = worst.max((numeric - dx[at]).abs() / dx[at].abs().max(1.0));
            }
            checked += 1;
        }
    }
    // Every stored entry of A: the owner of its row perturbs its value.
    let entries = dist.global_entries();
    for i in 0..p.g.n {
        let owner = partition.owner(i);
        for e in p.g.crow[i]..p.g.crow[i + 1] {
            let local = entries.iter().position(|&(r, c)| (r, c) == (i, p.g.col[e]));
            let shifted = |d: f64| {
                let mut v = values.clone();
                if let (true, Some(k)) = (owner == rank, local) {
                    v[k] += d;
                }
                global(&x_local, &v)
            };
            let numeric = (shifted(h) - shifted(-h)) / (2.0 * h);
            if let (true, Some(k)) = (owner == rank, local) {
                worst = worst.max((numeric - dv[k]).abs() / dv[k].abs().max(1.0));
            }
            checked += 1;
        }
    }
    let worst = group.all_reduce_max(worst);
    if worst < 1e-7 {
        Ok(format!("{checked} inputs, largest relative error {worst:.1e}"))
    } else {
        Err(format!("largest relative error {worst:.3e} over {checked} inputs"))
    }
}

/// Bad input gives an error on every rank (a panic would abort the job, a hang time out).
fn bad_input_is_an_error(group: &ProcessGroup, p: &Problem) -> Result<String, String> {
    let device = Device::flex();
    let (n, size) = (p.g.n, group.world_size());
    let a = block(group, &RowPartition::contiguous(n, size).unwrap(), p, &device);
    // Rank 0 moves one row to the last rank: the partitions differ.
    let mut parts: Vec<usize> = (0..n).map(|i| i * size / n).collect();
    if group.rank() == 0 {
        parts[0] = size - 1;
    }
    let differ = DistCsr::from_global(group, &RowPartition::from_parts(parts, size).unwrap(), &a);
    let wrong_count = DistCsr::from_global(group, &RowPartition::contiguous(n, size + 1).unwrap(), &a);
    let dist =
        DistCsr::from_global(group, &RowPartition::contiguous(n, size).unwrap(), &a).map_err(|e| e.to_string())?;
    let wrong_shape = dist.mm(Tensor::<2>::zeros([dist.rows().len() + 1, 2], (&device, DType::F64)));
    let wrong_dtype = dist.mm(Tensor::<2>::zeros([dist.rows().len(), 2], (&device, DType::F32)));
    match (differ, wrong_count, wrong_shape, wrong_dtype) {
        (Err(a), Err(b), Err(_), Err(_)) => Ok(format!("\"{a}\"; \"{b}\"")),
        _ => Err("bad input was accepted".into()),
    }
}

/// One step of the training loss of the test GCN: cross-entropy summed over `train` (local
/// rows) and divided by the global count, so the ranks' losses sum to the one-process mean.
fn ce(logits: Tensor<2>, labels: &[usize], train: &[usize], total: usize, device: &Device) -> Tensor<1> {
    let picked = log_softmax(logits.select(0, ints(train, device)), 1);
    let y: Vec<usize> = train.iter().map(|&i| labels[i]).collect();
    let nll = picked.gather(1, ints(&y, device).reshape([y.len(), 1]));
    nll.sum() * (-1.0 / total as f64)
}

/// Data-parallel training keeps identical weights on every rank and equals one process.
fn data_parallel_weights(group: &ProcessGroup, p: &Problem) -> Result<String, String> {
    const STEPS: usize = 5;
    let (n, classes) = (p.g.n, 3);
    let device = Device::flex().autodiff();
    // A symmetric propagation matrix (the GCN's), the same problem's graph made undirected.
    let mut edges = Vec::new();
    for i in 0..n {
        for &j in &p.g.col[p.g.crow[i]..p.g.crow[i + 1]] {
            edges.push((i, j));
        }
    }
    // f32 (burn's Adam keeps its state in the device's default float type).
    let adj = sparsegrad::nn::gcn_norm(&edges, n, &device).unwrap();
    let labels: Vec<usize> = (0..n).map(|i| (i * 7) % classes).collect();
    let train: Vec<usize> = (0..n).filter(|i| i % 3 != 1).collect();
    let config = GcnConfig::new(WIDTH, classes).with_d_hidden(4).with_dropout(0.0);
    // The same seed on every rank: the same initial weights.
    let init = |d: &Device| -> Gcn {
        d.seed(7);
        config.init(d).unwrap()
    };
    let x_all = dense(p.x.clone(), n, WIDTH, &device).cast(DType::F32);
    // One process.
    let mut model = init(&device);
    let mut optim = AdamConfig::new().init();
    for _ in 0..STEPS {
        let l = ce(model.forward(x_all.clone(), &adj), &labels, &train, train.len(), &device);
        let grads = GradientsParams::from_grads(l.backward(), &model);
        model = optim.step(0.01, model, grads);
    }
    let reference = floats(model.layers[0].weight.val());
    // Distributed, partitioned by partition_graph.
    let parts = partition_graph(&adj, group.world_size(), 1).map_err(|e| e.to_string())?;
    let partition = RowPartition::from_parts(parts, group.world_size()).map_err(|e| e.to_string())?;
    let dist = DistCsr::from_global(group, &partition, &adj).map_err(|e| e.to_string())?;
    let rows = dist.rows().to_vec();
    let local_train: Vec<usize> = (0..rows.len()).filter(|&k| rows[k] % 3 != 1).collect();
    let local_labels: Vec<usize> = rows.iter().map(|&i| labels[i]).collect();
    let x = dense(take_rows(&p.x, &rows, WIDTH), rows.len(), WIDTH, &device).cast(DType::F32);
    let mut model = init(&device);
    let mut optim = AdamConfig::new().init();
    for _ in 0..STEPS {
        let logits = models::gcn_forward(&model, x.clone(), &dist).map_err(|e| e.to_string())?;
        let l = ce(logits, &local_labels, &local_train, train.len(), &device);
        let grads = GradientsParams::from_grads(l.backward(), &model);
        let grads = all_reduce_gradients(group, &model, grads, false).map_err(|e| e.to_string())?;
        model = optim.step(0.01, model, grads);
    }
    let mine = floats(model.layers[0].weight.val());
    let fingerprint = mine.iter().fold(0u64, |h, v| (h ^ v.to_bits()).wrapping_mul(0x0100_0000_01b3));
    let identical = group.all_gather(fingerprint).iter().all(|&f| f == fingerprint);
    let err = group.all_reduce_max(max_abs_diff(&mine, &reference));
    // f32: the ranks sum a row's entries in another order than one process does.
    if identical && err < 1e-5 {
        Ok(format!("{STEPS} Adam steps: weights bit-identical on every rank, {err:.1e} from one process"))
    } else {
        Err(format!("identical on every rank: {identical}; largest difference from one process {err:.3e}"))
    }
}

/// Starts this binary under `mpirun` with 2 and with 3 ranks, each run bounded in time.
fn launch() -> ExitCode {
    let exe = std::env::current_exe().expect("the test binary's path");
    for (ranks, extra) in [("2", &[][..]), ("3", &["--oversubscribe"][..])] {
        println!("mpi_ranks: mpirun -np {ranks} {}", extra.join(" "));
        let status = Command::new("timeout")
            .args(["--kill-after=10", "300", "mpirun", "-np", ranks])
            .args(extra)
            .args(["--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none"])
            .arg(&exe)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .status();
        match status {
            Ok(s) if s.success() => {}
            Ok(s) => {
                eprintln!("mpi_ranks: {ranks} ranks failed ({s})");
                return ExitCode::FAILURE;
            }
            Err(e) => {
                eprintln!("mpi_ranks: could not start timeout/mpirun: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_none() && std::env::var_os("PMI_SIZE").is_none() {
        return launch();
    }
    let group = init_process_group().expect("MPI initialises");
    let p = problem(13, 3);
    let contiguous = RowPartition::contiguous(p.g.n, group.world_size()).unwrap();
    let parts = {
        let device = Device::flex();
        let a = block(&group, &contiguous, &p, &device);
        RowPartition::from_parts(partition_graph(&a, group.world_size(), 5).unwrap(), group.world_size()).unwrap()
    };
    type Check<'a> = (&'a str, Box<dyn Fn() -> Result<String, String> + 'a>);
    let checks: Vec<Check> = vec![
        ("mm matches one process (contiguous rows)", Box::new(|| matches_one_process(&group, &contiguous, &p))),
        ("mm matches one process (partition_graph)", Box::new(|| matches_one_process(&group, &parts, &p))),
        ("gradcheck across ranks (contiguous rows)", Box::new(|| gradcheck_across_ranks(&group, &contiguous, &p))),
        ("gradcheck across ranks (partition_graph)", Box::new(|| gradcheck_across_ranks(&group, &parts, &p))),
        ("bad input is an error on every rank", Box::new(|| bad_input_is_an_error(&group, &p))),
        ("data-parallel weights", Box::new(|| data_parallel_weights(&group, &p))),
    ];
    let mut failed = 0;
    for (name, check) in &checks {
        let outcome = check();
        // Every rank's verdict: a check fails when it failed anywhere.
        let bad = group.all_reduce_max(if outcome.is_err() { 1.0 } else { 0.0 }) > 0.0;
        if group.rank() == 0 || outcome.is_err() {
            match (&outcome, bad) {
                (Ok(m), false) => println!("[{} ranks] ok   {name}: {m}", group.world_size()),
                (Ok(_), true) => println!("[{} ranks] FAIL {name} (on another rank)", group.world_size()),
                (Err(m), _) => println!("[{} ranks] FAIL {name} (rank {}): {m}", group.world_size(), group.rank()),
            }
        }
        failed += usize::from(bad);
    }
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
