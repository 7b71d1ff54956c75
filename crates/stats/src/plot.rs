//! The percentile distribution of each stage as a PNG: latency (log scale) against
//! percentile, with the tail spread out as HdrHistogram's plots do (x = 1/(1-p)).

use std::path::Path;

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

use crate::Stage;

const COLORS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

/// Draws the stages' percentile curves into a PNG file.
pub fn plot_png(stages: &[&Stage], path: &Path, title: &str) -> Result<(), String> {
    // The font ships inside the binary: no system fonts needed.
    let _ = register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular());
    let root = BitMapBackend::new(path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let series: Vec<(String, Vec<(f64, f64)>)> = stages
        .iter()
        .filter(|s| s.count() > 0)
        .map(|s| {
            let pts = [
                0.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 99.999,
            ]
            .iter()
            .map(|&p| {
                (
                    1.0 / (1.0 - p / 100.0),
                    (s.percentile_ns(p) as f64 / 1e3).max(0.001),
                )
            })
            .collect();
            (s.name.clone(), pts)
        })
        .collect();
    let ymax = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.1))
        .fold(1.0, f64::max)
        * 2.0;
    let ymin = series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|x| x.1))
        .fold(f64::MAX, f64::min)
        .min(ymax / 10.0)
        / 2.0;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((1.0f64..100_000.0).log_scale(), (ymin..ymax).log_scale())
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("percentile")
        .y_desc("latency (us)")
        .x_label_formatter(&|x| format!("{:.3}%", 100.0 * (1.0 - 1.0 / x)))
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, (name, pts)) in series.into_iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(pts, c.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}
