//! Training curves as a PNG with plotters (bitmap backend): one panel per quantity (loss,
//! accuracy, ...) side by side, each with axes, ticks, axis labels, a caption and a legend, and
//! a title over the figure. The text is drawn with DejaVu Sans, shipped next to this file
//! (`DejaVuSans.ttf`, licence in `LICENSE-DejaVu.txt`) and registered with plotters' `ab_glyph`
//! renderer, so no system font is needed.

#![allow(dead_code)]

use plotters::prelude::*;
use std::error::Error;
use std::path::Path;
use std::sync::Once;

/// The font every text of the figures uses, under the family name `sans-serif`.
const FONT: &[u8] = include_bytes!("DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";

/// Colours of the series, in order (train, validation, then more); distinct for up to eight
/// series (`sparse_training_mnist` draws seven methods).
pub const COLOURS: [RGBColor; 8] = [
    RGBColor(200, 40, 40),
    RGBColor(40, 70, 200),
    RGBColor(30, 150, 60),
    RGBColor(220, 140, 0),
    RGBColor(130, 50, 170),
    RGBColor(0, 150, 160),
    RGBColor(90, 90, 90),
    RGBColor(230, 90, 170),
];

/// One curve: its legend name and its values, one per epoch (x is the epoch, from 1).
pub struct Series<'a> {
    pub name: &'a str,
    pub values: &'a [f64],
}

/// One panel: its caption, the label of its y axis and its curves (coloured by position).
pub struct Panel<'a> {
    pub caption: &'a str,
    pub y_label: &'a str,
    pub series: Vec<Series<'a>>,
}

fn register_font() -> Result<(), Box<dyn Error>> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT)
            .map_err(|_| "examples/plot/DejaVuSans.ttf is not a font the renderer can read".into());
    });
    result
}

/// `[lo, hi]` of the finite values, widened by 5 % (and to a non-empty range).
fn y_range(panel: &Panel) -> (f64, f64) {
    let finite = panel.series.iter().flat_map(|s| s.values.iter().copied()).filter(|v| v.is_finite());
    let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.05).max(1e-3 * hi.abs().max(1.0));
    (lo - pad, hi + pad)
}

/// The legend goes in the right-hand corner the curves end away from (the upper one for a
/// falling loss, the lower one for a rising accuracy).
fn legend_position(panel: &Panel, lo: f64, hi: f64) -> SeriesLabelPosition {
    let ends: Vec<f64> =
        panel.series.iter().filter_map(|s| s.values.last().copied()).filter(|v| v.is_finite()).collect();
    let mean = ends.iter().sum::<f64>() / ends.len().max(1) as f64;
    if mean > (lo + hi) / 2.0 {
        SeriesLabelPosition::LowerRight
    } else {
        SeriesLabelPosition::UpperRight
    }
}

/// Draws `panels` side by side under `title` into the PNG `path` (`width x height` pixels).
pub fn curves(path: &Path, title: &str, panels: &[Panel], (width, height): (u32, u32)) -> Result<(), Box<dyn Error>> {
    register_font()?;
    let root = BitMapBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(title, (FAMILY, 22))?;
    let areas = root.split_evenly((1, panels.len().max(1)));
    for (area, panel) in areas.iter().zip(panels) {
        let epochs = panel.series.iter().map(|s| s.values.len()).max().unwrap_or(0).max(2);
        let (lo, hi) = y_range(panel);
        let mut chart = ChartBuilder::on(area)
            .caption(panel.caption, (FAMILY, 18))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(62)
            .build_cartesian_2d(1f64..epochs as f64, lo..hi)?;
        chart
            .configure_mesh()
            .x_desc("epoch")
            .x_labels(epochs.min(11))
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_desc(panel.y_label)
            .label_style((FAMILY, 13))
            .axis_desc_style((FAMILY, 15))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()?;
        for (i, s) in panel.series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let points = s.values.iter().enumerate().filter(|(_, v)| v.is_finite()).map(|(e, &v)| (e as f64 + 1.0, v));
            chart
                .draw_series(LineSeries::new(points, colour.stroke_width(2)))?
                .label(s.name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], colour.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .position(legend_position(panel, lo, hi))
            .label_font((FAMILY, 14))
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(160, 160, 160))
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// The per-epoch curves of one training run of the node-classification examples.
#[derive(Default)]
pub struct Curves {
    pub train_loss: Vec<f64>,
    pub val_loss: Vec<f64>,
    pub train_acc: Vec<f64>,
    pub val_acc: Vec<f64>,
}

/// Draws a run's loss and accuracy panels into `path` (1000 x 420) and says where, or why it
/// could not; `run` names the run in that line ("seed 0").
pub fn training_curves(path: &Path, title: &str, curves: &Curves, run: &str) {
    let panels = [
        Panel {
            caption: "Loss",
            y_label: "cross-entropy",
            series: vec![
                Series { name: "train (with dropout, + L2)", values: &curves.train_loss },
                Series { name: "validation", values: &curves.val_loss },
            ],
        },
        Panel {
            caption: "Accuracy",
            y_label: "accuracy",
            series: vec![
                Series { name: "train (with dropout)", values: &curves.train_acc },
                Series { name: "validation", values: &curves.val_acc },
            ],
        },
    ];
    match self::curves(path, title, &panels, (1000, 420)) {
        Ok(()) => println!("curves of {run}: {}", path.display()),
        Err(e) => eprintln!("could not write {}: {e}", path.display()),
    }
}

/// One set of measured points: its legend name and its `(x, y)` pairs, joined in x order.
pub struct Points<'a> {
    pub name: &'a str,
    pub points: Vec<(f64, f64)>,
}

/// Draws each set of points (marked, joined by a line in x order) on one chart into the PNG
/// `path`: for results against a setting (accuracy against sparsity), not against epochs.
pub fn scatter(
    path: &Path,
    title: &str,
    (x_label, y_label): (&str, &str),
    sets: &[Points],
    (width, height): (u32, u32),
) -> Result<(), Box<dyn Error>> {
    register_font()?;
    let finite = |f: fn(&(f64, f64)) -> f64| -> (f64, f64) {
        let all = sets.iter().flat_map(|s| s.points.iter().map(f)).filter(|v| v.is_finite());
        let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
        if !lo.is_finite() {
            return (0.0, 1.0);
        }
        let pad = ((hi - lo) * 0.08).max(1e-3 * hi.abs().max(1.0));
        (lo - pad, hi + pad)
    };
    let ((x_lo, x_hi), (y_lo, y_hi)) = (finite(|p| p.0), finite(|p| p.1));
    let root = BitMapBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FAMILY, 20))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .label_style((FAMILY, 13))
        .axis_desc_style((FAMILY, 15))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    for (i, set) in sets.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let mut points: Vec<(f64, f64)> =
            set.points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        chart.draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))?;
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 5, colour.filled())))?
            .label(set.name)
            .legend(move |(x, y)| Circle::new((x + 10, y), 5, colour.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .label_font((FAMILY, 14))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(160, 160, 160))
        .draw()?;
    root.present()?;
    Ok(())
}
