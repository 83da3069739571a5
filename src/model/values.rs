//! A sample of plain numbers — one figure per run, per window, per scrape — and the few
//! statistics every caller takes of it: mean, variance and standard deviation (n − 1), median,
//! the median absolute deviation, and the logarithms of the positive values (the scale every
//! ratio is judged on). One home for the arithmetic, as criterion's `Sample`: callers never
//! sum and divide themselves. Latency distributions have their own type
//! (`metrics::quantile::Sample`, an HDR histogram); this one holds a handful of values.

/// The factor that makes the median absolute deviation a consistent estimate of a normal
/// distribution's standard deviation: 1 / Φ⁻¹(3/4).
pub const MAD_TO_SD: f64 = 1.4826;

/// Values in the order given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Values(Vec<f64>);

impl Values {
    pub fn new(values: impl IntoIterator<Item = f64>) -> Values {
        Values(values.into_iter().collect())
    }

    /// The natural logarithms of the positive values (the others have none), in order.
    pub fn logs_of_positive(values: impl IntoIterator<Item = f64>) -> Values {
        Values(
            values
                .into_iter()
                .filter(|v| *v > 0.0)
                .map(f64::ln)
                .collect(),
        )
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn as_slice(&self) -> &[f64] {
        &self.0
    }

    /// The arithmetic mean; `None` without values.
    pub fn mean(&self) -> Option<f64> {
        Values::mean_of(&self.0)
    }

    /// The arithmetic mean of a slice, without copying it (a hot loop's); `None` when empty.
    pub fn mean_of(values: &[f64]) -> Option<f64> {
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    }

    /// Σ (x − mean)²: the sum of squares about the mean (0 without values).
    pub fn sum_sq(&self) -> f64 {
        self.mean()
            .map_or(0.0, |m| self.0.iter().map(|x| (x - m).powi(2)).sum())
    }

    /// The sample variance (n − 1); `None` below two values.
    pub fn var(&self) -> Option<f64> {
        (self.0.len() >= 2).then(|| self.sum_sq() / (self.0.len() - 1) as f64)
    }

    /// The sample standard deviation (n − 1); `None` below two values.
    pub fn sd(&self) -> Option<f64> {
        self.var().map(f64::sqrt)
    }

    /// The median (the mean of the two middle values of an even count); `None` without values.
    pub fn median(&self) -> Option<f64> {
        let mut v = self.0.clone();
        v.sort_by(f64::total_cmp);
        let k = v.len();
        (k > 0).then(|| (v[(k - 1) / 2] + v[k / 2]) / 2.0)
    }

    /// The absolute deviations from the median, in order; empty without values.
    pub fn deviations(&self) -> Values {
        match self.median() {
            Some(m) => Values(self.0.iter().map(|x| (x - m).abs()).collect()),
            None => Values::default(),
        }
    }

    /// The median absolute deviation, unscaled (× [`MAD_TO_SD`] estimates a normal σ).
    pub fn mad(&self) -> Option<f64> {
        self.deviations().median()
    }
}

impl FromIterator<f64> for Values {
    fn from_iter<I: IntoIterator<Item = f64>>(iter: I) -> Values {
        Values::new(iter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_statistics_of_a_few_values() {
        let v = Values::new([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(v.mean(), Some(5.0));
        assert_eq!(v.sum_sq(), 32.0);
        assert!((v.var().unwrap() - 32.0 / 7.0).abs() < 1e-12);
        assert_eq!(v.median(), Some(4.5));
        assert_eq!(v.mad(), Some(0.5));
        assert_eq!(Values::new([3.0]).sd(), None);
        assert_eq!(Values::default().mean(), None);
        assert_eq!(Values::default().median(), None);
        let logs = Values::logs_of_positive([1.0, 0.0, -2.0, std::f64::consts::E]);
        assert_eq!(logs.as_slice(), &[0.0, 1.0]);
    }
}
