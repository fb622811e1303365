"""GraphChallenge-style sparse DNN inference in scipy, the peer of `examples/sparse_dnn.rs`:
the same synthetic RadiX-Net-like network and input batch (splitmix64 from `workloads.py`),
Y <- clip(relu(Y W + b on stored entries), 32) per layer, categories = rows with a stored entry.
Run: python sparse_dnn.py [batch] [layers] [repeat]   (defaults 256, 120, 5: the example's; each
path runs `repeat` times, in turn with the other, and the median time is reported: the upper middle one for an even count)"""
import sys, time
if __name__ == '__main__':   # the arguments before numpy and scipy: `--help` needs only the standard library
    import argparse
    _parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _parser.add_argument('batch', nargs='?', type=int, default=256, help='inputs per batch (default: 256)')
    _parser.add_argument('layers', nargs='?', type=int, default=120, help='layers of the network (default: 120)')
    _parser.add_argument('repeat', nargs='?', type=int, default=5, help='runs of each path (default: 5)')
    ARGS = _parser.parse_args()
import numpy as np, scipy.sparse as sp
sys.path.insert(0, __import__('os').path.dirname(__file__))
import workloads as W

NEURONS, FANOUT, BIAS, CLIP, SEED, WEIGHT = 1024, 32, -0.3, 32.0, 17, 3.0 / 32

def layer(l):
    """Layer l: input neuron i feeds (i + t * stride + offset) mod 1024 for t < 32, stride 1 on
    even layers and 32 on odd ones (two layers connect every input to every output, as a
    radix-32 RadiX-Net does), offset drawn from the seed; weights 3/32 (the challenge's 1/16 lets
    this synthetic net die out within a few layers; 3/32 keeps a subset of rows alive)."""
    stride = 1 if l % 2 == 0 else FANOUT
    offset = int(W.sm(SEED, np.array([l], dtype=np.uint64))[0] % np.uint64(NEURONS))
    rows = np.repeat(np.arange(NEURONS), FANOUT)
    cols = (rows + np.tile(np.arange(FANOUT), NEURONS) * stride + offset) % NEURONS
    return sp.csr_matrix((np.full(rows.size, WEIGHT, np.float32), (rows, cols)), shape=(NEURONS, NEURONS))

def inputs(batch):
    """A binary input batch: entry (r, c) is 1 when draw r * 1024 + c of stream SEED + 1 is below
    row r's density, 0.4 times draw r of stream SEED + 3 (sparse rows die out, dense ones live)."""
    u = W.unit(SEED + 1, np.arange(batch * NEURONS, dtype=np.uint64)).reshape(batch, NEURONS)
    d = 0.4 * W.unit(SEED + 3, np.arange(batch, dtype=np.uint64))[:, None]
    return sp.csr_matrix((u < d).astype(np.float32))

def sparse_path(Y, layers):
    for Wl in layers:
        Z = (Y @ Wl).tocsr()
        Z.data += BIAS
        np.clip(Z.data, 0.0, CLIP, out=Z.data)
        Z.eliminate_zeros()
        Y = Z
    return Y

def dense_path(Y, layers):
    Y = Y.toarray()
    for Wl in layers:
        Z = Y @ Wl           # dense @ sparse (scipy computes (Wᵀ Yᵀ)ᵀ)
        Z = np.asarray(Z)
        Z[Z != 0] += BIAS
        np.clip(Z, 0.0, CLIP, out=Z)
        Y = Z
    return Y

if __name__ == '__main__':
    batch, nl, reps = ARGS.batch, ARGS.layers, ARGS.repeat
    layers = [layer(l) for l in range(nl)]
    Y0 = inputs(batch)
    assert reps >= 1, 'repeat: at least one run'
    edges = batch * NEURONS * FANOUT * nl
    times_s, times_d = [], []
    for _ in range(reps):
        t = time.perf_counter(); Ys = sparse_path(Y0, layers); times_s.append(time.perf_counter() - t)
        t = time.perf_counter(); Yd = dense_path(Y0, layers); times_d.append(time.perf_counter() - t)
    ts, td = sorted(times_s)[reps // 2], sorted(times_d)[reps // 2]
    cats = np.flatnonzero(np.diff(Ys.indptr) > 0)
    catd = np.flatnonzero((Yd != 0).any(axis=1))
    assert np.array_equal(cats, catd), 'the two paths disagree on the categories'
    print(f'scipy sparse-Y: {ts*1e3:9.1f} ms  {edges/ts:.3e} edges/s   categories {cats.size} nnz(Y) {Ys.nnz} sum(Y) {Ys.sum():.4f}')
    print(f'scipy dense-Y:  {td*1e3:9.1f} ms  {edges/td:.3e} edges/s   sum(Y) {Yd.sum():.4f}')
