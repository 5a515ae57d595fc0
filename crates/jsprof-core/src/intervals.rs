//! Sets of time intervals: the runs of a request's own samples, within which a request's
//! [`crate::Recording`] weighs them (closed `[begin, end]` intervals, µs on V8's clock).

/// Sorted, disjoint, closed `[begin, end]` intervals.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct IntervalSet {
    intervals: Vec<(f64, f64)>,
}

impl IntervalSet {
    /// From `[begin0, end0, begin1, end1, …]` in any order; pairs may touch or overlap (merged), an
    /// empty pair (`end < begin`) is dropped. An odd length or a NaN is an error.
    pub(crate) fn from_flat(flat: &[f64]) -> crate::Result<IntervalSet> {
        if !flat.len().is_multiple_of(2) {
            return Err(crate::Error::invalid(
                "intervals need an even number of values (begin, end pairs)",
            ));
        }
        let mut pairs: Vec<(f64, f64)> = Vec::with_capacity(flat.len() / 2);
        for pair in flat.chunks_exact(2) {
            let (begin, end) = (pair[0], pair[1]);
            if begin.is_nan() || end.is_nan() {
                return Err(crate::Error::invalid("interval bounds must be numbers"));
            }
            if end >= begin {
                pairs.push((begin, end));
            }
        }
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut intervals: Vec<(f64, f64)> = Vec::with_capacity(pairs.len());
        for (begin, end) in pairs {
            match intervals.last_mut() {
                Some(last) if begin <= last.1 => last.1 = last.1.max(end),
                _ => intervals.push((begin, end)),
            }
        }
        Ok(IntervalSet { intervals })
    }

    /// Adds `[begin0, end0, …]` pairs (as [`IntervalSet::from_flat`] reads them; a malformed list adds
    /// nothing), merged with those already held.
    pub(crate) fn extend_flat(&mut self, flat: &[f64]) {
        if flat.is_empty() {
            return;
        }
        let mut all: Vec<f64> = self.intervals.iter().flat_map(|&(b, e)| [b, e]).collect();
        all.extend_from_slice(flat);
        if let Ok(set) = IntervalSet::from_flat(&all) {
            *self = set;
        }
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.intervals.is_empty()
    }

    /// Whether `t` lies in one of the intervals.
    #[cfg(test)]
    pub(crate) fn contains(&self, t: f64) -> bool {
        self.index_of(t).is_some()
    }

    /// The index of the interval `t` lies in, if any.
    pub(crate) fn index_of(&self, t: f64) -> Option<usize> {
        // The first interval that ends at or after t is the only candidate.
        let i = self.intervals.partition_point(|&(_, end)| end < t);
        self.intervals.get(i).filter(|&&(begin, _)| begin <= t).map(|_| i)
    }

    /// The `i`-th interval (ascending), as `(begin, end)`.
    pub(crate) fn get(&self, i: usize) -> Option<(f64, f64)> {
        self.intervals.get(i).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_sorts_and_drops_empty_pairs() {
        let set = IntervalSet::from_flat(&[4.0, 6.0, 1.0, 2.0, 2.0, 3.0, 9.0, 8.0, 5.0, 7.0]).unwrap();
        assert_eq!(set.intervals, vec![(1.0, 3.0), (4.0, 7.0)]);
        assert!(set.contains(1.0) && set.contains(3.0) && set.contains(7.0));
        assert!(!set.contains(3.5) && !set.contains(8.5) && !set.contains(0.0));
    }

    #[test]
    fn rejects_odd_lengths_and_nan() {
        assert!(IntervalSet::from_flat(&[1.0]).is_err());
        assert!(IntervalSet::from_flat(&[f64::NAN, 1.0]).is_err());
        assert!(IntervalSet::from_flat(&[]).unwrap().is_empty());
    }

    #[test]
    fn extending_merges_with_what_is_held() {
        let mut set = IntervalSet::from_flat(&[1.0, 2.0, 10.0, 12.0]).unwrap();
        set.extend_flat(&[2.0, 3.0, 20.0, 21.0]);
        assert_eq!(set.intervals, vec![(1.0, 3.0), (10.0, 12.0), (20.0, 21.0)]);
        set.extend_flat(&[5.0]);
        assert_eq!(set.intervals.len(), 3, "a malformed list adds nothing");
        set.extend_flat(&[]);
        assert_eq!(set.intervals.len(), 3);
    }
}
