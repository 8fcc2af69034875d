//! Frequencies as people write them in topology files: `"408MHz"`,
//! `"1.8GHz"`, `"408000kHz"`, or a bare integer in Hz (the unit of a device
//! tree's `opp-hz`). Stored in kHz, the unit of cpufreq and the energy model
//! (`cpufreq_frequency_table.frequency`, `em_perf_state.frequency`).

use std::fmt;

/// Parse a frequency into kHz. The arithmetic is exact (no floating point);
/// the result must be a whole number of kHz and fit a `u64`.
pub fn parse_freq_khz(text: &str) -> Result<u64, FreqError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(FreqError::NotAFrequency(t.to_string()));
    }
    let num_end = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(t.len());
    let (number, unit) = t.split_at(num_end);
    if !number.contains(|c: char| c.is_ascii_digit()) {
        return Err(FreqError::NotAFrequency(t.to_string()));
    }
    // Hz per unit.
    let scale: u128 = match unit.trim() {
        "" | "Hz" => 1,
        "kHz" => 1_000,
        "MHz" => 1_000_000,
        "GHz" => 1_000_000_000,
        other => return Err(FreqError::UnknownUnit { unit: other.to_string(), text: t.to_string() }),
    };
    let number = number.replace('_', "");
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number.as_str(), ""));
    if frac_part.contains('.') {
        return Err(FreqError::NotAFrequency(t.to_string()));
    }
    let int_digits = int_part.trim_start_matches('0');
    let frac_digits = frac_part.trim_end_matches('0');
    if int_digits.len() > 20 || frac_digits.len() > 9 {
        return Err(FreqError::OutOfRange(t.to_string()));
    }
    let int: u128 =
        if int_digits.is_empty() { 0 } else { int_digits.parse().map_err(|_| FreqError::OutOfRange(t.to_string()))? };
    let frac: u128 = if frac_digits.is_empty() {
        0
    } else {
        frac_digits.parse().map_err(|_| FreqError::NotAFrequency(t.to_string()))?
    };
    let den = 10u128.pow(frac_digits.len() as u32);
    let hz_num = int * scale * den + frac * scale;
    if !hz_num.is_multiple_of(den * 1_000) {
        return Err(FreqError::NotWholeKhz(t.to_string()));
    }
    u64::try_from(hz_num / (den * 1_000)).map_err(|_| FreqError::OutOfRange(t.to_string()))
}

const EXPECTED: &str = "expected a frequency such as \"408MHz\", \"1.8GHz\", \"408000kHz\" or integer Hz";

/// Why [`parse_freq_khz`] rejected a text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FreqError {
    #[error("`{0}` is not a frequency ({EXPECTED})")]
    NotAFrequency(String),
    #[error("unknown unit `{unit}` in `{text}` (expected Hz, kHz, MHz or GHz)")]
    UnknownUnit { unit: String, text: String },
    #[error("frequency `{0}` is out of range")]
    OutOfRange(String),
    #[error("frequency `{0}` is not a whole number of kHz (cpufreq and the energy model count kHz)")]
    NotWholeKhz(String),
}

/// A frequency field: a string accepted by [`parse_freq_khz`] or integer Hz.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FreqKhz(pub u64);

impl<'de> serde::Deserialize<'de> for FreqKhz {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = FreqKhz;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a frequency: a string like \"408MHz\" or integer Hz")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<FreqKhz, E> {
                parse_freq_khz(&v.to_string()).map(FreqKhz).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<FreqKhz, E> {
                if v < 0 {
                    return Err(E::custom(format!("negative frequency {v} ({EXPECTED})")));
                }
                self.visit_u64(v as u64)
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<FreqKhz, E> {
                Err(E::custom(format!("bare number {v} is not a frequency ({EXPECTED})")))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<FreqKhz, E> {
                parse_freq_khz(v).map(FreqKhz).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::parse_freq_khz;

    #[test]
    fn units() {
        assert_eq!(parse_freq_khz("408MHz"), Ok(408_000));
        assert_eq!(parse_freq_khz("1.8GHz"), Ok(1_800_000));
        assert_eq!(parse_freq_khz("1.416 GHz"), Ok(1_416_000));
        assert_eq!(parse_freq_khz("408000kHz"), Ok(408_000));
        assert_eq!(parse_freq_khz("408000000"), Ok(408_000));
        assert_eq!(parse_freq_khz("408000000Hz"), Ok(408_000));
    }

    #[test]
    fn rejects() {
        for bad in ["", "MHz", "408", "408.5kHz", "1.2.3GHz", "4 THz", "-1MHz", "99999999999999999999999GHz"] {
            assert!(parse_freq_khz(bad).is_err(), "{bad:?} accepted");
        }
    }
}
