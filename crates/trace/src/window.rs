//! A window of a trace's time, as perf's `--time START,END` gives it: in
//! the seconds the trace's timestamps print (`49916.5,49916.8`), either end
//! open.

use crate::Nanos;

/// From `start` to `end` inclusive, in the trace's clock (ns); `None` is open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeWindow {
    pub start: Option<Nanos>,
    pub end: Option<Nanos>,
}

impl TimeWindow {
    /// Whether `ts` is inside the window.
    pub fn contains(&self, ts: Nanos) -> bool {
        self.start.is_none_or(|s| ts >= s) && self.end.is_none_or(|e| ts <= e)
    }

    /// Whether both ends are open.
    pub fn is_open(&self) -> bool {
        *self == TimeWindow::default()
    }
}

/// Why a `START,END` is not a time window.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TimeWindowError {
    #[error("expected START,END (seconds, either side may be empty)")]
    NoComma,
    #[error("`{0}`: expected seconds like 49916.5 (at most 9 decimals)")]
    Seconds(String),
    #[error("`{0}`: too large")]
    TooLarge(String),
    #[error("`{0}`: the start is after the end")]
    Reversed(String),
}

impl std::str::FromStr for TimeWindow {
    type Err = TimeWindowError;

    /// `START,END` in seconds with up to 9 decimals, either side empty.
    fn from_str(s: &str) -> Result<TimeWindow, TimeWindowError> {
        let (a, b) = s.split_once(',').ok_or(TimeWindowError::NoComma)?;
        let window = TimeWindow { start: seconds(a)?, end: seconds(b)? };
        if let (Some(x), Some(y)) = (window.start, window.end) {
            if x > y {
                return Err(TimeWindowError::Reversed(s.to_string()));
            }
        }
        Ok(window)
    }
}

/// One end: empty, or seconds with up to 9 decimals, in ns.
fn seconds(t: &str) -> Result<Option<Nanos>, TimeWindowError> {
    let t = t.trim();
    if t.is_empty() {
        return Ok(None);
    }
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !(frac.is_empty() || digits(frac)) || frac.len() > 9 {
        return Err(TimeWindowError::Seconds(t.to_string()));
    }
    let ns = format!("{frac:0<9}").parse::<u64>().expect("digits");
    let s = whole.parse::<u64>().ok().and_then(|w| w.checked_mul(1_000_000_000)).and_then(|w| w.checked_add(ns));
    s.map(Some).ok_or_else(|| TimeWindowError::TooLarge(t.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_either_end_open() {
        let w: TimeWindow = "49916.5,49916.800000001".parse().unwrap();
        assert_eq!(w, TimeWindow { start: Some(49_916_500_000_000), end: Some(49_916_800_000_001) });
        assert_eq!(",7".parse(), Ok(TimeWindow { start: None, end: Some(7_000_000_000) }));
        assert!(",".parse::<TimeWindow>().unwrap().is_open());
        assert!(w.contains(49_916_500_000_000) && w.contains(49_916_800_000_001) && !w.contains(49_916_400_000_000));
    }

    #[test]
    fn what_is_not_a_window() {
        assert_eq!("5".parse::<TimeWindow>(), Err(TimeWindowError::NoComma));
        assert_eq!("5,4".parse::<TimeWindow>(), Err(TimeWindowError::Reversed("5,4".into())));
        assert_eq!("x,".parse::<TimeWindow>(), Err(TimeWindowError::Seconds("x".into())));
        assert_eq!("1.0000000001,".parse::<TimeWindow>(), Err(TimeWindowError::Seconds("1.0000000001".into())));
        assert_eq!(".5,".parse::<TimeWindow>(), Err(TimeWindowError::Seconds(".5".into())));
        assert_eq!("99999999999999,".parse::<TimeWindow>(), Err(TimeWindowError::TooLarge("99999999999999".into())));
    }
}
