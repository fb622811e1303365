"""PyTorch and PyG on the GPU bench's workloads, the anchors of `bench/gpu/run.sh`.

On the device given (`--device cuda` on the GPU machine; `cpu` to rehearse the script on a machine
without one), on the workloads of `bench/workloads.py` (the Rust bench rebuilds them bit for bit):
  - spmm: `torch.sparse` CSR @ dense (cuSPARSE on CUDA);
  - sddmm: `torch.sparse.sampled_addmm` on the CSR pattern;
  - mm forward+backward with respect to the values and X (COO; skipped where torch would allocate a
    dense m x k gradient, as the CPU anchors do);
  - the 2:4 linear layer at M = K = N = 4096 in f16: `to_sparse_semi_structured` (cuSPARSELt where
    PyTorch has it, else CUTLASS), beside the dense `F.linear` (CUDA only);
  - one training step of a two-layer PyG `GCNConv` on Cora (forward, backward, Adam), the graph
    read from the Planetoid raw files as `bench/anchor_gcn.py` reads them.
Each row is the median of several runs after a warm-up, every run ended by a device synchronise.

Usage: python3 torch_gpu.py OUT.json [--device cuda|cpu] [--root PLANETOID_ROOT]"""
import argparse
import json
import os
import sys
import time

p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog='\n\n'.join(__doc__.split('\n\n')[1:]))
p.add_argument('out', help='where to write the timings (JSON)')
p.add_argument('--device', default='cuda', help='the torch device (default: cuda)')
p.add_argument('--root', help='the Planetoid root (<root>/Cora/raw/ind.cora.*; default: as anchor_gcn.py finds it)')
ARGS = p.parse_args()

import numpy as np
import torch

# workloads.py and anchor_gcn.py: beside this script in the bundle, one folder up in the checkout.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
import workloads as W

DEV = torch.device(ARGS.device)
CUDA = DEV.type == 'cuda'
if CUDA and not torch.cuda.is_available():
    sys.exit(f'torch_gpu.py: --device {ARGS.device}, but torch finds no CUDA device')


def sync():
    if CUDA:
        torch.cuda.synchronize()


def median_s(f, reps=7):
    f()
    sync()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        sync()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


out = {'device': str(DEV), 'torch': torch.__version__,
       'gpu': torch.cuda.get_device_name(DEV) if CUDA else None,
       'cuda': torch.version.cuda, 'rows': {}}


def rec(op, workload, secs, flops=None, note=''):
    out['rows'][f'{op} {workload}'] = {'op': op, 'workload': workload, 'ms': secs * 1e3 if secs == secs else None,
                                       'gflops': flops / secs / 1e9 if flops and secs == secs else None, 'note': note}
    shown = f'{secs * 1e3:10.3f} ms' if secs == secs else '   skipped'
    print(f'{op:28s} {workload:24s} {shown}' + (f'  {note}' if note else ''), flush=True)


def attempt(op, workload, f, flops=None, reps=7):
    """Times f, or records why it could not run (an op missing on this device or build)."""
    try:
        rec(op, workload, median_s(f, reps), flops)
    except Exception as e:  # noqa: BLE001 - an anchor that cannot run is a row with its reason
        rec(op, workload, float('nan'), None, f'failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}')


rng = np.random.default_rng(0)
for label, (mk, n, xseed) in W.WORKLOADS.items():
    A = mk()
    fl = 2.0 * A.nnz * n
    crow = torch.from_numpy(A.indptr.astype(np.int64))
    col = torch.from_numpy(A.indices.astype(np.int64))
    csr = torch.sparse_csr_tensor(crow, col, torch.from_numpy(A.data), A.shape).to(DEV)
    coo = csr.to_sparse_coo().coalesce()
    X = torch.from_numpy(W.dense(A.shape[1], n, xseed)).to(DEV)
    attempt('spmm_csr', label, lambda: csr @ X, fl)
    L = torch.from_numpy(rng.standard_normal((A.shape[0], n)).astype(np.float32)).to(DEV)
    R = torch.from_numpy(rng.standard_normal((n, A.shape[1])).astype(np.float32)).to(DEV)
    attempt('sddmm', label, lambda: torch.sparse.sampled_addmm(csr, L, R, beta=0.0), fl)

    def fwd_bwd():
        v = coo.values().clone().requires_grad_(True)
        s = torch.sparse_coo_tensor(coo.indices(), v, coo.shape, is_coalesced=True)
        xg = X.clone().requires_grad_(True)
        torch.sparse.mm(s, xg).sum().backward()

    if A.shape[0] * A.shape[1] <= 1e8:
        attempt('mm_fwd_bwd_values_x', label, fwd_bwd, 3 * fl, reps=5)
    else:
        rec('mm_fwd_bwd_values_x', label, float('nan'), None, 'skipped: torch allocates a dense m x k gradient')

# The 2:4 layer, f16, M = K = N = 4096.
m = k = nn_ = 4096
if CUDA:
    import torch.nn.functional as F
    x = torch.randn(m, k, device=DEV, dtype=torch.float16)
    w = torch.randn(nn_, k, device=DEV, dtype=torch.float16)
    # 2:4 by magnitude: the two largest of each group of four along K kept.
    groups = w.abs().reshape(nn_, k // 4, 4)
    keep = torch.zeros_like(groups, dtype=torch.bool).scatter_(2, groups.topk(2, dim=2).indices, True)
    w = (w.reshape(nn_, k // 4, 4) * keep).reshape(nn_, k)
    shape = f'M={m} K={k} N={nn_} F16'  # as our bench names it (burn's DType in Debug)
    attempt('linear_dense', shape, lambda: F.linear(x, w), 2.0 * m * k * nn_)
    try:
        from torch.sparse import to_sparse_semi_structured, SparseSemiStructuredTensor
        SparseSemiStructuredTensor._FORCE_CUTLASS = False
        ws = to_sparse_semi_structured(w)
        attempt('linear_2:4_semi_structured', shape, lambda: F.linear(x, ws), 2.0 * m * k * nn_)
        out['semi_structured_backend'] = type(ws).__name__
    except Exception as e:  # noqa: BLE001
        rec('linear_2:4_semi_structured', shape, float('nan'), None, f'failed: {type(e).__name__}: {e}')
else:
    rec('linear_2:4_semi_structured', f'M={m} K={k} N={nn_}', float('nan'), None, 'skipped: semi-structured sparsity needs CUDA')

# One PyG GCNConv training step on Cora.
try:
    import torch_geometric
    from torch_geometric.nn import GCNConv
    import anchor_gcn
    root = anchor_gcn.find_root(argparse.Namespace(root=ARGS.root), 'cora')
    A, feats, labels, train, _, _ = anchor_gcn.load_pyg(os.path.join(root, 'Cora', 'raw'), 'cora')
except Exception as e:  # noqa: BLE001
    rec('gcn_train_step_pyg', 'cora', float('nan'), None, f'failed: {type(e).__name__}: {e}')
else:
    A = A.tocoo()
    edges = np.vstack([A.row, A.col])
    out['torch_geometric'] = torch_geometric.__version__
    ei = torch.as_tensor(edges, dtype=torch.long, device=DEV)
    xf = torch.as_tensor(np.asarray(feats), dtype=torch.float32, device=DEV)
    y = torch.as_tensor(np.asarray(labels), dtype=torch.long, device=DEV)
    tr = torch.as_tensor(np.asarray(train), dtype=torch.long, device=DEV)
    torch.manual_seed(0)
    c0 = GCNConv(xf.shape[1], 16, cached=True, bias=False).to(DEV)
    c1 = GCNConv(16, int(y.max()) + 1, cached=True, bias=False).to(DEV)
    params = list(c0.parameters()) + list(c1.parameters())
    opt = torch.optim.Adam(params, lr=0.01)

    def step():
        opt.zero_grad()
        h = torch.relu(c0(xf, ei))
        logits = c1(h, ei)[tr]
        w0 = c0.lin.weight
        loss = torch.nn.functional.cross_entropy(logits, y[tr]) + (w0 * w0).sum() * 2.5e-4
        loss.backward()
        opt.step()

    attempt('gcn_train_step_pyg', 'cora', step, None, reps=20)

json.dump(out, open(ARGS.out, 'w'), indent=1)
print(f'wrote {ARGS.out}')
