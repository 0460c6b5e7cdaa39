//! A self-contained SVG chart of a bench record: appends per second (with
//! the min–max range and the limit) and p99 commit latency (with the 5 ms
//! target), one row per configuration, both on log scales because the
//! configurations span four orders of magnitude. An outside store's rows
//! (`sut_*`) are drawn in their own colour and named under the title.

use std::fmt::Write;

use super::figures::ConfigRecord;
use super::plan::LIMIT;
use super::record::BenchRecord;
use crate::report::number::short;

const WIDTH: f64 = 1000.0;
const ROW: f64 = 22.0;
const TOP: f64 = 78.0;
const BOTTOM: f64 = 34.0;
const LABEL_RIGHT: f64 = 220.0;
const THROUGHPUT_LEFT: f64 = 232.0;
const THROUGHPUT_WIDTH: f64 = 430.0;
const LATENCY_LEFT: f64 = 712.0;
const LATENCY_WIDTH: f64 = 260.0;
/// The group-commit latency target, in µs.
const P99_TARGET_US: f64 = 5000.0;

/// A log10 axis over whole decades covering `values`.
struct Axis {
    left: f64,
    width: f64,
    low_exp: i32,
    high_exp: i32,
}

impl Axis {
    fn new(left: f64, width: f64, values: impl Iterator<Item = f64>) -> Axis {
        let positive: Vec<f64> = values.filter(|v| v.is_finite() && *v > 0.0).collect();
        let min = positive.iter().copied().fold(f64::INFINITY, f64::min);
        let max = positive.iter().copied().fold(0.0, f64::max);
        let (low_exp, high_exp) = if positive.is_empty() {
            (0, 1)
        } else {
            let low = min.log10().floor() as i32;
            (low, (max.log10().ceil() as i32).max(low + 1))
        };
        Axis {
            left,
            width,
            low_exp,
            high_exp,
        }
    }

    /// The x of `value`, clamped to the axis.
    fn x(&self, value: f64) -> f64 {
        let exp = if value > 0.0 {
            value.log10()
        } else {
            f64::from(self.low_exp)
        };
        let span = f64::from(self.high_exp - self.low_exp);
        let fraction = ((exp - f64::from(self.low_exp)) / span).clamp(0.0, 1.0);
        self.left + fraction * self.width
    }

    /// Decade grid lines with their labels.
    fn grid(&self, svg: &mut String, top: f64, bottom: f64, unit: &str) {
        for exp in self.low_exp..=self.high_exp {
            let value = 10f64.powi(exp);
            let x = self.x(value);
            let _ = writeln!(
                svg,
                r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="#ddd"/>"##
            );
            let _ = writeln!(
                svg,
                r##"<text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#666">{}{unit}</text>"##,
                bottom + 14.0,
                short(value)
            );
        }
    }
}

fn color(name: &str) -> &'static str {
    if name.starts_with("sut_") {
        "#9050b0"
    } else if name.starts_with("raw_") {
        "#8a8a8a"
    } else if name.starts_with("group_commit") {
        "#3a9a5a"
    } else if name.starts_with("writers") {
        "#d08030"
    } else {
        "#4878a8"
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The chart as a standalone SVG document.
pub fn svg(record: &BenchRecord) -> String {
    let configs = &record.configs;
    let height = TOP + ROW * configs.len() as f64 + BOTTOM;
    let bottom = TOP + ROW * configs.len() as f64;
    let throughput = Axis::new(
        THROUGHPUT_LEFT,
        THROUGHPUT_WIDTH,
        configs
            .iter()
            .flat_map(|c| [c.appends_per_s_min, c.appends_per_s_max, c.appends_per_s]),
    );
    let latency = Axis::new(
        LATENCY_LEFT,
        LATENCY_WIDTH,
        configs.iter().map(|c| c.p99_us).chain([P99_TARGET_US]),
    );

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let c = &record.context;
    let _ = writeln!(
        svg,
        r#"<text x="12" y="22" font-size="15" font-weight="bold">crashsim bench: appends/s and p99 commit latency by configuration</text>"#
    );
    let _ = writeln!(
        svg,
        r##"<text x="12" y="40" fill="#555">{} · SQLite {} · {} ({}) · {} round(s) × {} ms{}</text>"##,
        escape(&crate::platform::short_commit(&c.git_commit)),
        escape(&c.sqlite_version),
        escape(&c.dir),
        escape(&c.filesystem),
        c.rounds,
        c.sample_ms,
        if c.quick { " (quick: rough numbers)" } else { "" }
    );
    if let Some(sut) = &record.sut {
        let _ = writeln!(
            svg,
            r##"<text x="12" y="56" fill="{}">sut_*: {} (its fsyncs are unknown: another process)</text>"##,
            color("sut_"),
            escape(&sut.identity.describe())
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{THROUGHPUT_LEFT}" y="{:.1}" font-weight="bold">appends/s (median, min–max; log scale)</text>"#,
        TOP - 10.0
    );
    let _ = writeln!(
        svg,
        r#"<text x="{LATENCY_LEFT}" y="{:.1}" font-weight="bold">p99 commit latency, µs (log scale)</text>"#,
        TOP - 10.0
    );
    throughput.grid(&mut svg, TOP, bottom, "");
    latency.grid(&mut svg, TOP, bottom, "");

    for (index, config) in configs.iter().enumerate() {
        let y = TOP + ROW * index as f64;
        row(&mut svg, config, y, &throughput, &latency);
    }

    if let Some(limit) = configs.iter().find(|c| c.name == LIMIT) {
        marker(&mut svg, throughput.x(limit.appends_per_s), TOP, bottom, "limit");
    }
    marker(&mut svg, latency.x(P99_TARGET_US), TOP, bottom, "5 ms");
    svg.push_str("</svg>\n");
    svg
}

fn row(svg: &mut String, config: &ConfigRecord, y: f64, throughput: &Axis, latency: &Axis) {
    let middle = y + ROW / 2.0;
    let bar_top = y + 4.0;
    let bar_height = ROW - 8.0;
    let fill = color(&config.name);
    let _ = writeln!(
        svg,
        r#"<text x="{LABEL_RIGHT}" y="{:.1}" text-anchor="end">{}</text>"#,
        middle + 4.0,
        escape(&config.name)
    );
    // Throughput: the median as a bar, the range as a whisker.
    let end = throughput.x(config.appends_per_s);
    let _ = writeln!(
        svg,
        r#"<rect x="{THROUGHPUT_LEFT}" y="{bar_top:.1}" width="{:.1}" height="{bar_height:.1}" fill="{fill}"/>"#,
        (end - THROUGHPUT_LEFT).max(0.5)
    );
    let (low, high) = (
        throughput.x(config.appends_per_s_min),
        throughput.x(config.appends_per_s_max),
    );
    let _ = writeln!(
        svg,
        r##"<path d="M{low:.1} {middle:.1}H{high:.1}M{low:.1} {:.1}V{:.1}M{high:.1} {:.1}V{:.1}" stroke="#222" fill="none"/>"##,
        middle - 4.0,
        middle + 4.0,
        middle - 4.0,
        middle + 4.0
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
        high.max(end) + 5.0,
        middle + 4.0,
        short(config.appends_per_s)
    );
    // Latency: p99 as a bar.
    let end = latency.x(config.p99_us);
    let _ = writeln!(
        svg,
        r#"<rect x="{LATENCY_LEFT}" y="{bar_top:.1}" width="{:.1}" height="{bar_height:.1}" fill="{fill}" fill-opacity="0.75"/>"#,
        (end - LATENCY_LEFT).max(0.5)
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
        end + 5.0,
        middle + 4.0,
        short(config.p99_us)
    );
}

fn marker(svg: &mut String, x: f64, top: f64, bottom: f64, label: &str) {
    let _ = writeln!(
        svg,
        r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="#c03030" stroke-dasharray="4 3"/>"##,
        top - 4.0
    );
    let _ = writeln!(
        svg,
        r##"<text x="{:.1}" y="{:.1}" fill="#c03030">{label}</text>"##,
        x + 3.0,
        top + 2.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::record::tests::{record, record_with_sut};

    #[test]
    fn the_chart_is_one_svg_document_naming_every_configuration() {
        let record = record();
        let svg = svg(&record);
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<svg").count(), 1);
        for config in &record.configs {
            assert!(svg.contains(&format!(">{}</text>", config.name)), "{}", config.name);
        }
        assert!(
            !svg.contains("NaN") && !svg.contains("inf"),
            "every coordinate is finite"
        );
        assert!(svg.contains(">limit</text>") && svg.contains(">5 ms</text>"));
        assert!(!svg.contains("href"), "self-contained: nothing external");
    }

    #[test]
    fn the_outside_store_is_named_and_coloured() {
        let record = record_with_sut();
        let svg = svg(&record);
        assert!(
            svg.contains(">sut_ping</text>") && svg.contains("example_store 1.0 via"),
            "{svg}"
        );
        assert!(svg.contains(r##"fill="#9050b0""##));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }

    #[test]
    fn axes_cover_whole_decades_and_clamp() {
        let axis = Axis::new(0.0, 100.0, [150.0, 42_000.0].into_iter());
        assert_eq!((axis.low_exp, axis.high_exp), (2, 5));
        assert_eq!(axis.x(100.0), 0.0);
        assert_eq!(axis.x(100_000.0), 100.0);
        assert_eq!(axis.x(0.0), 0.0);
        assert_eq!(axis.x(1e9), 100.0);
        let empty = Axis::new(0.0, 100.0, std::iter::empty());
        assert!(empty.x(5.0).is_finite());
    }
}
