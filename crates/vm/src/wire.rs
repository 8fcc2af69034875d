//! The guest → host channel: a virtio-serial port carrying length-prefixed
//! frames, so results never depend on scraping a console that the kernel
//! also prints to.
//!
//! The stream starts with [`MAGIC`]; then each frame is one kind byte, a
//! little-endian `u32` payload length and the payload. JSON payloads are
//! small; a run's tracefs text travels as raw [`Kind::TraceChunk`] frames.

use serde::{Deserialize, Serialize};

use crate::VmError;

/// First bytes of the stream: names the protocol and its version.
pub const MAGIC: &[u8; 16] = b"SCHEDLAB-VM-v01\n";
/// Largest payload a decoder accepts; a corrupted length fails fast instead
/// of waiting for gigabytes that never come.
pub const MAX_FRAME: usize = 16 << 20;
/// Trace text is sent in chunks of this size.
pub const CHUNK: usize = 1 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// [`GuestInfo`] once the guest's settings are applied.
    Hello = 1,
    /// A progress line, shown on the host as it arrives.
    Log = 2,
    /// A run's [`schedlab_runner::RawCapture`] (without its text).
    RunMeta = 3,
    /// Part of the current run's tracefs text.
    TraceChunk = 4,
    /// The current run is complete.
    RunEnd = 5,
    /// The guest could not go on; the payload says why.
    Error = 6,
    /// Every run is done; the guest powers off next.
    Bye = 7,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Hello,
            2 => Kind::Log,
            3 => Kind::RunMeta,
            4 => Kind::TraceChunk,
            5 => Kind::RunEnd,
            6 => Kind::Error,
            7 => Kind::Bye,
            _ => return None,
        })
    }
}

/// What the guest reports once its kernel settings are in place.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GuestInfo {
    /// `uname -r`.
    pub kernel: String,
    pub nr_cpus: usize,
    /// `/proc/cmdline`.
    pub cmdline: String,
    /// `/proc/uptime` when init started, seconds.
    pub uptime_at_init_s: f64,
    /// debugfs `sched/features` before and after the requested settings.
    pub features_before: String,
    pub features_after: String,
    /// Each setting the guest applied, as "what = value (read back: ...)".
    pub applied: Vec<String>,
}

/// Appends one frame to `out`.
pub fn encode(out: &mut Vec<u8>, kind: Kind, payload: &[u8]) {
    out.push(kind as u8);
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(payload);
}

/// A decoded frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub kind: Kind,
    pub payload: Vec<u8>,
}

/// Incremental decoder: feed it bytes as they arrive, take whole frames.
#[derive(Default)]
pub struct Decoder {
    buf: Vec<u8>,
    pos: usize,
    seen_magic: bool,
    /// Bytes consumed so far (for error messages).
    offset: u64,
}

impl Decoder {
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame, `Ok(None)` when more bytes are needed.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, VmError> {
        let avail = &self.buf[self.pos..];
        if !self.seen_magic {
            if avail.len() < MAGIC.len() {
                return if MAGIC.starts_with(avail) { Ok(None) } else { Err(self.bad_magic(avail)) };
            }
            if &avail[..MAGIC.len()] != MAGIC {
                return Err(self.bad_magic(avail));
            }
            self.seen_magic = true;
            self.advance(MAGIC.len());
            return self.next_frame();
        }
        if avail.len() < 5 {
            return Ok(None);
        }
        let kind = Kind::from_u8(avail[0]).ok_or(VmError::UnknownFrame { offset: self.offset, kind: avail[0] })?;
        let len = u32::from_le_bytes([avail[1], avail[2], avail[3], avail[4]]) as usize;
        if len > MAX_FRAME {
            return Err(VmError::FrameTooLong { offset: self.offset, len });
        }
        if avail.len() < 5 + len {
            return Ok(None);
        }
        let payload = avail[5..5 + len].to_vec();
        self.advance(5 + len);
        Ok(Some(Frame { kind, payload }))
    }

    /// Bytes received that do not yet form a whole frame.
    #[cfg(test)]
    fn pending(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn advance(&mut self, n: usize) {
        self.pos += n;
        self.offset += n as u64;
    }

    fn bad_magic(&self, got: &[u8]) -> VmError {
        VmError::BadMagic { got: String::from_utf8_lossy(&got[..got.len().min(16)]).into_owned() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn stream(frames: &[(Kind, Vec<u8>)]) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        for (k, p) in frames {
            encode(&mut out, *k, p);
        }
        out
    }

    #[test]
    fn wrong_header_and_kind_are_errors() {
        let mut d = Decoder::default();
        d.feed(b"Linux version 6.12");
        assert!(d.next_frame().unwrap_err().to_string().contains("schedlab header"));
        let mut d = Decoder::default();
        let mut s = MAGIC.to_vec();
        s.extend_from_slice(&[9, 0, 0, 0, 0]);
        d.feed(&s);
        assert!(d.next_frame().unwrap_err().to_string().contains("unknown frame kind 9"));
        let mut d = Decoder::default();
        let mut s = MAGIC.to_vec();
        s.extend_from_slice(&[4, 0xff, 0xff, 0xff, 0x7f]);
        d.feed(&s);
        assert!(d.next_frame().unwrap_err().to_string().contains("at most"));
    }

    proptest! {
        /// Whatever way the bytes are split on arrival, the same frames come out, in order.
        #[test]
        fn frames_survive_any_split(
            frames in proptest::collection::vec((1u8..=7, proptest::collection::vec(any::<u8>(), 0..300)), 0..12),
            cuts in proptest::collection::vec(0usize..4000, 0..10),
        ) {
            let frames: Vec<(Kind, Vec<u8>)> = frames.into_iter().map(|(k, p)| (Kind::from_u8(k).unwrap(), p)).collect();
            let bytes = stream(&frames);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            cuts.push(bytes.len());
            cuts.sort_unstable();
            let mut d = Decoder::default();
            let mut got = Vec::new();
            let mut at = 0;
            for c in cuts {
                d.feed(&bytes[at..c]);
                at = c;
                while let Some(f) = d.next_frame().unwrap() {
                    got.push((f.kind, f.payload));
                }
            }
            prop_assert_eq!(got, frames);
            prop_assert_eq!(d.pending(), 0);
        }
    }
}
