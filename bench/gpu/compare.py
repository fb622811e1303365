"""The GPU run against the bars of issue 45: our `cube_*` rows (ours.json, from the bench) beside
PyTorch's and PyG's (pytorch.json, from torch_gpu.py), as a Markdown table, with each kernel's
achieved memory bandwidth as a fraction of the GPU's peak.

The bandwidth is the least traffic an op needs (each operand read once, the output written once:
the pattern's indices and values, the dense operands, the output), over its median time; a
fraction near 1 means the kernel is as fast as memory allows, and only less traffic would help.

Usage: python3 compare.py ours.json pytorch.json [--env env.txt]"""
import argparse
import json
import os
import sys

p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                            epilog='\n\n'.join(__doc__.split('\n\n')[1:]))
p.add_argument('ours')
p.add_argument('pytorch')
p.add_argument('--env', help="run.sh's env.txt (the GPU's name for its peak bandwidth)")
ARGS = p.parse_args()

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]
import workloads as W

ours = {(r['op'], r['workload']): r['ms'] for r in json.load(open(ARGS.ours))['rows']}
pt_all = json.load(open(ARGS.pytorch))
pt = {(r['op'], r['workload']): r['ms'] for r in pt_all['rows'].values()}

# Peak memory bandwidth (bytes/s) by the name nvidia-smi or torch gives the GPU (vendor data sheets).
PEAKS = [('H200', 4.8e12), ('H100 NVL', 3.9e12), ('H100 PCIe', 2.0e12), ('H100', 3.35e12), ('A100-SXM4-80GB', 2.04e12),
         ('A100', 1.56e12), ('L40S', 0.864e12), ('L4', 0.3e12)]
gpu = pt_all.get('gpu') or ''
if ARGS.env and os.path.exists(ARGS.env):
    gpu = gpu or open(ARGS.env).read()
peak = next((bw for name, bw in PEAKS if name in gpu), None)

IDX, VAL = 8, 4   # the bench's patterns hold i64 indices and f32 values
shapes = {}
for label, (mk, n, _) in W.WORKLOADS.items():
    a = mk()
    shapes[label] = (a.shape[0], a.shape[1], a.nnz, n)


def spmm_bytes(w):
    m, k, nnz, n = shapes[w]
    return nnz * (IDX + VAL) + (m + 1) * IDX + k * n * VAL + m * n * VAL


def sddmm_bytes(w):
    m, k, nnz, n = shapes[w]
    return nnz * (IDX + VAL) + (m + 1) * IDX + (m + k) * n * VAL + nnz * VAL


def ms(d, key):
    v = d.get(key)
    return v if isinstance(v, (int, float)) else None


rows = []   # (row, ours ms, anchor ms, measured, bar text, passed, bandwidth fraction)


def versus(label, key_ours, key_anchor, bar, traffic=None):
    o, a = ms(ours, key_ours), ms(pt, key_anchor)
    ratio = a / o if o and a else None
    frac = traffic / (o * 1e-3) / peak if traffic and o and peak else None
    rows.append((label, o, a, f'{ratio:.2f}x' if ratio else 'n/a', f'>= {bar}x', ratio is not None and ratio >= bar, frac))


for w in ('powerlaw100k', 'uniform4096_d10'):
    versus(f'spmm CSR {w}', ('cube_spmm_csr', w), ('spmm_csr', w), 1.0, spmm_bytes(w))
for w in W.WORKLOADS:
    versus(f'sddmm {w}', ('cube_sddmm', w), ('sddmm', w), 1.2, sddmm_bytes(w))
fb, fw = ms(ours, ('cube_mm_fwd_bwd_values_x', 'powerlaw100k')), ms(ours, ('cube_spmm_csr', 'powerlaw100k'))
rows.append(('mm fwd+bwd powerlaw100k (our forward as the anchor)', fb, fw, f'{fb / fw:.2f}x' if fb and fw else 'n/a',
             '<= 4x', bool(fb and fw and fb / fw <= 4.0), None))
shape = 'M=4096 K=4096 N=4096 F16'  # burn's DType::F16 in Debug
versus('2:4 linear f16 M=K=N=4096 (cuSPARSELt)', ('cube_linear_2:4', shape), ('linear_2:4_semi_structured', shape), 0.8)
versus('GCN training step, Cora (PyG GCNConv)', ('cube_gcn_train_step', 'cora'), ('gcn_train_step_pyg', 'cora'), 1.5)


def f(v):
    return f'{v:.3f}' if isinstance(v, (int, float)) else 'n/a'


print(f'GPU: {pt_all.get("gpu")}; torch {pt_all.get("torch")} (CUDA {pt_all.get("cuda")}), '
      f'torch_geometric {pt_all.get("torch_geometric")}; peak bandwidth {peak / 1e12 if peak else "unknown"} TB/s\n')
print('| row | ours ms | anchor ms | speed-up | bar | met | our bandwidth / peak |')
print('|---|---|---|---|---|---|---|')
for label, o, a, meas, bar, ok, frac in rows:
    print(f'| {label} | {f(o)} | {f(a)} | {meas} | {bar} | {"yes" if ok else "**no**"} | {f"{frac:.0%}" if frac else "-"} |')
other = sorted(set(ours) - {('cube_mm_fwd_bwd_values_x', 'powerlaw100k')})
print('\nEvery row of ours.json:')
for op, w in other:
    print(f'- {op} {w}: {f(ours[(op, w)])} ms')
print('\nEvery row of pytorch.json:')
for r in pt_all['rows'].values():
    print(f'- {r["op"]} {r["workload"]}: {f(r["ms"])} ms {r.get("note", "")}')
