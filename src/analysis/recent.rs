//! The last few of something a flow seldom has (READs, gaps, resends), in a ring that grows to its size as
//! they come: most flows never have one, many have one (a requester's first request remembers the PSNs
//! before it as a gap), held in place, and allocate nothing for it.
use smallvec::SmallVec;

#[derive(Debug, Clone)]
pub(crate) struct Recent<T, const N: usize> {
    /// At most N; once full, the oldest is overwritten.
    kept: SmallVec<[T; 1]>,
    /// How many were ever kept: the newest is at `(at - 1) % N`.
    at: usize,
}

impl<T, const N: usize> Default for Recent<T, N> {
    fn default() -> Self {
        Recent {
            kept: SmallVec::new(),
            at: 0,
        }
    }
}

impl<T: Copy, const N: usize> Recent<T, N> {
    /// Keeps `item`, in place of the oldest once N are kept.
    pub(crate) fn keep(&mut self, item: T) {
        if self.kept.len() < N {
            // The first is held in place; the growth after it doubles up to N.
            if self.kept.len() == self.kept.capacity() {
                self.kept
                    .reserve_exact((2 * self.kept.len()).min(N) - self.kept.len());
            }
            self.kept.push(item);
        } else if let Some(slot) = self.kept.get_mut(self.at % N) {
            *slot = item;
        }
        self.at += 1;
    }

    /// Those kept, in the ring's order (not their age).
    pub(crate) fn slots(&self) -> &[T] {
        &self.kept
    }

    pub(crate) fn slots_mut(&mut self) -> &mut [T] {
        &mut self.kept
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
    fn keeps_the_last_n_in_room_grown_to_n() {
        let mut r: Recent<u32, 3> = Recent::default();
        assert_eq!(r.newest(), None);
        assert!(r.slots().is_empty());
        r.keep(1);
        assert!(!r.kept.spilled());
        r.keep(2);
        assert_eq!(r.slots(), &[1, 2]);
        r.keep(3);
        assert_eq!(r.kept.capacity(), 3);
        r.keep(4);
        assert_eq!(r.slots(), &[4, 2, 3]);
        assert_eq!(r.newest_first().collect::<Vec<_>>(), vec![4, 3, 2]);
        r.slots_mut()[1] = 9;
        assert_eq!(r.newest_first().collect::<Vec<_>>(), vec![4, 3, 9]);
    }
}
