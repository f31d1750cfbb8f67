//! Number formatting shared by the writers.
//!
//! Files must be byte-stable, so every float written to CSV goes through [`fixed`]: a fixed number of decimals, and
//! never `NaN`, `inf` or `-0`. The simulator should not produce non-finite values, but if a bug ever did, a report
//! with a 0 in one cell is more useful than a file other tools refuse to parse.

/// `x`, or 0 when `x` is NaN or infinite.
pub(crate) fn finite(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

/// `x` with exactly `decimals` decimals; non-finite values become 0 and a negative zero loses its sign.
pub(crate) fn fixed(x: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, finite(x));
    match s.strip_prefix('-') {
        Some(abs) if abs.bytes().all(|b| b == b'0' || b == b'.') => abs.to_string(),
        _ => s,
    }
}

/// `n / d`, 0 when `d` is 0.
pub(crate) fn ratio(n: u64, d: u64) -> f64 {
    if d == 0 { 0.0 } else { n as f64 / d as f64 }
}

/// `n / d` for floats, 0 when `d` is not a positive finite number.
pub(crate) fn per(n: f64, d: f64) -> f64 {
    if d.is_finite() && d > 0.0 { finite(n / d) } else { 0.0 }
}

/// `12345` as `12,345`.
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A latency for people: three significant figures or so (`0.84 ms`, `12.3 ms`, `1,234 ms`).
pub(crate) fn ms(x: f64) -> String {
    let x = finite(x);
    if x.abs() >= 1000.0 {
        format!("{} ms", grouped(x.round() as u64))
    } else if x.abs() >= 100.0 {
        format!("{} ms", fixed(x, 0))
    } else if x.abs() >= 10.0 {
        format!("{} ms", fixed(x, 1))
    } else {
        format!("{} ms", fixed(x, 2))
    }
}

/// A rate in `[0, 1]` as a percentage: `5.00%`.
pub(crate) fn pct(rate: f64) -> String {
    format!("{}%", fixed(rate * 100.0, 2))
}

/// A plain float for people: up to `decimals` decimals, trailing zeros trimmed (`2.5`, `500`, `0.01`).
pub(crate) fn short(x: f64, decimals: usize) -> String {
    let s = fixed(x, decimals);
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s }
}

/// A markdown table cell: pipes escaped, line breaks flattened.
pub(crate) fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\r', '\n'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_is_sanitised() {
        assert_eq!(fixed(1.23456, 3), "1.235");
        assert_eq!(fixed(f64::NAN, 3), "0.000");
        assert_eq!(fixed(f64::INFINITY, 2), "0.00");
        assert_eq!(fixed(f64::NEG_INFINITY, 0), "0");
        assert_eq!(fixed(-0.0, 3), "0.000");
        assert_eq!(fixed(-0.0001, 3), "0.000");
        assert_eq!(fixed(-1.5, 1), "-1.5");
    }

    #[test]
    fn human_numbers() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1234567), "1,234,567");
        assert_eq!(ms(0.844), "0.84 ms");
        assert_eq!(ms(12.34), "12.3 ms");
        assert_eq!(ms(234.4), "234 ms");
        assert_eq!(ms(1234.4), "1,234 ms");
        assert_eq!(pct(0.05), "5.00%");
        assert_eq!(short(2.50, 3), "2.5");
        assert_eq!(short(500.0, 3), "500");
        assert_eq!(ratio(1, 0), 0.0);
        assert_eq!(per(1.0, 0.0), 0.0);
        assert_eq!(md_cell("a|b\nc"), "a\\|b c");
    }
}
