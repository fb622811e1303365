//! The MNIST loader: the four IDX files of `data/mnist/` (gzip-compressed or plain), kept on the
//! host as bytes (47 MB for the training images, a quarter of their f32 form) and turned into
//! burn tensors batch by batch (pixels scaled to `[0, 1]` by `1 / 255`).
//!
//! IDX is big-endian: images are `u32 0x00000803, count, rows, cols` then `count * rows * cols`
//! bytes row-major; labels are `u32 0x00000801, count` then `count` bytes. A wrong magic number,
//! a short or over-long file, a label above 9 or image and label files of different lengths is a
//! [`DataError`] naming the file.

use crate::planetoid::DataError;
use burn::tensor::{Device, Int, Tensor, TensorData};
use flate2::read::GzDecoder;
use std::io::Read;
use std::path::{Path, PathBuf};

const IMAGES_MAGIC: u32 = 0x0000_0803;
const LABELS_MAGIC: u32 = 0x0000_0801;

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
        let (images_path, images) = read_file(dir, &format!("{prefix}-images-idx3-ubyte"))?;
        let (count, rows, cols, pixels) = parse_images(&images).map_err(|e| DataError(format!("{}: {e}", images_path.display())))?;
        drop(images);
        let (labels_path, labels) = read_file(dir, &format!("{prefix}-labels-idx1-ubyte"))?;
        let labels = parse_labels(&labels).map_err(|e| DataError(format!("{}: {e}", labels_path.display())))?;
        if labels.len() != count {
            return Err(DataError(format!("{}: {} labels for {count} images in {}", labels_path.display(), labels.len(), images_path.display())));
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

/// The bytes of `dir/name`, or of `dir/name.gz` decompressed, with the path read.
fn read_file(dir: &Path, name: &str) -> Result<(PathBuf, Vec<u8>), DataError> {
    let plain = dir.join(name);
    let mut bytes = Vec::new();
    if plain.exists() {
        std::fs::File::open(&plain).and_then(|mut f| f.read_to_end(&mut bytes)).map_err(|e| DataError(format!("{}: {e}", plain.display())))?;
        return Ok((plain, bytes));
    }
    let gz = dir.join(format!("{name}.gz"));
    let file = std::fs::File::open(&gz).map_err(|e| DataError(format!("{} (or {}): {e}", gz.display(), plain.display())))?;
    GzDecoder::new(file).read_to_end(&mut bytes).map_err(|e| DataError(format!("{}: {e}", gz.display())))?;
    Ok((gz, bytes))
}

/// The `i`-th big-endian u32 of the header.
fn header_u32(bytes: &[u8], i: usize) -> Result<usize, String> {
    let field = bytes.get(4 * i..4 * i + 4).ok_or_else(|| format!("truncated header: {} bytes, header field {i} needs {}", bytes.len(), 4 * i + 4))?;
    Ok(u32::from_be_bytes(field.try_into().expect("4 bytes")) as usize)
}

fn check_magic(bytes: &[u8], expected: u32, what: &str) -> Result<(), String> {
    let magic = header_u32(bytes, 0)? as u32;
    if magic != expected {
        return Err(format!("magic number {magic:#010x} is not that of an IDX {what} file ({expected:#010x})"));
    }
    Ok(())
}

fn check_length(bytes: &[u8], header: usize, body: usize) -> Result<(), String> {
    let expected = header + body;
    match bytes.len() {
        n if n < expected => Err(format!("truncated: {n} bytes, the header announces {expected}")),
        n if n > expected => Err(format!("{} bytes after the {expected} the header announces", n - expected)),
        _ => Ok(()),
    }
}

/// `(count, rows, cols, pixels)` of an IDX image file.
pub fn parse_images(bytes: &[u8]) -> Result<(usize, usize, usize, Vec<u8>), String> {
    check_magic(bytes, IMAGES_MAGIC, "image")?;
    let (count, rows, cols) = (header_u32(bytes, 1)?, header_u32(bytes, 2)?, header_u32(bytes, 3)?);
    let body = count.checked_mul(rows).and_then(|v| v.checked_mul(cols)).ok_or_else(|| format!("{count} x {rows} x {cols} pixels overflow"))?;
    check_length(bytes, 16, body)?;
    Ok((count, rows, cols, bytes[16..].to_vec()))
}

/// The labels of an IDX label file (each `0..=9`).
pub fn parse_labels(bytes: &[u8]) -> Result<Vec<u8>, String> {
    check_magic(bytes, LABELS_MAGIC, "label")?;
    let count = header_u32(bytes, 1)?;
    check_length(bytes, 8, count)?;
    let labels = bytes[8..].to_vec();
    if let Some(i) = labels.iter().position(|&l| l > 9) {
        return Err(format!("label {} of image {i} is not a digit", labels[i]));
    }
    Ok(labels)
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
}
