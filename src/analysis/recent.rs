//! The last few of something a flow seldom has (READs, gaps, resends), in a ring allocated at the first:
//! most flows never have one and hold one pointer and a count for it.

#[derive(Debug, Clone)]
pub(crate) struct Recent<T, const N: usize> {
    kept: Option<Box<[T; N]>>,
    /// How many were ever kept: the newest is at `(at - 1) % N`.
    at: usize,
}

impl<T, const N: usize> Default for Recent<T, N> {
    fn default() -> Self {
        Recent { kept: None, at: 0 }
    }
}

impl<T: Copy + Default, const N: usize> Recent<T, N> {
    /// Keeps `item`, in place of the oldest once N are kept.
    pub(crate) fn keep(&mut self, item: T) {
        let kept = self
            .kept
            .get_or_insert_with(|| Box::new([T::default(); N]));
        kept[self.at % N] = item;
        self.at += 1;
    }

    /// Those kept, in the ring's order (not their age).
    pub(crate) fn slots(&self) -> &[T] {
        match &self.kept {
            Some(kept) => &kept[..self.at.min(N)],
            None => &[],
        }
    }

    pub(crate) fn slots_mut(&mut self) -> &mut [T] {
        match &mut self.kept {
            Some(kept) => &mut kept[..self.at.min(N)],
            None => &mut [],
        }
    }

    /// Those kept, the newest first.
    pub(crate) fn newest_first(&self) -> impl Iterator<Item = T> + '_ {
        let slots = self.slots();
        (1..=slots.len()).filter_map(move |back| slots.get((self.at - back) % N).copied())
    }

    pub(crate) fn newest(&self) -> Option<T> {
        self.newest_first().next()
    }
}

#[cfg(test)]
mod tests {
    use super::Recent;

    #[test]
    fn keeps_the_last_n_and_allocates_at_the_first() {
        let mut r: Recent<u32, 3> = Recent::default();
        assert!(r.kept.is_none());
        assert_eq!(r.newest(), None);
        assert!(r.slots().is_empty());
        r.keep(1);
        r.keep(2);
        assert_eq!(r.slots(), &[1, 2]);
        r.keep(3);
        r.keep(4);
        assert_eq!(r.slots(), &[4, 2, 3]);
        assert_eq!(r.newest_first().collect::<Vec<_>>(), vec![4, 3, 2]);
        r.slots_mut()[1] = 9;
        assert_eq!(r.newest_first().collect::<Vec<_>>(), vec![4, 3, 9]);
    }
}
