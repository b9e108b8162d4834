//! SVG charts of a sweep: one per figure and topology, one series per
//! strategy (and k), each labelled with the engine and the parameters.

use anyhow::{Context, Result};
use plotters::prelude::*;
use std::path::{Path, PathBuf};

use crate::report::SweepReport;
use crate::scenario::Topology;
use crate::sweep::Row;

/// A figure of a row, charted against n.
struct Figure {
    file: &'static str,
    title: &'static str,
    y_label: &'static str,
    log_y: bool,
    value: fn(&Row) -> f64,
}

const FIGURES: [Figure; 3] = [
    Figure {
        file: "rounds",
        title: "Rounds to complete",
        y_label: "rounds",
        log_y: true,
        value: |r| r.rounds as f64,
    },
    Figure {
        file: "success",
        title: "Pings delivered",
        y_label: "succeeded / requested",
        log_y: false,
        value: |r| if r.calls == 0 { 1.0 } else { r.succeeded as f64 / r.calls as f64 },
    },
    Figure {
        file: "instructions",
        title: "Caller instructions per ping",
        y_label: "instructions / ping",
        log_y: true,
        value: |r| r.instructions_per_ping,
    },
];

/// Writes every chart into `dir`; returns their paths.
pub fn write_all(report: &SweepReport, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut topologies: Vec<Topology> = report.runs.iter().map(|r| r.topology).collect();
    topologies.dedup();
    let mut written = vec![];
    for topology in topologies {
        let rows: Vec<&Row> = report.runs.iter().filter(|r| r.topology == topology && r.calls > 0).collect();
        for figure in &FIGURES {
            let path = dir.join(format!("{}-{}.svg", figure.file, topology.name()));
            chart(report, topology, &rows, figure, &path)
                .with_context(|| format!("drawing {}", path.display()))?;
            written.push(path);
        }
    }
    Ok(written)
}

/// The series of a chart: strategy (and k) -> points (n, value).
fn series(rows: &[&Row], value: fn(&Row) -> f64) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut out: Vec<(String, Vec<(f64, f64)>)> = vec![];
    for row in rows {
        let label = match row.k {
            Some(k) => format!("{} k={k}", row.strategy.name()),
            None => row.strategy.name().to_string(),
        };
        let point = (row.calls as f64, value(row));
        match out.iter_mut().find(|(l, _)| *l == label) {
            Some((_, points)) => points.push(point),
            None => out.push((label, vec![point])),
        }
    }
    out
}

fn chart(
    report: &SweepReport,
    topology: Topology,
    rows: &[&Row],
    figure: &Figure,
    path: &Path,
) -> Result<()> {
    let Some(first) = rows.first() else { return Ok(()) };
    let series = series(rows, figure.value);
    let points = series.iter().flat_map(|(_, p)| p.iter());
    let (x_max, y_max) = points.clone().fold((1.0f64, 0.0f64), |(x, y), p| (x.max(p.0), y.max(p.1)));
    let y_min = points.fold(f64::MAX, |y, p| y.min(p.1)).max(1e-3);
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let caption = format!("{} vs n ({})", figure.title, topology.name());
    let subtitle = format!(
        "engine: {}; wait: {}; callees: {}; time step: {}",
        report.engine,
        format!("{:?}", first.wait).to_lowercase(),
        first.callees,
        time_step_text(first.time_step)
    );
    let (top, body) = root.split_vertically(40);
    top.draw(&Text::new(subtitle, (60, 12), ("sans-serif", 16)))?;
    let mut builder = ChartBuilder::on(&body);
    builder.caption(caption, ("sans-serif", 22)).margin(12).x_label_area_size(40).y_label_area_size(70);
    let x_range = (1.0..x_max * 1.5).log_scale();
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc("n (pings requested)")
                .y_desc(figure.y_label)
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_label_formatter(&|y| if *y >= 10.0 { format!("{y:.0}") } else { format!("{y:.1}") })
                .draw()?;
            for (i, (label, points)) in series.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                chart
                    .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
                    .label(label.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
                chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()?;
        }};
    }
    if figure.log_y {
        draw!(builder.build_cartesian_2d(x_range, (y_min * 0.8..y_max * 1.5).log_scale())?);
    } else {
        draw!(builder.build_cartesian_2d(x_range, 0.0..(y_max * 1.1).max(1.0))?);
    }
    root.present()?;
    Ok(())
}

fn time_step_text(ns: u64) -> String {
    match ns {
        ns if ns % 1_000_000_000 == 0 => format!("{} s per round", ns / 1_000_000_000),
        ns => format!("{ns} ns per round"),
    }
}
