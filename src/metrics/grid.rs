//! A run's clock cut into equal cells, filled as requests finish, in memory that does not grow
//! with the run: at most `max` cells whatever its length.
//!
//! Cells are `[k·w, (k+1)·w)` on the run's clock (µs from its start) and are kept only where
//! something fell (a sparse map). When the cells from the first to the last occupied one would
//! be more than `max`, the width doubles and each pair of neighbours `2k, 2k+1` becomes cell
//! `k`: every aggregate a cell holds is a sum, a count, an extreme or a mergeable sketch, so a
//! merged cell holds exactly what one of twice the width would have gathered. The final width
//! is the asked one times the smallest power of two that fits the run, whatever order the
//! requests finished in, so the same requests always give the same cells.

use std::collections::BTreeMap;

/// What a cell gathers: merged with its neighbour when the grid widens.
pub trait Cell: Default {
    fn absorb(&mut self, other: Self);
}

/// The cells of a run, see the module docs.
#[derive(Debug, Clone)]
pub struct Grid<T> {
    width_us: u64,
    max: u64,
    cells: BTreeMap<u64, T>,
}

impl<T: Cell> Grid<T> {
    /// Cells of `width_us` (at least 1 µs), at most `max` (at least 2) from first to last.
    pub fn new(width_us: u64, max: u64) -> Grid<T> {
        Grid {
            width_us: width_us.max(1),
            max: max.max(2),
            cells: BTreeMap::new(),
        }
    }

    /// The width the cells have now, µs.
    pub fn width_us(&self) -> u64 {
        self.width_us
    }

    /// The cell holding time `t_us`, widening the grid first when it would span too many.
    pub fn at(&mut self, t_us: u64) -> &mut T {
        while self.span_with(t_us / self.width_us) > self.max {
            self.widen();
        }
        self.cells.entry(t_us / self.width_us).or_default()
    }

    /// The occupied cells in time order, with their start on the run's clock (µs).
    pub fn cells(&self) -> impl Iterator<Item = (u64, &T)> {
        self.cells.iter().map(|(k, c)| (k * self.width_us, c))
    }

    /// The first and last occupied cell's index.
    pub fn bounds(&self) -> Option<(u64, u64)> {
        Some((*self.cells.keys().next()?, *self.cells.keys().next_back()?))
    }

    /// Every cell from the first occupied to the last, empty ones as `T::default()`, each with
    /// its start (µs); the cells are consumed.
    pub fn into_dense(self) -> Vec<(u64, T)> {
        let Some((lo, hi)) = self.bounds() else {
            return Vec::new();
        };
        let mut cells = self.cells;
        (lo..=hi)
            .map(|k| (k * self.width_us, cells.remove(&k).unwrap_or_default()))
            .collect()
    }

    fn span_with(&self, key: u64) -> u64 {
        match self.bounds() {
            Some((lo, hi)) => hi.max(key) - lo.min(key) + 1,
            None => 1,
        }
    }

    fn widen(&mut self) {
        let old = std::mem::take(&mut self.cells);
        self.width_us *= 2;
        for (k, c) in old {
            match self.cells.entry(k / 2) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(c);
                }
                std::collections::btree_map::Entry::Occupied(mut e) => e.get_mut().absorb(c),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default, Debug, PartialEq)]
    struct Count(u64);
    impl Cell for Count {
        fn absorb(&mut self, other: Count) {
            self.0 += other.0;
        }
    }

    fn fill(times: &[u64], width: u64, max: u64) -> Vec<(u64, u64)> {
        let mut g = Grid::<Count>::new(width, max);
        times.iter().for_each(|t| g.at(*t).0 += 1);
        g.into_dense().into_iter().map(|(s, c)| (s, c.0)).collect()
    }

    #[test]
    fn a_grid_widens_to_the_same_cells_whatever_the_order() {
        let times: Vec<u64> = (0..1000).map(|i| i * 37 % 1000 * 13).collect();
        let mut sorted = times.clone();
        sorted.sort();
        let a = fill(&times, 10, 100);
        assert_eq!(a, fill(&sorted, 10, 100));
        assert!(a.len() <= 100, "{}", a.len());
        // 13,000 µs in cells of 10 µs is 1,300 cells: widened 16 times, to 82 cells of 160 µs.
        assert_eq!(a[1].0, 160);
        assert_eq!(a.iter().map(|c| c.1).sum::<u64>(), 1000);
        // Exactly what a grid of that width from the start gathers.
        assert_eq!(a, fill(&times, 160, 10_000));
    }

    #[test]
    fn empty_cells_between_occupied_ones_are_filled_in() {
        assert_eq!(
            fill(&[5, 35], 10, 100),
            vec![(0, 1), (10, 0), (20, 0), (30, 1)]
        );
        assert!(fill(&[], 10, 100).is_empty());
        // A grid that starts late keeps no cell before its first time.
        assert_eq!(fill(&[1_000_005], 10, 100), vec![(1_000_000, 1)]);
    }
}
