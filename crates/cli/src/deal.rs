//! Dealing weighted items (channels) to bins (threads): the heaviest first, each to the bin
//! with the least weight so far (longest processing time first), so no bin ends far above
//! the average unless one item alone is.

/// The bin of each item (by index in `weights`); ties go to the lower bin.
pub fn least_loaded(weights: &[u64], bins: usize) -> Vec<usize> {
    let bins = bins.max(1);
    let mut order: Vec<usize> = (0..weights.len()).collect();
    // Stable: equal weights keep their order.
    order.sort_by_key(|&i| std::cmp::Reverse(weights[i]));
    let mut load = vec![0u64; bins];
    let mut bin_of = vec![0; weights.len()];
    for i in order {
        let b = (0..bins).min_by_key(|&b| (load[b], b)).unwrap_or(0);
        load[b] += weights[i];
        bin_of[i] = b;
    }
    bin_of
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heaviest_go_first_to_the_least_loaded() {
        // 9 + 1 against 5 + 3 + 1.
        assert_eq!(least_loaded(&[9, 5, 3, 1, 1], 2), [0, 1, 1, 1, 0]);
        assert_eq!(least_loaded(&[1, 1, 1], 3), [0, 1, 2]);
        assert_eq!(least_loaded(&[], 2), Vec::<usize>::new());
    }
}
