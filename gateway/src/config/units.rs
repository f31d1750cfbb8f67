//! The units a scenario writes its durations in: [`Dur`] (`"250ms"`, `"2s"`, `"1m30s"`) and [`SignedDur`] for
//! clock offsets that may be negative. Every table's durations go through them, so the spelling, the schema and the
//! error for a bad one are the same everywhere.

use std::borrow::Cow;
use std::time::Duration;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// A duration written with a unit: `"250ms"`, `"2s"`, `"1m30s"` (see [`parse_duration`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Dur(pub Duration);

/// The units a duration may be written in, largest first, with their length in nanoseconds.
const UNITS: [(&str, u128); 7] = [
    ("d", 86_400_000_000_000),
    ("h", 3_600_000_000_000),
    ("m", 60_000_000_000),
    ("s", 1_000_000_000),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("ns", 1),
];

/// What every duration error ends with: the one spelling accepted.
const SPELLING: &str = "write numbers with a unit and no spaces, e.g. \"250ms\", \"2s\", \"1.5s\", \"1m30s\" (units: d, h, m, \
                        s, ms, us, ns)";

/// Parses a duration as the docs and the schema spell it: one or more numbers (whole, or with a decimal point:
/// `1.5s`), each followed by a unit of [`UNITS`] (`"250ms"`, `"2s"`, `"1m30s"`), and nothing else: no spaces and no
/// long names (`"10 sec"`, `"10 seconds"`), which the general-purpose parser used before also took although no
/// page documented them. A value too long for a `Duration` is refused here; one merely too long for its key is left
/// to the key's range, which names the key.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    read(text).map_err(|why| format!("invalid duration {text:?}: {why}; {SPELLING}"))
}

/// [`parse_duration`], with the reason it failed.
fn read(text: &str) -> Result<Duration, String> {
    if text.is_empty() {
        return Err("it is empty".into());
    }
    let too_long = || "it is too long".to_owned();
    let mut rest = text;
    let mut nanos: u128 = 0;
    while !rest.is_empty() {
        let (whole, fraction, after) = number(rest)?;
        let letters = after.find(|c: char| c.is_ascii_digit()).unwrap_or(after.len());
        let unit = &after[..letters];
        let Some((_, scale)) = UNITS.iter().find(|(name, _)| *name == unit) else {
            return Err(match unit {
                "" => "a number has no unit".into(),
                u if u.contains(char::is_whitespace) => "it has a space".into(),
                u => format!("unknown unit {u:?}"),
            });
        };
        let mut part = whole.checked_mul(*scale).ok_or_else(too_long)?;
        if !fraction.is_empty() {
            // At most 18 decimals: 10^18 times the largest scale still fits in a u128.
            let digits = u32::try_from(fraction.len()).ok().filter(|d| *d <= 18).ok_or("too many decimals")?;
            let fraction: u128 = fraction.parse().map_err(|_| "a bad fraction")?;
            let (scaled, den) = (fraction * *scale, 10u128.pow(digits));
            if scaled % den != 0 {
                return Err("it is finer than a nanosecond".into());
            }
            part = part.checked_add(scaled / den).ok_or_else(too_long)?;
        }
        nanos = nanos.checked_add(part).ok_or_else(too_long)?;
        rest = &after[letters..];
    }
    let secs = u64::try_from(nanos / 1_000_000_000).map_err(|_| too_long())?;
    // The remainder is below 10⁹, so it fits.
    Ok(Duration::new(secs, (nanos % 1_000_000_000) as u32))
}

/// The number `text` starts with: its whole part, its decimals (empty for a whole number) and the text after it.
fn number(text: &str) -> Result<(u128, &str, &str), String> {
    let digits = |t: &str| t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let n = digits(text);
    if n == 0 {
        return Err(format!("expected a number at {text:?}"));
    }
    let whole: u128 = text[..n].parse().map_err(|_| "a number is too large")?;
    let rest = &text[n..];
    let Some(after_point) = rest.strip_prefix('.') else { return Ok((whole, "", rest)) };
    let d = digits(after_point);
    if d == 0 {
        return Err(format!("expected decimals after the point at {text:?}"));
    }
    Ok((whole, &after_point[..d], &after_point[d..]))
}

/// A duration in the spelling [`parse_duration`] reads: each unit of [`UNITS`] that is not zero, largest first, with
/// no spaces (`"1m30s"`, `"1s500ms"`, `"0s"`), so that a written scenario (a report's copy, a shrunk failure) loads
/// again.
pub fn format_duration(d: Duration) -> String {
    let mut nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    let mut out = String::new();
    for (name, scale) in UNITS {
        if nanos >= scale {
            out.push_str(&format!("{}{name}", nanos / scale));
            nanos %= scale;
        }
    }
    out
}

impl Serialize for Dur {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0))
    }
}

impl JsonSchema for Dur {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "A duration: numbers with a unit and no spaces, \"250ms\", \"2s\", \"1.5s\", \"1m30s\" (units: d, h, m, s, ms, us, ns); at most 7 days.",
            "pattern": "^([0-9]+(\\.[0-9]+)?(d|h|m|s|ms|us|ns))+$",
            "examples": ["250ms", "2s", "1m30s"]
        })
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        parse_duration(&text).map(Dur).map_err(serde::de::Error::custom)
    }
}

/// A signed duration: `"-3m"`, `"+30s"`, `"90s"` (a clock's offset or step: ahead when positive, behind when
/// negative).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct SignedDur {
    pub negative: bool,
    pub magnitude: Duration,
}

impl SignedDur {
    pub fn as_millis(self) -> i64 {
        let ms = i64::try_from(self.magnitude.as_millis()).unwrap_or(i64::MAX);
        if self.negative { -ms } else { ms }
    }
}

impl std::fmt::Display for SignedDur {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sign = if self.negative && !self.magnitude.is_zero() { "-" } else { "" };
        write!(f, "{sign}{}", format_duration(self.magnitude))
    }
}

impl Serialize for SignedDur {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl JsonSchema for SignedDur {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "SignedDuration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "A duration with an optional sign, numbers with a unit and no spaces: \"-3m\" (behind), \"+30s\", \"90s\" (ahead) (units: d, h, m, s, ms, us, ns); at most 7 days either way.",
            "pattern": "^[+-]?([0-9]+(\\.[0-9]+)?(d|h|m|s|ms|us|ns))+$",
            "examples": ["-3m", "+30s", "90s"]
        })
    }
}

impl<'de> Deserialize<'de> for SignedDur {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let (negative, rest) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text.strip_prefix('+').unwrap_or(&text)),
        };
        read(rest).map(|magnitude| SignedDur { negative, magnitude }).map_err(|why| {
            serde::de::Error::custom(format!(
                "invalid signed duration {text:?}: {why}; after an optional sign (\"-3m\", \"+30s\"), {SPELLING}"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exactly the documented spelling is read; every other one, the long names and spaces that the general parser
    /// took included ("10 sec", "10 secs", "10 seconds", "10 s"), is refused with the units that are accepted.
    #[test]
    fn durations_read_only_the_documented_spelling() {
        let ms = Duration::from_millis;
        for (text, d) in [("250ms", ms(250)), ("2s", ms(2000)), ("1m", ms(60_000)), ("1m30s", ms(90_000))] {
            assert_eq!(parse_duration(text), Ok(d), "{text}");
        }
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3_600)));
        assert_eq!(parse_duration("1us"), Ok(Duration::from_micros(1)));
        assert_eq!(parse_duration("5ns"), Ok(Duration::from_nanos(5)));
        assert_eq!(parse_duration("18446744073709551615s"), Ok(Duration::from_secs(u64::MAX)));
        assert_eq!(parse_duration("1.5s"), Ok(ms(1500)));
        assert_eq!(parse_duration("0.25ms"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("1m0.5s"), Ok(ms(60_500)));
        let refused =
            ["10 sec", "10 secs", "10 seconds", "10 s", "10sec", "10", "", " 2s", "2s ", "1m 30s", "1.s", ".5s"];
        for text in refused.iter().chain(&["1.5ns", "s", "2w", "1e3ms", "-1s"]) {
            let e = parse_duration(text).expect_err(text);
            assert!(e.starts_with(&format!("invalid duration {text:?}: ")), "{e}");
            assert!(e.ends_with("(units: d, h, m, s, ms, us, ns)"), "{e}");
        }
        assert!(parse_duration("10sec").unwrap_err().contains("unknown unit \"sec\""));
        assert!(parse_duration("10 s").unwrap_err().contains(": it has a space;"));
        assert!(parse_duration("1.5ns").unwrap_err().contains("finer than a nanosecond"));
        assert!(parse_duration("18446744073709551616s").is_err());
        assert!(parse_duration("18446744073709551615m").is_err());
    }

    /// What a scenario is written with reads back to the same duration.
    #[test]
    fn written_durations_read_back() {
        for d in [0, 1, 999, 1_000_000, 1_500_000_000, 90_000_000_000, 604_800_000_000_000, 93_784_005_006_007] {
            let d = Duration::from_nanos(d);
            assert_eq!(parse_duration(&format_duration(d)), Ok(d), "{}", format_duration(d));
        }
        assert_eq!(format_duration(Duration::from_millis(90_500)), "1m30s500ms");
        assert_eq!(format_duration(Duration::ZERO), "0s");
    }
}
