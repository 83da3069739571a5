//! The `X-Request-Id` bench sends with every request: a UUID (RFC 9562, version 8: its bits
//! are ours to lay out), because servers check the header's form — llama-cpp-python's server
//! (starlette-context's request-id plugin) answers 400 to anything else — that still says which
//! run and which request it was. The first 64 bits hold a hash (FNV-1a) of the run id, the
//! last 62 the request's index, so a server's log lines up with `requests.csv`: the index is
//! the last group read as hexadecimal (with the low 14 bits of the fourth group above it).

/// The header for request `index` of run `run_id`.
pub fn of(run_id: &str, index: u64) -> String {
    let h = run_id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        h >> 32,
        (h >> 16) & 0xffff,
        0x8000 | (h & 0x0fff),
        0x8000 | ((index >> 48) & 0x3fff),
        index & 0xffff_ffff_ffff
    )
}

/// The request index an [`of`] header carries; `None` for any other header.
pub fn index(header: &str) -> Option<u64> {
    let groups: Vec<&str> = header.split('-').collect();
    let lengths: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    if lengths != [8, 4, 4, 4, 12]
        || !groups
            .iter()
            .all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return None;
    }
    let high = u64::from_str_radix(groups[3], 16).ok()? & 0x3fff;
    let low = u64::from_str_radix(groups[4], 16).ok()?;
    Some(high << 48 | low)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_id_is_a_uuid_that_carries_its_index_and_run() {
        for i in [
            0,
            1,
            41,
            0xffff_ffff_ffff,
            0xffff_ffff_ffff + 1,
            (1 << 62) - 1,
        ] {
            let id = of("chat-short-20261205T194723.144Z", i);
            let u = id.as_bytes();
            assert_eq!(id.len(), 36, "{id}");
            assert_eq!(u[14], b'8', "version 8: {id}");
            assert!(b"89ab".contains(&u[19]), "RFC 9562 variant: {id}");
            assert_eq!(index(&id), Some(i), "{id}");
        }
        assert_ne!(of("run-a", 3)[..23], of("run-b", 3)[..23]);
        // validation/pool-race.sh computes the same run prefix in Python.
        assert!(of("chat-short-20261205T194723.144Z", 41)
            .starts_with("a1a3a1c2-8c1a-837c-8000-000000000029"));
        assert_eq!(of("run-a", 3), of("run-a", 3));
        for other in ["run-12", "", "3b7e4c9a-1f2d-4e5b-8a6c-0d9e8f7a6bzz"] {
            assert_eq!(index(other), None, "{other}");
        }
    }
}
