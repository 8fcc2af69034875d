//! Durations as people write them in input files: `2000` (ns), `"2us"`,
//! `"1.5ms"`, `"4 ms"`, `"1s"`.
//!
//! Shared by the topology and scenario file formats, so both accept the same
//! spellings and reject the same mistakes.

use std::fmt;

/// Parse a duration into nanoseconds.
///
/// Accepted: a non-negative decimal number followed by an optional unit
/// `ns`, `us`, `µs` (or `μs`), `ms` or `s`, with optional whitespace between
/// them. A bare number is nanoseconds. Fractions are allowed as long as the
/// result is a whole number of nanoseconds (`"1.5us"` = 1500, `"0.5ns"` is an
/// error). The arithmetic is exact (no floating point), and values that do
/// not fit in a `u64` are rejected.
///
/// The error says what was expected, without position; callers add
/// file/line/column.
pub fn parse_duration(text: &str) -> Result<u64, DurationError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(DurationError::Empty);
    }
    if t.starts_with('-') {
        return Err(DurationError::Negative(t.to_string()));
    }
    let num_end = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(t.len());
    let (number, unit) = t.split_at(num_end);
    if !number.contains(|c: char| c.is_ascii_digit()) {
        return Err(DurationError::NotANumber(t.to_string()));
    }
    let unit = unit.trim();
    let scale: u128 = match unit {
        "" | "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return Err(DurationError::UnknownUnit { unit: unit.to_string(), text: t.to_string() }),
    };
    let number = number.replace('_', "");
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number.as_str(), ""),
    };
    if frac_part.contains('.') {
        return Err(DurationError::Malformed(t.to_string()));
    }
    let too_big = || DurationError::TooLarge(t.to_string());
    // At most 20 integer digits fit in u64; more digits can only be zeros
    // or an overflow, and bounding the length keeps the arithmetic in u128.
    let int_digits = int_part.trim_start_matches('0');
    if int_digits.len() > 20 {
        return Err(too_big());
    }
    let int: u128 = if int_digits.is_empty() { 0 } else { int_digits.parse().map_err(|_| too_big())? };
    let frac_digits = frac_part.trim_end_matches('0');
    if frac_digits.len() > 9 {
        return Err(DurationError::TooPrecise(t.to_string()));
    }
    let frac: u128 = if frac_digits.is_empty() {
        0
    } else {
        frac_digits.parse().map_err(|_| DurationError::MalformedFraction(t.to_string()))?
    };
    let frac_den = 10u128.pow(frac_digits.len() as u32);
    let frac_ns = frac * scale;
    if !frac_ns.is_multiple_of(frac_den) {
        return Err(DurationError::NotWholeNs(t.to_string()));
    }
    let ns = int * scale + frac_ns / frac_den;
    u64::try_from(ns).map_err(|_| too_big())
}

const EXPECTED: &str = "expected a duration such as 2000 (ns), \"2us\", \"1.5ms\" or \"1s\"";

/// Why [`parse_duration`] rejected a text. Each variant carries the trimmed
/// text, so a caller that adds the file position can still name the value.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("empty duration ({EXPECTED})")]
    Empty,
    #[error("negative duration `{0}` ({EXPECTED})")]
    Negative(String),
    #[error("`{0}` is not a duration ({EXPECTED})")]
    NotANumber(String),
    #[error("unknown unit `{unit}` in `{text}` (expected ns, us, ms or s)")]
    UnknownUnit { unit: String, text: String },
    #[error("malformed number in `{0}` ({EXPECTED})")]
    Malformed(String),
    #[error("malformed number in `{0}`")]
    MalformedFraction(String),
    #[error("duration `{0}` is too large (at most {max} ns)", max = u64::MAX)]
    TooLarge(String),
    #[error("`{0}` is more precise than 1 ns")]
    TooPrecise(String),
    #[error("`{0}` is not a whole number of nanoseconds")]
    NotWholeNs(String),
}

/// A duration field in an input file: an integer number of nanoseconds or a
/// string accepted by [`parse_duration`]. Deserializes with serde.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct DurationNs(pub u64);

impl<'de> serde::Deserialize<'de> for DurationNs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = DurationNs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration: integer nanoseconds or a string like \"2us\", \"1.5ms\"")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<DurationNs, E> {
                Ok(DurationNs(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<DurationNs, E> {
                u64::try_from(v)
                    .map(DurationNs)
                    .map_err(|_| E::custom(format!("negative duration {v} (expected a duration >= 0)")))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<DurationNs, E> {
                Err(E::custom(format!(
                    "bare number {v} is not a duration (expected integer nanoseconds, or a string with a unit like \"{v}us\")"
                )))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<DurationNs, E> {
                parse_duration(v).map(DurationNs).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::parse_duration;

    #[test]
    fn units_and_fractions() {
        assert_eq!(parse_duration("2000"), Ok(2000));
        assert_eq!(parse_duration("2us"), Ok(2000));
        assert_eq!(parse_duration("2 µs"), Ok(2000));
        assert_eq!(parse_duration("2μs"), Ok(2000));
        assert_eq!(parse_duration("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration("0.000001s"), Ok(1000));
        assert_eq!(parse_duration("1s"), Ok(1_000_000_000));
        assert_eq!(parse_duration(".5us"), Ok(500));
        assert_eq!(parse_duration("4.ms"), Ok(4_000_000));
        assert_eq!(parse_duration("1_000ns"), Ok(1000));
        assert_eq!(parse_duration("18446744073709551615ns"), Ok(u64::MAX));
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "",
            "-1us",
            "1.5ns",
            "abc",
            "2 weeks",
            "1..2ms",
            ".",
            "us",
            "1e3ns",
            "18446744073709551616",
            "99999999999999999999999999s",
            "0.0000000001s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
        assert!(parse_duration("-2us").unwrap_err().to_string().contains("negative"));
        assert!(parse_duration("3 fortnights").unwrap_err().to_string().contains("unknown unit `fortnights`"));
    }
}
