//! Full-batch GCN with the graph partitioned over MPI ranks (`sparsegrad::dist`, feature `mpi`):
//! each rank owns a block of nodes (rows of the propagation matrix `D^-1/2 (A + I) D^-1/2` and of
//! the features), every layer's propagation exchanges exactly the halo rows (`DistCsr::mm`),
//! the weights are replicated and their gradients summed over the ranks before Adam's step
//! (`all_reduce_gradients`), so every rank keeps the same weights.
//!
//! `cargo build --release --features mpi --example gcn_distributed`, then `mpirun -np R
//! target/release/examples/gcn_distributed [--graph cora|sbm] [--nodes N] [--steps S]
//! [--partition metis|contiguous] [--reference]` (`--help`; as root, Open MPI wants
//! `--allow-run-as-root`). The graphs: Cora (the Planetoid split, 16 hidden units, no
//! bias, as `gcn_cora` but without dropout or weight decay, so that the losses can be compared
//! with one process exactly) and the stochastic block model of `sage_sbm` (1,000,000 nodes by
//! default, 16 features, 64 hidden units, 20 classes, 10 % of the nodes training).
//!
//! It prints the partition (rows per rank, the edge cut), the halo bytes per step against the
//! cut, the loss of every step (summed over the ranks), the time per step (the slowest rank's,
//! median over the steps after the first) and each rank's peak memory. With `--reference`, rank
//! 0 then trains the same model on the whole graph in one process (`Gcn::forward`) and prints
//! the largest relative difference between the two runs' losses. docs/distributed.md has the
//! measurements and what they mean.

#[path = "memory/mod.rs"]
mod memory;
#[path = "progress/mod.rs"]
mod progress;
#[path = "sbm/mod.rs"]
mod sbm;

use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::log_softmax;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};
use clap::{Parser, ValueEnum};
use sparsegrad::dist::{
    all_reduce_gradients, init_process_group, models, DistCsr, ProcessGroup, RowBlock, RowPartition,
};
use sparsegrad::nn::models::{Gcn, GcnConfig};
use sparsegrad::nn::{partition_graph, Planetoid};
use sparsegrad::prelude::*;
use std::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum GraphName {
    /// Cora (2708 nodes), from the Planetoid raw files.
    Cora,
    /// `sage_sbm`'s stochastic block model (`--nodes`, `--degree`).
    Sbm,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum PartitionKind {
    /// `partition_graph`: METIS-like, few edges between ranks.
    Metis,
    /// Contiguous blocks of node ids.
    Contiguous,
}

/// Full-batch GCN over MPI ranks.
#[derive(Parser, Debug)]
#[command(long_about = None)]
struct Args {
    /// The graph.
    #[arg(long, value_enum, default_value = "cora")]
    graph: GraphName,
    /// Nodes of the SBM.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(100..))]
    nodes: u64,
    /// Mean neighbours per node of the SBM.
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u64).range(2..))]
    degree: u64,
    /// Training steps (forward, backward, all-reduce, Adam).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..))]
    steps: u64,
    /// How the nodes are shared between the ranks.
    #[arg(long, value_enum, default_value = "metis")]
    partition: PartitionKind,
    /// Rank 0 trains the same model in one process afterwards and compares the losses.
    #[arg(long)]
    reference: bool,
    /// Seed of the graph, the split, the partition and the weights.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

/// The graph every rank builds alike: the undirected adjacency without loops (host CSR, sorted
/// rows), dense features, labels and training nodes.
struct Problem {
    name: String,
    crow: Vec<usize>,
    col: Vec<usize>,
    features: Vec<f32>,
    num_features: usize,
    num_classes: usize,
    hidden: usize,
    labels: Vec<usize>,
    train: Vec<usize>,
}

impl Problem {
    fn nodes(&self) -> usize {
        self.crow.len() - 1
    }

    fn cora() -> Problem {
        let g = Planetoid::new(None, "Cora").unwrap_or_else(|e| {
            eprintln!("cannot load Cora: {e}");
            std::process::exit(2)
        });
        let n = g.nodes;
        let mut rows = vec![Vec::new(); n];
        for &(u, v) in &g.edges {
            if u != v {
                rows[u].push(v);
                rows[v].push(u);
            }
        }
        let (mut crow, mut col) = (vec![0], Vec::new());
        for mut r in rows {
            r.sort_unstable();
            r.dedup();
            col.extend(r);
            crow.push(col.len());
        }
        // Row-normalised bag of words, dense (2708 x 1433).
        let x = g.features_csr(&Device::flex()).to_dense();
        let features = x.into_data().try_to_vec::<f32>().expect("f32 features");
        Problem {
            name: "Cora".into(),
            crow,
            col,
            features,
            num_features: g.num_features,
            num_classes: g.num_classes,
            hidden: 16,
            labels: g.labels,
            train: g.train,
        }
    }

    fn sbm(a: &Args) -> Problem {
        let params = sbm::SbmParams { nodes: a.nodes, degree: a.degree, p_in: 0.6, sigma: 2.0, seed: a.seed };
        let g = sbm::Sbm::build(&params);
        let n = g.nodes();
        // The split of sage_sbm: a shuffled order, its first 10 % trains.
        let mut order: Vec<usize> = (0..n).collect();
        let mut rng = sbm::Rng::new(a.seed ^ 0x0005_9117);
        for i in (1..n).rev() {
            order.swap(i, rng.below(i + 1));
        }
        let mut train = order[..n / 10].to_vec();
        train.sort_unstable();
        Problem {
            name: format!("SBM ({n} nodes)"),
            col: g.col.iter().map(|&j| j as usize).collect(),
            crow: g.crow,
            features: g.features,
            num_features: sbm::FEATURES,
            num_classes: sbm::COMMUNITIES,
            hidden: sbm::HIDDEN,
            labels: g.community,
            train,
        }
    }

    /// `D^-1/2 (A + I) D^-1/2` restricted to `rows` (global columns), host arrays.
    fn gcn_block(&self, rows: &[usize]) -> (Vec<usize>, Vec<usize>, Vec<f32>) {
        let inv = |i: usize| 1.0 / ((self.crow[i + 1] - self.crow[i] + 1) as f64).sqrt();
        let (mut crow, mut col, mut val) = (vec![0], Vec::new(), Vec::new());
        for &i in rows {
            let row = &self.col[self.crow[i]..self.crow[i + 1]];
            let split = row.partition_point(|&j| j < i);
            for &j in row[..split].iter().chain([i].iter()).chain(&row[split..]) {
                col.push(j);
                val.push((inv(i) * inv(j)) as f32);
            }
            crow.push(col.len());
        }
        (crow, col, val)
    }

    fn features_of(&self, rows: &[usize], device: &Device) -> Tensor<2> {
        let d = self.num_features;
        let v: Vec<f32> = rows.iter().flat_map(|&i| self.features[i * d..(i + 1) * d].iter().copied()).collect();
        Tensor::from_data(TensorData::new(v, [rows.len(), d]), device)
    }
}

fn ints(v: &[usize], device: &Device) -> Tensor<1, Int> {
    Tensor::from_data(TensorData::new(v.iter().map(|&x| x as i64).collect::<Vec<_>>(), [v.len()]), (device, DType::I64))
}

/// Cross-entropy summed over the training rows `train` of `logits` and divided by the global
/// number of training nodes: the ranks' losses sum to the one-process mean. A rank without
/// training nodes still returns a loss that depends on the logits (times 0), so that its
/// backward pass runs the exchanges the others wait for.
fn loss(logits: Tensor<2>, labels: &[usize], train: &[usize], total: usize, device: &Device) -> Tensor<1> {
    if train.is_empty() {
        return logits.sum() * 0.0;
    }
    let picked = log_softmax(logits.select(0, ints(train, device)), 1);
    let y: Vec<usize> = train.iter().map(|&i| labels[i]).collect();
    picked.gather(1, ints(&y, device).reshape([y.len(), 1])).sum() * (-1.0 / total as f64)
}

fn model(p: &Problem, device: &Device, seed: u64) -> Gcn {
    device.seed(seed);
    GcnConfig::new(p.num_features, p.num_classes)
        .with_d_hidden(p.hidden)
        .with_dropout(0.0)
        .with_bias(false)
        .init(device)
        .expect("a valid configuration")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The one-process run of the same model (rank 0, after the distributed one): its losses.
fn reference(p: &Problem, args: &Args) -> Vec<f64> {
    let device = Device::flex().autodiff();
    let all: Vec<usize> = (0..p.nodes()).collect();
    let (crow, col, val) = p.gcn_block(&all);
    let to_i64 = |v: Vec<usize>| v.into_iter().map(|x| x as i64).collect::<Vec<_>>();
    let adj = SparseTensor::csr_from_vecs(to_i64(crow), to_i64(col), val, [p.nodes(), p.nodes()], &device)
        .expect("a valid matrix");
    let x = p.features_of(&all, &device);
    let mut gcn = model(p, &device, args.seed);
    let mut optim = AdamConfig::new().init();
    let mut losses = Vec::new();
    let t = Instant::now();
    for _ in 0..args.steps {
        let l = loss(gcn.forward(x.clone(), &adj), &p.labels, &p.train, p.train.len(), &device);
        let grads = GradientsParams::from_grads(l.backward(), &gcn);
        gcn = optim.step(0.01, gcn, grads);
        losses.push(l.into_scalar::<f32>() as f64);
    }
    println!(
        "one process: {} steps in {:.2} s ({:.3} s a step)",
        args.steps,
        t.elapsed().as_secs_f64(),
        t.elapsed().as_secs_f64() / args.steps as f64
    );
    losses
}

fn main() {
    let args = Args::parse();
    let group = init_process_group().unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let (rank, size) = (group.rank(), group.world_size());
    let say = |s: String| {
        if rank == 0 {
            println!("{s}");
        }
    };
    let t = Instant::now();
    let p = match args.graph {
        GraphName::Cora => Problem::cora(),
        GraphName::Sbm => Problem::sbm(&args),
    };
    let n = p.nodes();
    say(format!(
        "{}: {n} nodes, {} adjacency entries, {} features, {} classes, {} training nodes; {size} ranks",
        p.name,
        p.col.len(),
        p.num_features,
        p.num_classes,
        p.train.len()
    ));
    let partition = match args.partition {
        PartitionKind::Contiguous => RowPartition::contiguous(n, size),
        PartitionKind::Metis => {
            let pattern = SparseTensor::csr_from_vecs(
                p.crow.iter().map(|&x| x as i64).collect(),
                p.col.iter().map(|&x| x as i64).collect(),
                vec![1.0f32; p.col.len()],
                [n, n],
                &Device::flex(),
            )
            .expect("a valid adjacency");
            partition_graph(&pattern, size, args.seed).and_then(|parts| RowPartition::from_parts(parts, size))
        }
    }
    .unwrap_or_else(|e| {
        eprintln!("partition: {e}");
        std::process::exit(2)
    });
    let cut = partition.edge_cut(&p.crow, &p.col);
    let device = Device::flex().autodiff();
    let rows = partition.rows(rank).to_vec();
    let (crow, col, val) = p.gcn_block(&rows);
    let values = Tensor::<1>::from_data(TensorData::new(val, [col.len()]), &device);
    let dist = DistCsr::from_rows(&group, &partition, RowBlock { crow, col, values }).unwrap_or_else(|e| {
        eprintln!("rank {rank}: {e}");
        std::process::exit(2)
    });
    let x = p.features_of(&rows, &device);
    let local_train: Vec<usize> = {
        let mut is_train = vec![false; n];
        p.train.iter().for_each(|&i| is_train[i] = true);
        (0..rows.len()).filter(|&k| is_train[rows[k]]).collect()
    };
    let local_labels: Vec<usize> = rows.iter().map(|&i| p.labels[i]).collect();
    let stats = dist.halo_stats();
    let halo_rows = group.all_gather(stats.rows_received as u64);
    let owned = group.all_gather(stats.local_rows as u64);
    let total_halo: u64 = halo_rows.iter().sum();
    // Per step: each layer's forward exchange of its propagated width, and its backward
    // exchange of as many bytes the other way; f32.
    let bytes_per_step = 2 * total_halo as usize * (p.hidden + p.num_classes) * 4;
    say(format!(
        "partition ({:?}): rows per rank {owned:?}; edge cut {cut} of {} entries ({:.1} %); halo rows per rank \
         {halo_rows:?} (sum {total_halo}); setup {:.1} s",
        args.partition,
        p.col.len(),
        100.0 * cut as f64 / p.col.len().max(1) as f64,
        t.elapsed().as_secs_f64()
    ));
    say(format!(
        "halo volume per step (2 layers of width {} and {}, forward + backward, f32): {bytes_per_step} bytes \
         ({:.3} MiB); the cut bounds it by {} bytes",
        p.hidden,
        p.num_classes,
        bytes_per_step as f64 / (1 << 20) as f64,
        2 * cut * (p.hidden + p.num_classes) * 4
    ));
    memory::reset_peak();
    let mut gcn = model(&p, &device, args.seed);
    let mut optim = AdamConfig::new().init();
    let (mut losses, mut times) = (Vec::new(), Vec::new());
    for step in 0..args.steps {
        let t = Instant::now();
        let logits = models::gcn_forward(&gcn, x.clone(), &dist).expect("checked shapes");
        let l = loss(logits, &local_labels, &local_train, p.train.len(), &device);
        let grads = GradientsParams::from_grads(l.backward(), &gcn);
        let grads = all_reduce_gradients(&group, &gcn, grads, false).expect("the same model on every rank");
        gcn = optim.step(0.01, gcn, grads);
        let mut global = [l.into_scalar::<f32>() as f64];
        group.all_reduce_sum(&mut global);
        times.push(group.all_reduce_max(t.elapsed().as_secs_f64()));
        losses.push(global[0]);
        if step < 3 || step + 1 == args.steps || (step + 1) % 10 == 0 {
            say(format!("step {:3}: loss {:.6} ({:.3} s)", step + 1, global[0], times[times.len() - 1]));
        }
    }
    let peaks = group.all_gather(memory::peak_kib().unwrap_or(0));
    let steady = if times.len() > 1 { median(times[1..].to_vec()) } else { times[0] };
    say(format!(
        "time per step (slowest rank, median after the first): {steady:.4} s; peak memory per rank while training \
         (MiB): {:?}",
        peaks.iter().map(|&k| k / 1024).collect::<Vec<_>>()
    ));
    if args.reference && rank == 0 {
        let one = reference(&p, &args);
        let worst =
            losses.iter().zip(&one).map(|(a, b)| (a - b).abs() / b.abs().max(f64::MIN_POSITIVE)).fold(0.0, f64::max);
        println!(
            "losses over {} steps against one process: largest relative difference {worst:.2e} ({})",
            args.steps,
            if worst <= 1e-5 { "within 1e-5" } else { "ABOVE 1e-5" }
        );
        if worst > 1e-5 {
            std::process::exit(1);
        }
    }
    finish(group);
}

/// Waits for every rank before MPI is finalised (rank 0 may still be running the reference).
fn finish(group: ProcessGroup) {
    group.barrier();
}
