//! Numbers for people: the one way every table, summary and chart writes a
//! count or a rate.

/// 1234567 → "1,234,567".
pub fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut text = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index) % 3 == 0 {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

/// A rate or a duration in three significant figures with a unit suffix:
/// 2500000 → "2.50M"; 123456.7 → "123k"; 12345 → "12.3k"; 1234.5 →
/// "1.23k"; 456.7 → "457"; 12.34 → "12.3".
pub fn short(value: f64) -> String {
    if value >= 1e6 {
        format!("{:.2}M", value / 1e6)
    } else if value >= 1e5 {
        format!("{:.0}k", value / 1e3)
    } else if value >= 1e4 {
        format!("{:.1}k", value / 1e3)
    } else if value >= 1e3 {
        format!("{:.2}k", value / 1e3)
    } else if value >= 100.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

/// A run's speed: "24.4 seeds/s"; below 0.1 seeds/s, where that would
/// print as "0.0", the time per seed instead: "12.5 s/seed".
pub fn seed_rate(seeds_per_s: f64) -> String {
    if seeds_per_s > 0.0 && seeds_per_s < 0.1 {
        format!("{} s/seed", short(1.0 / seeds_per_s))
    } else {
        format!("{} seeds/s", short(seeds_per_s))
    }
}

/// A size in bytes, binary units: 614400 → "600 KiB"; 1536 → "1.5 KiB".
pub fn bytes(value: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut size = value as f64;
    let mut unit = 0;
    while size >= 1024.0 && unit + 1 < UNITS.len() {
        size /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{value} B"),
        _ if size >= 100.0 || size.fract() == 0.0 => format!("{size:.0} {}", UNITS[unit]),
        _ => format!("{size:.1} {}", UNITS[unit]),
    }
}

/// A duration as people write it: `10m`, `1h30m`, `1m5s`, `2.5s`.
pub fn duration(value: std::time::Duration) -> String {
    let seconds = value.as_secs();
    if value.subsec_millis() != 0 || seconds == 0 {
        return format!("{}s", short(value.as_secs_f64()));
    }
    let (h, m, s) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    let mut text = String::new();
    for (amount, unit) in [(h, "h"), (m, "m"), (s, "s")] {
        if amount > 0 {
            text.push_str(&format!("{amount}{unit}"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_run_reads_as_seconds_per_seed_not_zero_seeds_per_second() {
        assert_eq!(seed_rate(24.43), "24.4 seeds/s");
        assert_eq!(seed_rate(0.1), "0.1 seeds/s");
        assert_eq!(seed_rate(0.08), "12.5 s/seed");
        assert_eq!(seed_rate(1.0 / 480.0), "480 s/seed");
        assert_eq!(seed_rate(0.0), "0.0 seeds/s");
    }

    #[test]
    fn bytes_read_in_binary_units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(614_400), "600 KiB");
        assert_eq!(bytes(24 << 30), "24 GiB");
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn short_keeps_three_significant_figures() {
        assert_eq!(short(2_500_000.0), "2.50M");
        assert_eq!(short(123_456.7), "123k");
        assert_eq!(short(12_345.0), "12.3k");
        assert_eq!(short(1_234.5), "1.23k");
        assert_eq!(short(456.7), "457");
        assert_eq!(short(12.34), "12.3");
    }
}
