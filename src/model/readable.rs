//! Numbers as a person reads them in a message: a flag's value echoed back, a count that may
//! have saturated. Never a 300-digit decimal nor 18446744073709551615.

/// A number as a person reads it: as written for ordinary magnitudes (`0.05`, `12`), in
/// scientific notation beyond them (`1e-300`, `1.8e19`), never a 300-digit decimal.
pub fn number(x: f64) -> String {
    let a = x.abs();
    if x != 0.0 && x.is_finite() && !(1e-4..1e9).contains(&a) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// A count that may have saturated (`u64::MAX` from an infinite ratio) or is beyond any
/// practical size: `more than 10^N` from 10^12 up, the count itself below.
pub fn count(n: u64) -> String {
    if n >= 1_000_000_000_000 {
        format!("more than 10^{}", n.ilog10())
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extreme_numbers_read_as_a_person_writes_them() {
        assert_eq!(number(0.05), "0.05");
        assert_eq!(number(12.0), "12");
        assert_eq!(number(1e-300), "1e-300");
        assert_eq!(number(0.0), "0");
        assert!(number(1e-300).len() < 10);
        assert_eq!(count(u64::MAX), "more than 10^19");
        assert_eq!(count(922_337_203_685_477_581), "more than 10^17");
        assert_eq!(count(956), "956");
    }
}
