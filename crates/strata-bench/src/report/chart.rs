//! Grouped bar charts rendered to PNG in pure Rust: a small RGB rasteriser, text from an 8x8
//! bitmap font, PNG encoding by the `png` crate.

use anyhow::Result;

use super::{median_of, tests_and_engines, Relative, Step};
use crate::io::IoColumns;

type Rgb = [u8; 3];

const WHITE: Rgb = [255, 255, 255];
const BLACK: Rgb = [0, 0, 0];
const GRID: Rgb = [225, 225, 225];
const AXIS: Rgb = [90, 90, 90];
const REFERENCE: Rgb = [200, 40, 40];
/// Series colours: strata first, then the others (eight, for the LevelDB page's seven
/// engines).
const PALETTE: [Rgb; 8] = [
    [46, 125, 200],
    [240, 140, 40],
    [90, 170, 90],
    [150, 100, 190],
    [200, 60, 60],
    [120, 90, 60],
    [230, 120, 190],
    [110, 110, 110],
];

/// An RGB image.
pub struct Canvas {
    pub width: usize,
    pub height: usize,
    pixels: Vec<u8>,
}

impl Canvas {
    pub fn new(width: usize, height: usize) -> Self {
        let mut pixels = vec![0u8; width * height * 3];
        for p in pixels.chunks_mut(3) {
            p.copy_from_slice(&WHITE);
        }
        Canvas { width, height, pixels }
    }

    pub fn pixel(&self, x: usize, y: usize) -> Rgb {
        let i = (y * self.width + x) * 3;
        [self.pixels[i], self.pixels[i + 1], self.pixels[i + 2]]
    }

    fn set(&mut self, x: i64, y: i64, c: Rgb) {
        if x < 0 || y < 0 || x as usize >= self.width || y as usize >= self.height {
            return;
        }
        let i = (y as usize * self.width + x as usize) * 3;
        self.pixels[i..i + 3].copy_from_slice(&c);
    }

    pub fn fill_rect(&mut self, x0: i64, y0: i64, x1: i64, y1: i64, c: Rgb) {
        for y in y0.min(y1)..y0.max(y1) {
            for x in x0.min(x1)..x0.max(x1) {
                self.set(x, y, c);
            }
        }
    }

    fn hline(&mut self, x0: i64, x1: i64, y: i64, c: Rgb, dash: i64) {
        for x in x0..x1 {
            if dash == 0 || (x / dash) % 2 == 0 {
                self.set(x, y, c);
            }
        }
    }

    fn vline(&mut self, x: i64, y0: i64, y1: i64, c: Rgb) {
        for y in y0..y1 {
            self.set(x, y, c);
        }
    }

    /// Draws `text` with its top-left corner at (x, y), each font pixel `scale` pixels wide.
    pub fn text(&mut self, x: i64, y: i64, text: &str, scale: i64, c: Rgb) {
        for (i, ch) in text.chars().enumerate() {
            let code = if ch.is_ascii() { ch as usize } else { b'?' as usize };
            let glyph = font8x8::legacy::BASIC_LEGACY[code];
            let ox = x + i as i64 * 8 * scale;
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..8 {
                    if bits & (1 << col) != 0 {
                        let px = ox + col * scale;
                        let py = y + row as i64 * scale;
                        self.fill_rect(px, py, px + scale, py + scale, c);
                    }
                }
            }
        }
    }

    /// Width in pixels of `text` at `scale`.
    pub fn text_width(text: &str, scale: i64) -> i64 {
        text.chars().count() as i64 * 8 * scale
    }

    pub fn to_png(&self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut out, self.width as u32, self.height as u32);
            enc.set_color(png::ColorType::Rgb);
            enc.set_depth(png::BitDepth::Eight);
            let mut w = enc.write_header()?;
            w.write_image_data(&self.pixels)?;
        }
        Ok(out)
    }
}

/// A grouped bar chart.
pub struct BarChart {
    pub title: String,
    pub y_label: String,
    pub categories: Vec<String>,
    pub series: Vec<(String, Vec<Option<f64>>)>,
    /// A dashed horizontal line at this value (1.0 for relative QPS).
    pub reference: Option<f64>,
    pub log_scale: bool,
    /// Printf-like precision of the value labels.
    pub label_precision: usize,
}

fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let mag = 10f64.powf(v.log10().floor());
    for m in [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0] {
        if m * mag >= v {
            return m * mag;
        }
    }
    10.0 * mag
}

fn human(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}K", v / 1e3)
    } else if v >= 100.0 || v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

impl BarChart {
    pub fn render(&self) -> Canvas {
        let n_cat = self.categories.len().max(1) as i64;
        let n_ser = self.series.len().max(1) as i64;
        let longest = self.categories.iter().map(|c| c.len()).max().unwrap_or(4) as i64;
        let group_w = (longest * 8 + 24).max(n_ser * 34 + 20);
        let (left, right, top, bottom) = (90i64, 30i64, 70i64, 90i64);
        let plot_h = 400i64;
        // Wide enough for the title too.
        let width = (left + right + n_cat * group_w).max(Canvas::text_width(&self.title, 2) + 20);
        let height = top + plot_h + bottom;
        let mut c = Canvas::new(width as usize, height as usize);
        c.text((width - Canvas::text_width(&self.title, 2)) / 2, 16, &self.title, 2, BLACK);
        c.text(10, top - 24, &self.y_label, 1, AXIS);

        let values: Vec<f64> =
            self.series.iter().flat_map(|(_, v)| v.iter().flatten().copied()).collect();
        let max_v = values.iter().copied().fold(self.reference.unwrap_or(0.0), f64::max);
        let min_pos = values.iter().copied().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
        let (lo, hi) = if self.log_scale {
            let lo = if min_pos.is_finite() { 10f64.powf(min_pos.log10().floor()) } else { 1.0 };
            (lo, 10f64.powf(max_v.max(lo * 10.0).log10().ceil()))
        } else {
            (0.0, nice_ceiling(max_v * 1.1))
        };
        let y_of = |v: f64| -> i64 {
            let frac = if self.log_scale {
                (v.max(lo).log10() - lo.log10()) / (hi.log10() - lo.log10())
            } else {
                (v - lo) / (hi - lo)
            };
            top + plot_h - (frac.clamp(0.0, 1.0) * plot_h as f64).round() as i64
        };
        // Grid and y ticks.
        let ticks: Vec<f64> = if self.log_scale {
            let mut t = Vec::new();
            let mut v = lo;
            while v <= hi * 1.0001 {
                t.push(v);
                v *= 10.0;
            }
            t
        } else {
            (0..=5).map(|i| lo + (hi - lo) * f64::from(i) / 5.0).collect()
        };
        for t in ticks {
            let y = y_of(t);
            c.hline(left, width - right, y, GRID, 0);
            let label = human(t);
            c.text(left - 8 - Canvas::text_width(&label, 1), y - 4, &label, 1, AXIS);
        }
        // Bars.
        let bar_w = ((group_w - 20) / n_ser).min(40);
        for (ci, cat) in self.categories.iter().enumerate() {
            let gx = left + ci as i64 * group_w;
            let bars_w = bar_w * n_ser;
            let x0 = gx + (group_w - bars_w) / 2;
            for (si, (_, vals)) in self.series.iter().enumerate() {
                let Some(Some(v)) = vals.get(ci) else { continue };
                let x = x0 + si as i64 * bar_w;
                let y = y_of(*v);
                c.fill_rect(x + 2, y, x + bar_w - 2, top + plot_h, PALETTE[si % PALETTE.len()]);
                let label = match self.label_precision {
                    0 => human(*v),
                    p => format!("{v:.p$}"),
                };
                let lw = Canvas::text_width(&label, 1);
                c.text(x + bar_w / 2 - lw / 2, y - 11, &label, 1, BLACK);
            }
            let lw = Canvas::text_width(cat, 1);
            c.text(gx + group_w / 2 - lw / 2, top + plot_h + 10, cat, 1, BLACK);
        }
        // Axes and reference line.
        c.vline(left, top, top + plot_h + 1, AXIS);
        c.hline(left, width - right, top + plot_h, AXIS, 0);
        if let Some(r) = self.reference {
            let y = y_of(r);
            c.hline(left, width - right, y, REFERENCE, 6);
            c.text(
                width - right - Canvas::text_width("1.00", 1),
                y - 11,
                &format!("{r:.2}"),
                1,
                REFERENCE,
            );
        }
        // Legend.
        let mut lx = left;
        let ly = top + plot_h + 40;
        for (si, (name, _)) in self.series.iter().enumerate() {
            c.fill_rect(lx, ly, lx + 14, ly + 14, PALETTE[si % PALETTE.len()]);
            c.text(lx + 20, ly + 3, name, 1, BLACK);
            lx += 40 + Canvas::text_width(name, 1);
        }
        c
    }

    pub fn to_png(&self) -> Result<Vec<u8>> {
        self.render().to_png()
    }
}

/// Relative QPS (Strata / each other engine) per step, with the 1.0 line.
pub fn relative_chart(rel: &Relative) -> BarChart {
    BarChart {
        title: "Relative QPS: strata / baseline (higher is better for strata)".into(),
        y_label: "relative QPS".into(),
        categories: rel.tests.clone(),
        series: rel
            .baselines()
            .iter()
            .map(|b| (format!("strata / {b}"), rel.tests.iter().map(|t| rel.ratio(t, b)).collect()))
            .collect(),
        reference: Some(1.0),
        log_scale: false,
        label_precision: 2,
    }
}

/// Absolute ops/sec of every engine per step (log scale).
pub fn qps_chart(rel: &Relative) -> BarChart {
    BarChart {
        title: "Throughput per step (ops/sec, log scale)".into(),
        y_label: "ops/sec".into(),
        categories: rel.tests.clone(),
        series: rel
            .engines
            .iter()
            .map(|e| (e.clone(), rel.tests.iter().map(|t| rel.get(t, e)).collect()))
            .collect(),
        reference: None,
        log_scale: true,
        label_precision: 0,
    }
}

/// Whether a step's benchmark reads the DB (point reads or scans): the steps whose IO
/// efficiency and reads per operation mean something.
pub fn is_read_step(st: &Step) -> bool {
    ["read", "seek", "multiread", "fwdrange", "revrange"].iter().any(|p| st.bench.starts_with(p))
}

/// A chart of one figure of the steps' `I/O:` lines.
pub struct IoChartSpec {
    /// The PNG file's name in the report directory.
    pub file: &'static str,
    pub title: &'static str,
    pub y_label: &'static str,
    /// The steps charted.
    pub keep: fn(&Step) -> bool,
    /// The figure.
    pub figure: fn(&IoColumns) -> Option<f64>,
    /// A dashed reference line (io_eff's physical limit, 1.0).
    pub reference: Option<f64>,
}

/// The I/O charts of a report.
pub const IO_CHARTS: [IoChartSpec; 3] = [
    IoChartSpec {
        file: "io_eff.png",
        title: "IO efficiency of read steps: read IOPS / fio's (median)",
        y_label: "io_eff",
        keep: is_read_step,
        figure: |c| c.io_eff,
        reference: Some(1.0),
    },
    IoChartSpec {
        file: "reads_per_op.png",
        title: "Storage reads per operation of read steps (median)",
        y_label: "reads / op",
        keep: is_read_step,
        figure: |c| c.rpo,
        reference: None,
    },
    IoChartSpec {
        file: "write_mbps.png",
        title: "Storage writes, MB/s (median)",
        y_label: "MB/s",
        keep: |_| true,
        figure: |c| c.wmbps,
        reference: None,
    },
];

/// The chart `spec` over `steps`, per step (test name, which carries the suite's mode) and
/// engine: the median over the repetitions, one bar per engine, Strata first. Steps where no
/// engine has the figure are left out; `None` when no step has it.
pub fn io_chart(steps: &[Step], spec: &IoChartSpec) -> Option<BarChart> {
    let (keep, figure) = (spec.keep, spec.figure);
    let value = |st: &Step| if keep(st) { st.result.io.as_ref().and_then(figure) } else { None };
    let (tests, mut engines) = tests_and_engines(steps.iter().filter(|st| value(st).is_some()));
    if tests.is_empty() {
        return None;
    }
    // Strata first, so it takes the first colour as in the other charts.
    engines.sort_by_key(|e| *e != "strata");
    let median = |t: &str, e: &str| -> Option<f64> {
        let v: Vec<f64> =
            steps.iter().filter(|st| st.test == t && st.engine == e).filter_map(value).collect();
        median_of(&v)
    };
    Some(BarChart {
        title: spec.title.into(),
        y_label: spec.y_label.into(),
        categories: tests.iter().map(|t| (*t).to_string()).collect(),
        series: engines
            .iter()
            .map(|e| ((*e).to_string(), tests.iter().map(|t| median(t, e)).collect()))
            .collect(),
        reference: spec.reference,
        log_scale: false,
        label_precision: 2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_bars_and_text() {
        let chart = BarChart {
            title: "t".into(),
            y_label: "y".into(),
            categories: vec!["a".into(), "b".into()],
            series: vec![("s".into(), vec![Some(1.0), Some(2.0)])],
            reference: Some(1.0),
            log_scale: false,
            label_precision: 2,
        };
        let c = chart.render();
        let colored = (0..c.height)
            .flat_map(|y| (0..c.width).map(move |x| (x, y)))
            .filter(|&(x, y)| c.pixel(x, y) == PALETTE[0])
            .count();
        assert!(colored > 1000, "{colored}");
        let png = c.to_png().expect("png");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    }

    fn io_step(engine: &str, test: &str, rep: &str, io_eff: Option<f64>) -> Step {
        let result = super::super::StepResult {
            io: Some(IoColumns { io_eff, rpo: Some(1.0), ..IoColumns::default() }),
            ..Default::default()
        };
        Step {
            engine: engine.into(),
            test: test.into(),
            bench: test.into(),
            log: String::new(),
            du_kb: None,
            usage: None,
            job_id: rep.into(),
            githash: String::new(),
            mode: "iodir".into(),
            result,
        }
    }

    #[test]
    fn io_chart_takes_medians_per_step_and_engine_strata_first() {
        let steps = vec![
            io_step("rocksdb", "readrandom.iodir", "r1", Some(0.5)),
            io_step("strata", "readrandom.iodir", "r1", Some(0.9)),
            io_step("strata", "readrandom.iodir", "r2", Some(0.7)),
            io_step("strata", "readrandom.iodir", "r3", Some(0.8)),
            io_step("rocksdb", "overwrite.iodir", "r1", None),
            io_step("strata", "overwrite.iodir", "r1", None),
        ];
        let spec = |keep: fn(&Step) -> bool, figure: fn(&IoColumns) -> Option<f64>| IoChartSpec {
            file: "x.png",
            title: "t",
            y_label: "y",
            keep,
            figure,
            reference: None,
        };
        let all = |_: &Step| true;
        let c = io_chart(&steps, &spec(all, |c| c.io_eff)).expect("a chart");
        // overwrite has no io_eff on either engine: not a category.
        assert_eq!(c.categories, vec!["readrandom.iodir".to_string()]);
        assert_eq!(
            c.series,
            vec![("strata".to_string(), vec![Some(0.8)]), ("rocksdb".to_string(), vec![Some(0.5)])]
        );
        let rpo = io_chart(&steps, &spec(all, |c| c.rpo)).expect("a chart");
        assert_eq!(rpo.categories.len(), 2);
        let reads = io_chart(&steps, &spec(is_read_step, |c| c.rpo)).expect("a chart");
        assert_eq!(reads.categories, vec!["readrandom.iodir".to_string()]);
        assert!(io_chart(&steps, &spec(all, |c| c.wps)).is_none());
        assert_eq!(IO_CHARTS.map(|s| s.file), ["io_eff.png", "reads_per_op.png", "write_mbps.png"]);
        assert!(c.to_png().is_ok());
    }
}
