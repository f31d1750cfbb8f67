//! Weighted random selection: one pass to sum, one to find, no allocation.

/// The index whose cumulative weight first exceeds `u · total`, for `u` uniform in [0, 1). Negative, NaN and
/// infinite weights count as 0 (a formula's arithmetic accident must not become a certain pick). `None` when no
/// weight is positive.
pub fn weighted_index(weights: &[f64], u: f64) -> Option<usize> {
    let clean = |w: f64| if w.is_finite() && w > 0.0 { w } else { 0.0 };
    let total: f64 = weights.iter().map(|w| clean(*w)).sum();
    if total <= 0.0 || !total.is_finite() {
        return None;
    }
    let target = u.clamp(0.0, 1.0) * total;
    let mut cumulative = 0.0;
    let mut last_positive = None;
    for (i, w) in weights.iter().enumerate() {
        let w = clean(*w);
        if w > 0.0 {
            cumulative += w;
            last_positive = Some(i);
            if target < cumulative {
                return Some(i);
            }
        }
    }
    // Rounding can leave `target` a hair above the last cumulative sum: the last positive weight owns that edge.
    last_positive
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_by_cumulative_weight_and_skips_zeros() {
        let w = [0.0, 1.0, 0.0, 3.0];
        assert_eq!(weighted_index(&w, 0.0), Some(1));
        assert_eq!(weighted_index(&w, 0.2499), Some(1));
        assert_eq!(weighted_index(&w, 0.25), Some(3));
        assert_eq!(weighted_index(&w, 0.999_999), Some(3));
        assert_eq!(weighted_index(&w, 1.0), Some(3), "u = 1 still lands on a positive weight");
    }

    #[test]
    fn nothing_positive_is_none() {
        assert_eq!(weighted_index(&[], 0.5), None);
        assert_eq!(weighted_index(&[0.0, -1.0, f64::NAN, f64::INFINITY], 0.5), None);
    }
}
