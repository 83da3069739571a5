//! HDR histograms as text: V2 + deflate serialization (the format HdrHistogram's other
//! implementations read), then base64, so `run.json` can carry them and later runs can be
//! merged or re-analysed without loss.

use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

pub fn encode(h: &Histogram<u64>) -> Result<String, String> {
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut buf)
        .map_err(|e| format!("cannot serialize histogram: {e:?}"))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(buf))
}

pub fn decode(s: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|e| format!("histogram is not base64: {e}"))?;
    let mut h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("histogram does not decode: {e:?}"))?;
    h.auto(true);
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_every_count() {
        let mut h = crate::runner::new_histogram();
        for v in [1u64, 50, 1_000, 123_456, 9_999_999] {
            h.record_n(v, 3).unwrap();
        }
        let back = decode(&encode(&h).unwrap()).unwrap();
        assert_eq!(back, h);
        assert!(decode("!!").is_err());
    }
}
