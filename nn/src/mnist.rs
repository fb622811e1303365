//! The MNIST loader: the four IDX files of `data/mnist/` (gzip-compressed or plain), kept on the
//! host as bytes (47 MB for the training images, a quarter of their f32 form) and turned into
//! burn tensors batch by batch (pixels scaled to `[0, 1]` by `1 / 255`).
//!
//! IDX is big-endian: images are `u32 0x00000803, count, rows, cols` then `count * rows * cols`
//! bytes row-major; labels are `u32 0x00000801, count` then `count` bytes. A wrong magic number,
//! a short or over-long file, a label above 9 or image and label files of different lengths is a
//! [`DataError`] naming the file.
//!
//! The files are read as streams: the header first (its magic checked, the body size computed
//! with checked arithmetic), then exactly the announced body, then a probe for trailing bytes. A
//! wrong file stops at its header, a plain file whose length disagrees with its header is refused
//! before its body is read, and a gzip stream is never inflated much past what its header
//! announces (at most [`TRAILING_PROBE`] bytes more are read to report trailing data): memory and
//! time are bounded by the smaller of what the header announces and what the stream holds, and
//! nothing is allocated up front from the header's counts beyond what a plain file's length backs.

use crate::error::DataError;
use burn::tensor::{Device, Int, Tensor, TensorData};
use flate2::read::GzDecoder;
use std::io::Read;
use std::path::{Path, PathBuf};

const IMAGES_MAGIC: u32 = 0x0000_0803;
const LABELS_MAGIC: u32 = 0x0000_0801;

/// How many bytes past the announced end of a gzip stream are read to report trailing data: the
/// report says "at least" this many rather than inflating the rest of a stream that may be huge.
pub const TRAILING_PROBE: u64 = 1 << 20;

/// Initial capacity for the body of a gzip stream, whose decompressed length is unknown until it
/// is read: the buffer grows with what the stream holds, not with what its header claims.
const GZ_INITIAL_CAPACITY: usize = 1 << 16;

/// One split of MNIST: images as bytes (0 background, 255 ink) and their labels.
#[derive(Debug, Clone)]
pub struct MnistSplit {
    /// `len() * rows * cols` pixels, image after image, each row-major.
    pub pixels: Vec<u8>,
    /// The digit of each image, `0..=9`.
    pub labels: Vec<u8>,
    /// Pixel rows per image (28).
    pub rows: usize,
    /// Pixel columns per image (28).
    pub cols: usize,
}

/// MNIST: 60 000 training and 10 000 test images of 28 x 28 pixels.
#[derive(Debug, Clone)]
pub struct Mnist {
    /// `train-images-idx3-ubyte` and `train-labels-idx1-ubyte`.
    pub train: MnistSplit,
    /// `t10k-images-idx3-ubyte` and `t10k-labels-idx1-ubyte`.
    pub test: MnistSplit,
}

impl Mnist {
    /// Loads the four IDX files from `dir`, each either plain or with a `.gz` suffix.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, DataError> {
        let dir = dir.as_ref();
        Ok(Self { train: MnistSplit::load(dir, "train")?, test: MnistSplit::load(dir, "t10k")? })
    }
}

impl MnistSplit {
    /// Loads `<prefix>-images-idx3-ubyte` and `<prefix>-labels-idx1-ubyte` from `dir`.
    pub fn load(dir: &Path, prefix: &str) -> Result<Self, DataError> {
        let (images_path, mut images, len) = open(dir, &format!("{prefix}-images-idx3-ubyte"))?;
        let (count, rows, cols, pixels) =
            read_images(&mut images, len).map_err(|e| DataError::content(&images_path, None, e))?;
        drop(images);
        let (labels_path, mut labels, len) = open(dir, &format!("{prefix}-labels-idx1-ubyte"))?;
        let labels = read_labels(&mut labels, len).map_err(|e| DataError::content(&labels_path, None, e))?;
        if labels.len() != count {
            return Err(DataError::content(
                &labels_path,
                None,
                format_args!("{} labels for {count} images in {}", labels.len(), images_path.display()),
            ));
        }
        Ok(Self { pixels, labels, rows, cols })
    }

    /// Number of images.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether the split holds no image.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Pixels per image (784).
    pub fn pixels_per_image(&self) -> usize {
        self.rows * self.cols
    }

    /// Every image as a row of `[len, rows * cols]`, f32 in `[0, 1]`.
    pub fn images(&self, device: &Device) -> Tensor<2> {
        let all: Vec<usize> = (0..self.len()).collect();
        self.batch_images(&all, device)
    }

    /// Every label, `[len]`, in the device's default Int dtype (the one `argmax` returns).
    pub fn labels(&self, device: &Device) -> Tensor<1, Int> {
        let all: Vec<usize> = (0..self.len()).collect();
        self.batch_labels(&all, device)
    }

    /// The images at `indices` as `[indices.len(), rows * cols]`, f32 in `[0, 1]`. Panics on an
    /// index out of range, as slice indexing does.
    pub fn batch_images(&self, indices: &[usize], device: &Device) -> Tensor<2> {
        let p = self.pixels_per_image();
        let mut data = Vec::with_capacity(indices.len() * p);
        for &i in indices {
            data.extend(self.pixels[i * p..(i + 1) * p].iter().map(|&b| f32::from(b) / 255.0));
        }
        Tensor::from_data(TensorData::new(data, [indices.len(), p]), device)
    }

    /// The labels at `indices`, `[indices.len()]`.
    pub fn batch_labels(&self, indices: &[usize], device: &Device) -> Tensor<1, Int> {
        let data: Vec<i64> = indices.iter().map(|&i| i64::from(self.labels[i])).collect();
        Tensor::from_data(TensorData::new(data, [indices.len()]), device)
    }

    /// Images and labels at `indices` (a mini-batch).
    pub fn batch(&self, indices: &[usize], device: &Device) -> (Tensor<2>, Tensor<1, Int>) {
        (self.batch_images(indices, device), self.batch_labels(indices, device))
    }
}

/// An opened IDX file: the path read, its byte stream, and its length when known (a plain file).
type Opened = (PathBuf, Box<dyn Read>, Option<u64>);

/// A reader of `dir/name`, or of `dir/name.gz` decompressed.
fn open(dir: &Path, name: &str) -> Result<Opened, DataError> {
    let plain = dir.join(name);
    if plain.exists() {
        let file = std::fs::File::open(&plain).map_err(|e| DataError::io(&plain, None, e))?;
        let len = file.metadata().map_err(|e| DataError::io(&plain, None, e))?.len();
        return Ok((plain, Box::new(file), Some(len)));
    }
    let gz = dir.join(format!("{name}.gz"));
    let file = std::fs::File::open(&gz).map_err(|e| DataError::io(&gz, None, e))?;
    Ok((gz, Box::new(GzDecoder::new(file)), None))
}

/// The `N` big-endian u32 fields of an IDX header, the first being the magic number `expected`:
/// only the `4 * N` header bytes are read, so a wrong file stops there.
fn read_header<const N: usize>(reader: &mut dyn Read, expected: u32, what: &str) -> Result<[usize; N], String> {
    let mut bytes = Vec::with_capacity(4 * N);
    (&mut *reader).take(4 * N as u64).read_to_end(&mut bytes).map_err(|e| format!("reading the header: {e}"))?;
    let mut fields = [0usize; N];
    for (i, slot) in fields.iter_mut().enumerate() {
        let Some(&[a, b, c, d]) = bytes.get(4 * i..4 * i + 4) else {
            return Err(format!("truncated header: {} bytes, header field {i} needs {}", bytes.len(), 4 * i + 4));
        };
        let field = u32::from_be_bytes([a, b, c, d]);
        if i == 0 && field != expected {
            return Err(format!("magic number {field:#010x} is not that of an IDX {what} file ({expected:#010x})"));
        }
        *slot = usize::try_from(field).map_err(|_| format!("header field {i} ({field}) does not fit in memory"))?;
    }
    Ok(fields)
}

/// The `body` bytes after a `header`-byte header, checking that the stream ends right after them.
/// `len` is the whole length when known (a plain file, a slice): a disagreement with the header
/// is reported before anything is read or allocated.
fn read_body(reader: &mut dyn Read, len: Option<u64>, header: usize, body: usize) -> Result<Vec<u8>, String> {
    let expected = header.checked_add(body).ok_or_else(|| format!("{header} + {body} bytes overflow"))?;
    let expected64 = u64::try_from(expected).map_err(|_| format!("{expected} bytes overflow"))?;
    if let Some(len) = len {
        if len < expected64 {
            return Err(format!("truncated: {len} bytes, the header announces {expected}"));
        }
        if len > expected64 {
            return Err(format!("{} bytes after the {expected} the header announces", len - expected64));
        }
    }
    let capacity = if len.is_some() { body } else { body.min(GZ_INITIAL_CAPACITY) };
    let mut data = Vec::new();
    data.try_reserve_exact(capacity).map_err(|e| format!("{body} bytes: {e}"))?;
    (&mut *reader).take(expected64 - header as u64).read_to_end(&mut data).map_err(|e| format!("reading: {e}"))?;
    if data.len() < body {
        return Err(format!("truncated: {} bytes, the header announces {expected}", header + data.len()));
    }
    let extra = std::io::copy(&mut (&mut *reader).take(TRAILING_PROBE), &mut std::io::sink())
        .map_err(|e| format!("reading past the {expected} bytes the header announces: {e}"))?;
    if extra > 0 {
        return Err(match len {
            Some(len) => {
                format!("{} bytes after the {expected} the header announces", len.saturating_sub(expected64).max(extra))
            }
            None if extra == TRAILING_PROBE => {
                format!("at least {extra} bytes after the {expected} the header announces")
            }
            None => format!("{extra} bytes after the {expected} the header announces"),
        });
    }
    Ok(data)
}

/// `(count, rows, cols, pixels)` of an IDX image stream of `len` bytes if known.
fn read_images(reader: &mut dyn Read, len: Option<u64>) -> Result<(usize, usize, usize, Vec<u8>), String> {
    let [_, count, rows, cols] = read_header::<4>(reader, IMAGES_MAGIC, "image")?;
    let body = count
        .checked_mul(rows)
        .and_then(|v| v.checked_mul(cols))
        .ok_or_else(|| format!("{count} x {rows} x {cols} pixels overflow"))?;
    let pixels = read_body(reader, len, 16, body)?;
    Ok((count, rows, cols, pixels))
}

/// The labels of an IDX label stream of `len` bytes if known (each `0..=9`).
fn read_labels(reader: &mut dyn Read, len: Option<u64>) -> Result<Vec<u8>, String> {
    let [_, count] = read_header::<2>(reader, LABELS_MAGIC, "label")?;
    let labels = read_body(reader, len, 8, count)?;
    if let Some((i, l)) = labels.iter().enumerate().find(|&(_, &l)| l > 9) {
        return Err(format!("label {l} of image {i} is not a digit"));
    }
    Ok(labels)
}

/// `(count, rows, cols, pixels)` of an IDX image file.
pub fn parse_images(bytes: &[u8]) -> Result<(usize, usize, usize, Vec<u8>), String> {
    read_images(&mut &bytes[..], Some(bytes.len() as u64))
}

/// The labels of an IDX label file (each `0..=9`).
pub fn parse_labels(bytes: &[u8]) -> Result<Vec<u8>, String> {
    read_labels(&mut &bytes[..], Some(bytes.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idx(magic: u32, dims: &[u32], body: &[u8]) -> Vec<u8> {
        let mut v = magic.to_be_bytes().to_vec();
        for d in dims {
            v.extend(d.to_be_bytes());
        }
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn parses_well_formed_files() {
        let (n, r, c, px) = parse_images(&idx(IMAGES_MAGIC, &[2, 1, 3], &[0, 1, 2, 253, 254, 255])).unwrap();
        assert_eq!((n, r, c, px), (2, 1, 3, vec![0, 1, 2, 253, 254, 255]));
        assert_eq!(parse_labels(&idx(LABELS_MAGIC, &[3], &[7, 0, 9])).unwrap(), vec![7, 0, 9]);
    }

    #[test]
    fn rejects_bad_magic_truncation_and_bad_labels() {
        let e = parse_images(&idx(LABELS_MAGIC, &[1, 1, 1], &[0])).unwrap_err();
        assert!(e.contains("0x00000801") && e.contains("image"), "{e}");
        let e = parse_labels(&idx(IMAGES_MAGIC, &[1], &[0])).unwrap_err();
        assert!(e.contains("label"), "{e}");
        let e = parse_images(&idx(IMAGES_MAGIC, &[2, 2, 2], &[0; 7])).unwrap_err();
        assert!(e.contains("truncated: 23 bytes") && e.contains("24"), "{e}");
        let e = parse_images(&idx(IMAGES_MAGIC, &[1, 2, 2], &[0; 5])).unwrap_err();
        assert!(e.contains("1 bytes after"), "{e}");
        let e = parse_labels(&[0, 0, 8, 1, 0]).unwrap_err();
        assert!(e.contains("truncated header"), "{e}");
        let e = parse_labels(&idx(LABELS_MAGIC, &[2], &[3, 10])).unwrap_err();
        assert!(e.contains("label 10 of image 1"), "{e}");
    }

    #[test]
    fn load_names_the_file_and_checks_counts() {
        let dir = std::env::temp_dir().join(format!("sparsegrad-mnist-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("x-images-idx3-ubyte"), idx(IMAGES_MAGIC, &[2, 1, 2], &[0, 255, 51, 102])).unwrap();
        std::fs::write(dir.join("x-labels-idx1-ubyte"), idx(LABELS_MAGIC, &[2], &[4, 2])).unwrap();
        std::fs::write(dir.join("y-images-idx3-ubyte"), idx(IMAGES_MAGIC, &[2, 1, 2], &[0; 4])).unwrap();
        std::fs::write(dir.join("y-labels-idx1-ubyte"), idx(LABELS_MAGIC, &[1], &[4])).unwrap();
        std::fs::write(dir.join("z-images-idx3-ubyte"), idx(IMAGES_MAGIC, &[2, 1, 2], &[0; 3])).unwrap();
        let x = MnistSplit::load(&dir, "x").unwrap();
        let device = Device::flex();
        let images = x.images(&device).into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(images, vec![0.0, 1.0, 0.2, 0.4]);
        assert_eq!(x.batch_labels(&[1, 0], &device).into_data().iter::<i64>().collect::<Vec<_>>(), vec![2, 4]);
        let e = MnistSplit::load(&dir, "y").unwrap_err().to_string();
        assert!(e.contains("y-labels-idx1-ubyte: 1 labels for 2 images"), "{e}");
        let e = MnistSplit::load(&dir, "z").unwrap_err().to_string();
        assert!(e.contains("z-images-idx3-ubyte: truncated"), "{e}");
        let e = MnistSplit::load(&dir, "missing").unwrap_err().to_string();
        assert!(e.contains("missing-images-idx3-ubyte.gz"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    /// A reader that counts the bytes handed out.
    struct Counting<R> {
        inner: R,
        read: u64,
    }

    impl<R: Read> Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.read += n as u64;
            Ok(n)
        }
    }

    #[test]
    fn stream_reads_only_the_announced_body_and_a_bounded_probe() {
        // An endless stream after a 1-image 2 x 2 body: reading stops after the probe.
        let header = idx(IMAGES_MAGIC, &[1, 2, 2], &[]);
        let mut r = Counting { inner: (&header[..]).chain(std::io::repeat(7)), read: 0 };
        let e = read_images(&mut r, None).unwrap_err();
        assert_eq!(e, format!("at least {TRAILING_PROBE} bytes after the 20 the header announces"));
        assert_eq!(r.read, 20 + TRAILING_PROBE);
        // A header announcing 10^9 images followed by 10 bytes: truncated, 26 bytes read.
        let header = idx(IMAGES_MAGIC, &[1_000_000_000, 28, 28], &[0; 10]);
        let mut r = Counting { inner: &header[..], read: 0 };
        assert_eq!(read_images(&mut r, None).unwrap_err(), "truncated: 26 bytes, the header announces 784000000016");
        assert_eq!(r.read, 26);
        // A wrong file stops at its header: the 8 bytes of a label header read, no more.
        let mut r = Counting { inner: std::io::repeat(0), read: 0 };
        assert_eq!(
            read_labels(&mut r, None).unwrap_err(),
            "magic number 0x00000000 is not that of an IDX label file (0x00000801)"
        );
        assert_eq!(r.read, 8);
        // Sizes that overflow are refused.
        let e = parse_images(&idx(IMAGES_MAGIC, &[u32::MAX, u32::MAX, u32::MAX], &[])).unwrap_err();
        assert!(e.contains("4294967295 x 4294967295 x 4294967295 pixels overflow"), "{e}");
    }

    #[test]
    fn hostile_files_are_refused_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("sparsegrad-mnist-hostile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let labels = idx(LABELS_MAGIC, &[1], &[3]);
        let write = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes).unwrap();
        let load = |prefix: &str| MnistSplit::load(&dir, prefix).unwrap_err().to_string();

        // A gzip file whose header announces 10^9 images but holds 10 bytes of them.
        write("a-images-idx3-ubyte.gz", &gzip(&idx(IMAGES_MAGIC, &[1_000_000_000, 28, 28], &[0; 10])));
        let e = load("a");
        assert!(e.ends_with("a-images-idx3-ubyte.gz: truncated: 26 bytes, the header announces 784000000016"), "{e}");
        // The same as a plain file: refused from its length, before its body is read.
        write("b-images-idx3-ubyte", &idx(IMAGES_MAGIC, &[1_000_000_000, 28, 28], &[0; 10]));
        let e = load("b");
        assert!(e.ends_with("b-images-idx3-ubyte: truncated: 26 bytes, the header announces 784000000016"), "{e}");
        // Trailing bytes: exact for a plain file and a short gzip stream, bounded for a long one.
        write("c-images-idx3-ubyte", &idx(IMAGES_MAGIC, &[1, 2, 2], &[0; 7]));
        let e = load("c");
        assert!(e.ends_with("c-images-idx3-ubyte: 3 bytes after the 20 the header announces"), "{e}");
        write("d-images-idx3-ubyte.gz", &gzip(&idx(IMAGES_MAGIC, &[1, 1, 1], &[0; 6])));
        let e = load("d");
        assert!(e.ends_with("d-images-idx3-ubyte.gz: 5 bytes after the 17 the header announces"), "{e}");
        write("e-images-idx3-ubyte.gz", &gzip(&idx(IMAGES_MAGIC, &[1, 1, 1], &vec![0; 4 << 20])));
        let e = load("e");
        assert!(
            e.ends_with(&format!(
                "e-images-idx3-ubyte.gz: at least {TRAILING_PROBE} bytes after the 17 the header announces"
            )),
            "{e}"
        );
        // Gzip: a wrong magic, a truncated header, a bad label, and a file that is not gzip.
        write("f-images-idx3-ubyte.gz", &gzip(&labels));
        let e = load("f");
        assert!(
            e.ends_with(
                "f-images-idx3-ubyte.gz: magic number 0x00000801 is not that of an IDX image file (0x00000803)"
            ),
            "{e}"
        );
        write("g-images-idx3-ubyte.gz", &gzip(&idx(IMAGES_MAGIC, &[1], &[])));
        let e = load("g");
        assert!(e.ends_with("g-images-idx3-ubyte.gz: truncated header: 8 bytes, header field 2 needs 12"), "{e}");
        write("h-images-idx3-ubyte.gz", &gzip(&idx(IMAGES_MAGIC, &[1, 1, 1], &[9])));
        write("h-labels-idx1-ubyte.gz", &gzip(&idx(LABELS_MAGIC, &[1], &[10])));
        let e = load("h");
        assert!(e.ends_with("h-labels-idx1-ubyte.gz: label 10 of image 0 is not a digit"), "{e}");
        write("i-images-idx3-ubyte.gz", b"not gzip");
        let e = load("i");
        assert!(e.contains("i-images-idx3-ubyte.gz: reading the header: "), "{e}");
        // Well-formed gzip files load.
        write("j-labels-idx1-ubyte.gz", &gzip(&labels));
        write("j-images-idx3-ubyte.gz", &gzip(&idx(IMAGES_MAGIC, &[1, 1, 2], &[5, 250])));
        let j = MnistSplit::load(&dir, "j").unwrap();
        assert_eq!((j.pixels, j.labels, j.rows, j.cols), (vec![5, 250], vec![3], 1, 2));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
