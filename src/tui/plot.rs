//! SVG plots of a capture (for `analyze --plot DIR`): one PSN-vs-time chart per flow with requests (its
//! throughput over its life under it), gaps, retransmissions and NAKs marked, and the throughput of the
//! busiest flows over the capture. Plain SVG written by hand: no dependency, opens in any browser.
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::data::{self, FlowSeries, Index, PointKind};
use crate::analysis::flow::Role;
use crate::report::Report;
use crate::report::format::{bit_rate, duration, round_step};
use crate::report::rank::trouble;

/// Most flows with a PSN chart (most trouble first).
pub const MAX_FLOW_PLOTS: usize = 32;

/// Most flows on the throughput plot (most bytes first).
pub const MAX_THROUGHPUT_LINES: usize = 8;

const W: f64 = 960.0;
const PSN_H: f64 = 420.0;
const THR_H: f64 = 160.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 45.0;
const TOP: f64 = 40.0;
const GAP: f64 = 50.0;

const COLOURS: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// Why the plots could not be written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The directory or a plot at `path` could not be written.
    #[error("{}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Data(#[from] data::DataError),
}

fn writing(path: &Path) -> impl FnOnce(std::io::Error) -> PlotError {
    let path = path.to_path_buf();
    |source| PlotError::Write { path, source }
}

/// Writes `throughput.svg` and `flow-ID.svg` for the flows with requests; returns the files written.
pub fn write(index: &Index, report: &Report, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(writing(dir))?;
    let mut written = Vec::new();
    let mut save = |name: String, svg: String| -> Result<(), PlotError> {
        let p = dir.join(name);
        std::fs::write(&p, svg).map_err(writing(&p))?;
        written.push(p);
        Ok(())
    };
    save("throughput.svg".into(), throughput_svg(index, report)?)?;
    let mut flows: Vec<usize> = (0..report.flows.len())
        .filter(|&i| matches!(report.flows[i].role, Role::Requester | Role::Both))
        .collect();
    flows.sort_by_key(|&i| std::cmp::Reverse(trouble(&report.flows[i])));
    flows.truncate(MAX_FLOW_PLOTS);
    let ids: Vec<u64> = flows.iter().map(|&i| report.flows[i].id).collect();
    // One read of the plotted flows' frames for all their charts.
    for s in data::series_of(index, report, &ids)? {
        save(format!("flow-{}.svg", s.flow), flow_svg(report, &s))?;
    }
    Ok(written)
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A linear map from data to pixels.
#[derive(Clone, Copy)]
struct Scale {
    d0: f64,
    d1: f64,
    p0: f64,
    p1: f64,
}

impl Scale {
    fn new(d0: f64, d1: f64, p0: f64, p1: f64) -> Scale {
        let d1 = if d1 > d0 { d1 } else { d0 + 1.0 };
        Scale { d0, d1, p0, p1 }
    }

    fn at(&self, v: f64) -> f64 {
        self.p0 + (v - self.d0) / (self.d1 - self.d0) * (self.p1 - self.p0)
    }
}

/// Ticks at the multiples of a round step (1, 2 or 5 × 10^k) within `d0..=d1`, three to seven, and the
/// decimals the step needs.
fn ticks(d0: f64, d1: f64) -> (Vec<f64>, usize) {
    let step = round_step((d1 - d0) / 6.0);
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    let first = (d0 / step).ceil() as i64;
    let ticks = (first..)
        .map(|k| k as f64 * step)
        .take_while(|&v| v <= d1 + step * 1e-9)
        .take(12)
        .collect();
    (ticks, decimals)
}

/// Axes box with tick labels at round values.
fn axes(
    out: &mut String,
    x: Scale,
    y: Scale,
    x_label: &str,
    y_label: &str,
    fmt_y: fn(f64) -> String,
) {
    let (l, r, t, b) = (x.p0, x.p1, y.p1, y.p0);
    let _ = writeln!(
        out,
        r##"<rect x="{l:.1}" y="{t:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#888"/>"##,
        r - l,
        b - t
    );
    let (xs, decimals) = ticks(x.d0, x.d1);
    for xv in xs {
        let px = x.at(xv);
        let _ = writeln!(
            out,
            r##"<line x1="{px:.1}" y1="{t:.1}" x2="{px:.1}" y2="{b:.1}" stroke="#eee"/><text class="tick" x="{px:.1}" y="{:.1}" font-size="11" text-anchor="middle">{xv:.decimals$}</text>"##,
            b + 14.0
        );
    }
    for yv in ticks(y.d0, y.d1).0 {
        let py = y.at(yv);
        let _ = writeln!(
            out,
            r##"<line x1="{l:.1}" y1="{py:.1}" x2="{r:.1}" y2="{py:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            l - 4.0,
            py + 4.0,
            fmt_y(yv)
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
        (l + r) / 2.0,
        b + 30.0,
        esc(x_label)
    );
    let _ = writeln!(
        out,
        r#"<text x="14" y="{:.1}" font-size="12" transform="rotate(-90 14 {:.1})" text-anchor="middle">{}</text>"#,
        (t + b) / 2.0,
        (t + b) / 2.0,
        esc(y_label)
    );
}

fn header(out: &mut String, h: f64, title: &str) {
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="24" font-size="15" font-weight="bold">{}</text>"#,
        esc(title)
    );
}

fn bps(v: f64) -> String {
    bit_rate(v)
}

/// PSN vs time for one flow, and its throughput over its life.
pub fn flow_svg(report: &Report, s: &FlowSeries) -> String {
    let Some(f) = report.flow(s.flow) else {
        return String::new();
    };
    let h = TOP + PSN_H + GAP + THR_H + 40.0;
    let mut out = String::new();
    header(
        &mut out,
        h,
        &format!(
            "#{} {} → {} QP 0x{:06x}: {} gaps ({} missing), {} retransmitted, {} NAKs",
            f.id,
            f.src,
            f.dst,
            f.dest_qp,
            f.psn.gap_events,
            f.psn.missing,
            f.psn.retransmitted,
            s.points.iter().filter(|p| p.kind == PointKind::Nak).count()
        ),
    );
    let (t0, t1, p0, p1) = s.bounds().unwrap_or((0.0, 1.0, 0.0, 1.0));
    let x = Scale::new(t0, t1, LEFT, W - RIGHT);
    let y = Scale::new(p0 - 0.5, p1 + 0.5, TOP + PSN_H, TOP);
    axes(
        &mut out,
        x,
        y,
        "seconds since the first frame",
        "PSN",
        |v| format!("{v:.0}"),
    );
    for p in &s.points {
        let (cx, cy) = (x.at(p.t), y.at(p.psn as f64));
        let frame = p.frame;
        let _ = match p.kind {
            PointKind::Request => writeln!(
                out,
                r##"<circle class="req" cx="{cx:.1}" cy="{cy:.1}" r="2" fill="#1f77b4"><title>frame {frame}</title></circle>"##
            ),
            PointKind::Gap => writeln!(
                out,
                r##"<rect class="gap" x="{:.1}" y="{:.1}" width="8" height="8" fill="#e6b000"><title>gap: frame {frame}</title></rect>"##,
                cx - 4.0,
                cy - 4.0
            ),
            PointKind::Retransmission => writeln!(
                out,
                r##"<circle class="retx" cx="{cx:.1}" cy="{cy:.1}" r="3.5" fill="none" stroke="#d62728" stroke-width="1.5"><title>retransmission: frame {frame}</title></circle>"##
            ),
            PointKind::Nak => writeln!(
                out,
                r##"<path class="nak" d="M{cx:.1} {:.1} l5 9 h-10 z" fill="#9467bd"><title>NAK: frame {frame}</title></path>"##,
                cy - 5.0
            ),
        };
    }
    // Legend.
    let lx = W - RIGHT - 170.0;
    let _ = writeln!(
        out,
        r##"<g font-size="12"><rect x="{lx}" y="{}" width="165" height="70" fill="white" stroke="#ccc"/>
<circle cx="{}" cy="{}" r="2" fill="#1f77b4"/><text x="{}" y="{}">requests</text>
<rect x="{}" y="{}" width="8" height="8" fill="#e6b000"/><text x="{}" y="{}">gaps</text>
<circle cx="{}" cy="{}" r="3.5" fill="none" stroke="#d62728"/><text x="{}" y="{}">retransmissions</text>
<path d="M{} {} l5 9 h-10 z" fill="#9467bd"/><text x="{}" y="{}">NAKs</text></g>"##,
        TOP + 4.0,
        lx + 12.0,
        TOP + 16.0,
        lx + 24.0,
        TOP + 20.0,
        lx + 8.0,
        TOP + 28.0,
        lx + 24.0,
        TOP + 36.0,
        lx + 12.0,
        TOP + 48.0,
        lx + 24.0,
        TOP + 52.0,
        lx + 12.0,
        TOP + 59.0,
        lx + 24.0,
        TOP + 68.0
    );
    if s.stride > 1 {
        let _ = writeln!(
            out,
            r#"<text x="{LEFT}" y="{}" font-size="11">one plain request in {} shown; every gap, retransmission and NAK shown</text>"#,
            TOP - 4.0,
            s.stride
        );
    }
    // Throughput over the flow's life.
    let top = TOP + PSN_H + GAP;
    let rates: Vec<f64> = s
        .throughput
        .iter()
        .map(|&b| b as f64 / s.bucket_s.max(1e-9))
        .collect();
    let peak = rates.iter().copied().fold(0.0, f64::max);
    let tx = Scale::new(
        f.first_time - report.capture.first_time.unwrap_or(0.0),
        f.last_time - report.capture.first_time.unwrap_or(0.0),
        LEFT,
        W - RIGHT,
    );
    let ty = Scale::new(0.0, peak.max(1.0), top + THR_H, top);
    axes(
        &mut out,
        tx,
        ty,
        "seconds since the first frame",
        "throughput",
        bps,
    );
    let pts: Vec<String> = rates
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let t = tx.d0 + (i as f64 + 0.5) * s.bucket_s;
            format!("{:.1},{:.1}", tx.at(t), ty.at(*r))
        })
        .collect();
    let _ = writeln!(
        out,
        r##"<polyline class="throughput" points="{}" fill="none" stroke="#2ca02c" stroke-width="1.5"/>"##,
        pts.join(" ")
    );
    out.push_str("</svg>\n");
    out
}

/// Buckets of the overview's throughput: about this many over the capture.
const OVERVIEW_BUCKETS: f64 = 100.0;

/// The busiest flows' throughput over the capture, in round buckets of about a hundredth of it.
fn throughput_svg(index: &Index, report: &Report) -> Result<String, data::DataError> {
    let h = TOP + PSN_H + 60.0;
    let mut out = String::new();
    let mut flows: Vec<usize> = (0..report.flows.len()).collect();
    flows.sort_by_key(|&i| std::cmp::Reverse(report.flows[i].bytes));
    flows.truncate(MAX_THROUGHPUT_LINES);
    let bucket = round_step(report.capture.duration_s / OVERVIEW_BUCKETS);
    let buckets = (report.capture.duration_s / bucket).floor() as usize + 1;
    let ids: Vec<u64> = flows.iter().map(|&i| report.flows[i].id).collect();
    let lines = data::throughput_of(index, &ids, bucket, buckets)?;
    header(
        &mut out,
        h,
        &format!(
            "{}: throughput of the {} busiest flows (per {} bucket)",
            report.capture.file,
            flows.len(),
            duration(bucket)
        ),
    );
    let peak = lines.iter().flatten().copied().max().unwrap_or(0) as f64 / bucket;
    let x = Scale::new(0.0, buckets as f64 * bucket, LEFT, W - RIGHT);
    let y = Scale::new(0.0, peak.max(1.0), TOP + PSN_H, TOP);
    axes(
        &mut out,
        x,
        y,
        "seconds since the first frame",
        "throughput",
        bps,
    );
    for (n, (&i, line)) in flows.iter().zip(&lines).enumerate() {
        let f = &report.flows[i];
        let c = COLOURS[n % COLOURS.len()];
        let pts: Vec<String> = line
            .iter()
            .enumerate()
            .map(|(k, &b)| {
                // A step per bucket: the rate holds over the bucket's width.
                let (a, z, v) = (
                    x.at(k as f64 * bucket),
                    x.at((k + 1) as f64 * bucket),
                    y.at(b as f64 / bucket),
                );
                format!("{a:.1},{v:.1} {z:.1},{v:.1}")
            })
            .collect();
        let _ = writeln!(
            out,
            r#"<polyline class="flow" points="{}" fill="none" stroke="{c}" stroke-width="1.5"/>"#,
            pts.join(" ")
        );
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" font-size="12" fill="{c}">#{} {} → {} QP 0x{:06x}</text>"#,
            LEFT + 8.0,
            TOP + 16.0 + 14.0 * n as f64,
            f.id,
            esc(&f.src),
            esc(&f.dst),
            f.dest_qp
        );
    }
    out.push_str("</svg>\n");
    Ok(out)
}
