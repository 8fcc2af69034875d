//! One CPU's ring-buffer page, as the kernel's `header_page` and
//! `header_event` files describe it (`kernel/trace/ring_buffer.c`).
//!
//! A page is [`PAGE_SIZE`] bytes: a u64 base timestamp, a u64 `commit`
//! (how many data bytes follow; its flag bits for lost events are never
//! set here), then the records. Each record starts with a u32 whose low 5
//! bits are `type_len` and whose high 27 bits are `time_delta`, the ns
//! since the previous record (the first record's is since the page's base
//! timestamp, which is the first record's own time, so its delta is 0):
//!
//! - `type_len` 1..=28: the data is `type_len * 4` bytes and follows at once;
//! - `type_len` 0: the next u32 is the data length plus 4, then the data
//!   (used for data over 112 bytes);
//! - `type_len` 30 (time extend): a delta too large for 27 bits; the next
//!   u32 holds its bits above the low 27, and the record it precedes has a
//!   delta of 0.
//!
//! Simplified: records are never absolute timestamps (`type_len` 31) or
//! padding (29): a record that does not fit starts the next page and the
//! rest of this one stays zero, which the reader skips since `commit` ends
//! the data. A timestamp earlier than its predecessor's on the same CPU
//! (never the case for a simulated run) is written as a delta of 0.

/// The page size the file declares and every CPU's pages use.
pub const PAGE_SIZE: usize = 4096;
/// The page header: the base timestamp and `commit`, 8 bytes each.
pub const PAGE_HEADER: usize = 16;
/// Room for records on one page.
pub const PAGE_DATA: usize = PAGE_SIZE - PAGE_HEADER;
/// The largest `time_delta` a record header holds.
pub const MAX_DELTA: u64 = (1 << 27) - 1;
/// The most data bytes a record can give by its `type_len` alone.
const MAX_SMALL_DATA: usize = 28 * 4;
const TYPE_TIME_EXTEND: u32 = 30;

/// Bytes a record with `data_len` bytes of data takes, header included.
pub fn record_len(data_len: usize) -> usize {
    let data = data_len.div_ceil(4) * 4;
    if data_len > 0 && data_len <= MAX_SMALL_DATA {
        4 + data
    } else {
        8 + data
    }
}

/// A page being filled.
pub struct Page {
    buf: Box<[u8; PAGE_SIZE]>,
    /// Data bytes written after the header (the `commit` value).
    used: usize,
    /// Time of the last record, `None` while the page is empty.
    last_ts: Option<u64>,
}

impl Default for Page {
    fn default() -> Self {
        Page { buf: Box::new([0; PAGE_SIZE]), used: 0, last_ts: None }
    }
}

impl Page {
    pub fn is_empty(&self) -> bool {
        self.last_ts.is_none()
    }

    /// The data bytes committed so far.
    pub fn commit(&self) -> usize {
        self.used
    }

    /// The page's bytes: header, records, zeros.
    pub fn bytes(&self) -> &[u8; PAGE_SIZE] {
        &self.buf
    }

    /// Back to an empty page.
    pub fn clear(&mut self) {
        self.buf.fill(0);
        self.used = 0;
        self.last_ts = None;
    }

    /// Whether a record of `data_len` bytes at `ts` fits; `false` leaves
    /// the page as it was (the caller starts a new one).
    pub fn fits(&self, ts: u64, data_len: usize) -> bool {
        self.used + self.needed(ts, data_len) <= PAGE_DATA
    }

    fn delta(&self, ts: u64) -> u64 {
        self.last_ts.map_or(0, |last| ts.saturating_sub(last))
    }

    fn needed(&self, ts: u64, data_len: usize) -> usize {
        let extend = if self.delta(ts) > MAX_DELTA { 8 } else { 0 };
        extend + record_len(data_len)
    }

    /// Append a record of `data` at `ts`, if it fits (see [`fits`](Self::fits)).
    pub fn push(&mut self, ts: u64, data: &[u8]) -> bool {
        if !self.fits(ts, data.len()) {
            return false;
        }
        let mut delta = self.delta(ts);
        match self.last_ts {
            None => self.buf[..8].copy_from_slice(&ts.to_le_bytes()),
            Some(_) if delta > MAX_DELTA => {
                // 27 + 32 bits: 18 years of ns; more saturates.
                let high = u32::try_from(delta >> 27).unwrap_or(u32::MAX);
                self.put_u32(TYPE_TIME_EXTEND | (((delta & MAX_DELTA) as u32) << 5));
                self.put_u32(high);
                delta = 0;
            }
            Some(_) => {}
        }
        let time = (delta as u32) << 5;
        if data.len() <= MAX_SMALL_DATA {
            self.put_u32(data.len().div_ceil(4) as u32 | time);
        } else {
            self.put_u32(time);
            self.put_u32((data.len() + 4) as u32);
        }
        let start = PAGE_HEADER + self.used;
        self.buf[start..start + data.len()].copy_from_slice(data);
        self.used += data.len().div_ceil(4) * 4;
        self.last_ts = Some(self.last_ts.map_or(ts, |last| last.max(ts)));
        self.buf[8..16].copy_from_slice(&(self.used as u64).to_le_bytes());
        true
    }

    fn put_u32(&mut self, v: u32) {
        let at = PAGE_HEADER + self.used;
        self.buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
        self.used += 4;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(p: &Page, off: usize) -> u32 {
        u32::from_le_bytes(p.bytes()[off..off + 4].try_into().unwrap())
    }

    fn u64_at(p: &Page, off: usize) -> u64 {
        u64::from_le_bytes(p.bytes()[off..off + 8].try_into().unwrap())
    }

    #[test]
    fn small_records_carry_their_length_in_type_len_and_commit_counts_the_data() {
        let mut p = Page::default();
        assert!(p.push(1_000, &[7; 12]));
        assert!(p.push(1_250, &[9; 36]));
        assert_eq!(u64_at(&p, 0), 1_000, "the base timestamp is the first record's");
        assert_eq!(u32_at(&p, 16), 3, "12 bytes = type_len 3, delta 0");
        assert_eq!(p.bytes()[20..32], [7; 12]);
        assert_eq!(u32_at(&p, 32), 9 | (250 << 5), "36 bytes, 250 ns later");
        assert_eq!(u64_at(&p, 8), (4 + 12 + 4 + 36) as u64);
        assert_eq!(p.commit(), 56);
    }

    #[test]
    fn odd_lengths_round_up_to_four_bytes() {
        let mut p = Page::default();
        assert!(p.push(5, &[1; 13]));
        assert_eq!(u32_at(&p, 16), 4);
        assert_eq!(p.commit(), 4 + 16);
    }

    #[test]
    fn data_over_112_bytes_gets_a_length_word() {
        let mut p = Page::default();
        assert!(p.push(5, &[1; 113]));
        assert_eq!(u32_at(&p, 16) & 31, 0);
        assert_eq!(u32_at(&p, 20), 117);
        assert_eq!(p.commit(), 8 + 116);
        assert_eq!(record_len(112), 116);
        assert_eq!(record_len(113), 124);
    }

    #[test]
    fn a_delta_over_27_bits_gets_a_time_extend_record() {
        let mut p = Page::default();
        assert!(p.push(100, &[0; 8]));
        let delta = MAX_DELTA + 1 + 12_345;
        assert!(p.push(100 + delta, &[0; 8]));
        let ext = u32_at(&p, 16 + 12);
        assert_eq!(ext & 31, 30, "time extend");
        assert_eq!(u64::from(ext >> 5) | (u64::from(u32_at(&p, 16 + 16)) << 27), delta);
        assert_eq!(u32_at(&p, 16 + 20), 2, "the record after it has delta 0");
        assert_eq!(p.commit(), 12 + 8 + 12);
        // Exactly the largest delta needs none.
        let mut q = Page::default();
        assert!(q.push(0, &[0; 8]));
        assert!(q.push(MAX_DELTA, &[0; 8]));
        assert_eq!(u32_at(&q, 16 + 12), 2 | ((MAX_DELTA as u32) << 5));
        assert_eq!(q.commit(), 24);
    }

    #[test]
    fn a_record_that_does_not_fit_is_refused_and_leaves_the_page_alone() {
        let mut p = Page::default();
        // 4080 bytes of room: 39 records of 104 (100 data + 4) = 4056, 24 left.
        for i in 0..39 {
            assert!(p.push(i, &[1; 100]));
        }
        assert_eq!(p.commit(), 4056);
        assert!(p.fits(40, 20), "20 + 4 fits exactly");
        assert!(!p.fits(40, 21));
        let before = *p.bytes();
        assert!(!p.push(40, &[1; 24]));
        assert_eq!(p.bytes()[..], before[..]);
        // A time extend counts too: 16 + 4 fits, plus 8 more does not.
        assert!(!p.fits(40 + MAX_DELTA + 1, 16));
        p.clear();
        assert!(p.is_empty());
        assert_eq!(p.bytes()[..], [0; PAGE_SIZE][..]);
    }
}
