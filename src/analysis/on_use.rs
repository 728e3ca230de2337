//! A flow's sub-state allocated when it is first changed: a flow that never sends a request holds no PSN
//! tracker, one that never answers holds no responder's counts. Until then it reads as its empty value,
//! so every figure is what an inline state would give.
use std::ops::{Deref, DerefMut};

/// The empty value a sub-state reads as before it is used.
pub trait Empty: Default + 'static {
    fn empty() -> &'static Self;
}

/// Implements [`Empty`] with a static made once.
macro_rules! empty {
    ($($t:ty),* $(,)?) => {$(
        impl $crate::analysis::on_use::Empty for $t {
            fn empty() -> &'static Self {
                static EMPTY: std::sync::OnceLock<$t> = std::sync::OnceLock::new();
                EMPTY.get_or_init(Default::default)
            }
        }
    )*};
}
pub(crate) use empty;

#[derive(Debug, Clone, Default)]
pub struct OnUse<T>(Option<Box<T>>);

impl<T: Empty> OnUse<T> {
    /// It was changed at least once.
    pub fn used(&self) -> bool {
        self.0.is_some()
    }
}

impl<T: Empty> Deref for OnUse<T> {
    type Target = T;

    fn deref(&self) -> &T {
        match &self.0 {
            Some(used) => used,
            None => T::empty(),
        }
    }
}

impl<T: Empty> DerefMut for OnUse<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        self.0.get_or_insert_with(first_use)
    }
}

/// Out of line, so that the change of a sub-state already in use (every packet's) stays a test and a
/// pointer: made inline, a large sub-state's default kept `get_or_insert_with` from being inlined.
#[cold]
#[inline(never)]
fn first_use<T: Default>() -> Box<T> {
    Box::default()
}

#[cfg(test)]
mod tests {
    use super::OnUse;

    #[derive(Debug, Default, PartialEq)]
    struct Counts {
        n: u64,
    }
    empty!(Counts);

    #[test]
    fn reads_empty_and_allocates_when_changed() {
        let mut c: OnUse<Counts> = OnUse::default();
        assert_eq!(c.n, 0);
        assert!(!c.used());
        c.n += 2;
        assert!(c.used());
        assert_eq!(*c, Counts { n: 2 });
    }
}
