//! The MNIST files shipped in `data/mnist/`: split sizes, the first labels and the class counts
//! everyone quotes, the pixel range, and the tensors handed to a model.

use sparsegrad::nn::Mnist;

#[test]
fn mnist_loads_with_known_labels_counts_and_pixels() {
    let _serial = crate::common_ops::serial();
    let m = Mnist::load(concat!(env!("CARGO_MANIFEST_DIR"), "/data/mnist")).expect("data/mnist");
    assert_eq!((m.train.len(), m.test.len()), (60_000, 10_000));
    assert_eq!((m.train.rows, m.train.cols, m.test.pixels_per_image()), (28, 28, 784));
    assert_eq!(m.train.labels[..5], [5, 0, 4, 1, 9]);
    assert_eq!(m.test.labels[..5], [7, 2, 1, 0, 4]);
    let histogram = |labels: &[u8]| (0..10).map(|d| labels.iter().filter(|&&l| l == d).count()).collect::<Vec<_>>();
    assert_eq!(histogram(&m.train.labels), [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]);
    assert_eq!(histogram(&m.test.labels), [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]);
    assert_eq!((m.train.pixels.iter().min(), m.train.pixels.iter().max()), (Some(&0), Some(&255)));
    // The border of the 28 x 28 frame is background in the first image; its ink is near the middle.
    let first = &m.train.pixels[..784];
    assert!(first[..28].iter().all(|&p| p == 0));
    assert!(first.iter().filter(|&&p| p > 0).count() > 100);

    let device = crate::common_ops::dev();
    let (x, y) = m.test.batch(&[0, 1, 2, 9999], &device);
    assert_eq!(x.dims(), [4, 784]);
    let v: Vec<f32> = x.into_data().try_to_vec().unwrap();
    assert!(v.iter().all(|p| (0.0..=1.0).contains(p)));
    assert!(v.contains(&1.0) && v.contains(&0.0));
    assert_eq!(v[..784].iter().zip(&m.test.pixels[..784]).filter(|(f, &b)| **f != b as f32 / 255.0).count(), 0);
    assert_eq!(y.into_data().iter::<i64>().collect::<Vec<_>>(), vec![7, 2, 1, i64::from(m.test.labels[9999])]);
}
