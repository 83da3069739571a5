//! HDR histograms: how `bench` makes them, records into them, and stores them as text.
//!
//! Every latency histogram holds µs at 3 significant digits and resizes itself, so any value
//! is kept to within 0.1 % whatever its magnitude and histograms of several runs add. As text
//! they are V2 + deflate serialized (the format HdrHistogram's other implementations read),
//! then base64, so `run.json` can carry them and later runs can be merged or re-analysed.

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// A new µs histogram: 3 significant digits, auto-resizing.
pub fn new_histogram() -> Histogram<u64> {
    let mut h = Histogram::new(3).expect("3 significant digits is a valid precision");
    h.auto(true);
    h
}

/// Records one value. The histograms auto-resize, so `record` only fails past 2⁶³ µs; the
/// value is then clamped rather than lost. (`saturating_record` would clamp to the *current*
/// range — a few µs for a new histogram — and silently corrupt every large value.)
pub fn record_us(h: &mut Histogram<u64>, v: u64) {
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
}

pub fn encode(h: &Histogram<u64>) -> Result<String, String> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .map_err(|e| format!("cannot serialize histogram: {e}"))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(buf))
}

pub fn decode(s: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|e| format!("histogram is not base64: {e}"))?;
    let mut h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("histogram does not decode: {e}"))?;
    h.auto(true);
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_every_count() {
        let mut h = new_histogram();
        for v in [1u64, 50, 1_000, 123_456, 9_999_999] {
            h.record_n(v, 3).unwrap();
        }
        let back = decode(&encode(&h).unwrap()).unwrap();
        assert_eq!(back, h);
        assert!(decode("!!").is_err());
    }
}
