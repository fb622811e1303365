//! A tiny line-plot renderer writing PNG files: curves on a white canvas with axes, each series
//! in its own colour, scaled to the panel. Enough to look at training curves without a plotting
//! dependency (the PNG's image data is a zlib stream from flate2).

#![allow(dead_code)]

use std::io::Write;

/// One curve: its points (x is the index) and an RGB colour.
pub struct Series<'a> {
    pub values: &'a [f64],
    pub rgb: [u8; 3],
}

/// A canvas of RGB pixels.
pub struct Canvas {
    w: usize,
    h: usize,
    px: Vec<u8>,
}

impl Canvas {
    pub fn new(w: usize, h: usize) -> Self {
        Self { w, h, px: vec![255; w * h * 3] }
    }

    fn set(&mut self, x: i64, y: i64, rgb: [u8; 3]) {
        if x >= 0 && y >= 0 && (x as usize) < self.w && (y as usize) < self.h {
            let i = (y as usize * self.w + x as usize) * 3;
            self.px[i..i + 3].copy_from_slice(&rgb);
        }
    }

    fn line(&mut self, (x0, y0): (i64, i64), (x1, y1): (i64, i64), rgb: [u8; 3]) {
        let steps = (x1 - x0).abs().max((y1 - y0).abs()).max(1);
        for s in 0..=steps {
            let x = x0 + (x1 - x0) * s / steps;
            let y = y0 + (y1 - y0) * s / steps;
            for (dx, dy) in [(0, 0), (1, 0), (0, 1)] {
                self.set(x + dx, y + dy, rgb);
            }
        }
    }

    /// Draws `series` into the panel `(x, y, w, h)` with a frame, y scaled to [min, max].
    pub fn panel(&mut self, (px, py, pw, ph): (i64, i64, i64, i64), series: &[Series]) {
        let grey = [160, 160, 160];
        self.line((px, py), (px + pw, py), grey);
        self.line((px, py + ph), (px + pw, py + ph), grey);
        self.line((px, py), (px, py + ph), grey);
        self.line((px + pw, py), (px + pw, py + ph), grey);
        let all = series.iter().flat_map(|s| s.values.iter().copied()).filter(|v| v.is_finite());
        let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
        if !lo.is_finite() {
            return;
        }
        let span = (hi - lo).max(1e-12);
        for s in series {
            let n = s.values.len().max(2) - 1;
            let point =
                |i: usize, v: f64| (px + (i as i64 * pw) / n as i64, py + ph - ((v - lo) / span * ph as f64) as i64);
            for i in 1..s.values.len() {
                self.line(point(i - 1, s.values[i - 1]), point(i, s.values[i]), s.rgb);
            }
        }
    }

    /// Writes the canvas as an 8-bit RGB PNG.
    pub fn save_png(&self, path: &std::path::Path) -> std::io::Result<()> {
        let mut raw = Vec::with_capacity((self.w * 3 + 1) * self.h);
        for row in self.px.chunks(self.w * 3) {
            raw.push(0); // filter: none
            raw.extend_from_slice(row);
        }
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&raw)?;
        let idat = z.finish()?;
        let mut ihdr = Vec::new();
        ihdr.extend_from_slice(&(self.w as u32).to_be_bytes());
        ihdr.extend_from_slice(&(self.h as u32).to_be_bytes());
        ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        for (kind, data) in [(b"IHDR", &ihdr), (b"IDAT", &idat), (b"IEND", &Vec::new())] {
            out.extend_from_slice(&(data.len() as u32).to_be_bytes());
            let mut chunk = kind.to_vec();
            chunk.extend_from_slice(data);
            out.extend_from_slice(&chunk);
            out.extend_from_slice(&crc32(&chunk).to_be_bytes());
        }
        std::fs::write(path, out)
    }
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}
