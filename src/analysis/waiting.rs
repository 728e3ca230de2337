//! Requests waiting for their answer, in PSN order and bounded: the first held in place (most flows of a
//! scan send one request and allocate nothing for it), more in a queue.
use std::collections::VecDeque;

use super::psn::diff;

#[derive(Debug, Clone, Default)]
pub(crate) enum Waiting<T> {
    #[default]
    None,
    One(T),
    Many(VecDeque<T>),
}

impl<T: Copy> Waiting<T> {
    /// At most this many wait: the oldest goes for a new one.
    pub(crate) const LIMIT: usize = 4096;

    /// Adds a request that waits, in PSN order (`psn` tells its PSN): one that came behind others goes
    /// before them.
    pub(crate) fn wait(&mut self, item: T, psn: impl Fn(&T) -> u32) {
        match self {
            Waiting::None => {
                *self = Waiting::One(item);
                return;
            }
            Waiting::One(first) => *self = Waiting::Many(VecDeque::from([*first])),
            Waiting::Many(_) => {}
        }
        let Waiting::Many(queue) = self else { return };
        if queue.len() == Self::LIMIT {
            queue.pop_front();
        }
        let p = psn(&item);
        let at = queue
            .iter()
            .rposition(|q| diff(psn(q), p) <= 0)
            .map_or(0, |i| i + 1);
        queue.insert(at, item);
    }

    /// The oldest.
    pub(crate) fn front(&self) -> Option<&T> {
        match self {
            Waiting::None => None,
            Waiting::One(only) => Some(only),
            Waiting::Many(queue) => queue.front(),
        }
    }

    /// The newest.
    pub(crate) fn back(&self) -> Option<&T> {
        match self {
            Waiting::None => None,
            Waiting::One(only) => Some(only),
            Waiting::Many(queue) => queue.back(),
        }
    }

    pub(crate) fn pop_front(&mut self) -> Option<T> {
        match self {
            Waiting::None => None,
            Waiting::One(only) => {
                let only = *only;
                *self = Waiting::None;
                Some(only)
            }
            Waiting::Many(queue) => queue.pop_front(),
        }
    }

    /// Those waiting, the oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        let (one, many) = match self {
            Waiting::None => (None, None),
            Waiting::One(only) => (Some(only), None),
            Waiting::Many(queue) => (None, Some(queue)),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    /// None waits any longer (a queue keeps its room).
    pub(crate) fn clear(&mut self) {
        match self {
            Waiting::Many(queue) => queue.clear(),
            _ => *self = Waiting::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Waiting;

    fn psns(w: &Waiting<u32>) -> Vec<u32> {
        w.iter().copied().collect()
    }

    #[test]
    fn one_in_place_more_in_psn_order() {
        let mut w = Waiting::default();
        assert_eq!(w.front(), None);
        w.wait(10, |p| *p);
        assert!(matches!(w, Waiting::One(10)));
        assert_eq!((w.front(), w.back()), (Some(&10), Some(&10)));
        // Behind the first: it goes before it.
        w.wait(8, |p| *p);
        w.wait(11, |p| *p);
        assert_eq!(psns(&w), vec![8, 10, 11]);
        assert_eq!(w.pop_front(), Some(8));
        assert_eq!((w.front(), w.back()), (Some(&10), Some(&11)));
        // Across the PSN wrap (24 bits), 0 comes after 0xffffff.
        let mut w = Waiting::default();
        for psn in [0xff_fffe, 0xff_fffd, 0, 0xff_ffff] {
            w.wait(psn, |p| *p);
        }
        assert_eq!(psns(&w), vec![0xff_fffd, 0xff_fffe, 0xff_ffff, 0]);
        w.clear();
        assert_eq!((w.front(), psns(&w)), (None, vec![]));
    }

    #[test]
    fn the_only_one_popped_leaves_none() {
        let mut w = Waiting::default();
        w.wait(5, |p| *p);
        assert_eq!(w.pop_front(), Some(5));
        assert_eq!(w.pop_front(), None);
        assert!(matches!(w, Waiting::None));
    }

    #[test]
    fn the_oldest_goes_past_the_limit() {
        let mut w = Waiting::default();
        for psn in 0..Waiting::<u32>::LIMIT as u32 + 2 {
            w.wait(psn, |p| *p);
        }
        assert_eq!(w.iter().count(), Waiting::<u32>::LIMIT);
        assert_eq!(w.front(), Some(&2));
    }
}
