//! Runs: lists of items that one event carries by index, for events scheduled one after
//! another for the same instant and handled as one. Such events run back to back anyway (the
//! queue breaks ties in scheduling order, so nothing scheduled later comes between them), so
//! one event that handles its run's items in order does what one event each would.
//!
//! A handled run's list is kept, emptied, for the next run: steady state allocates nothing.

/// The lists of the runs under way, by index, and the indexes free for reuse.
#[derive(Debug)]
pub struct Runs<T> {
    lists: Vec<Vec<T>>,
    free: Vec<u32>,
}

impl<T> Default for Runs<T> {
    fn default() -> Self {
        Runs { lists: Vec::new(), free: Vec::new() }
    }
}

impl<T: Copy> Runs<T> {
    /// A new run of `items`, in order; its index, for the event that carries it.
    pub fn start(&mut self, items: impl IntoIterator<Item = T>) -> u32 {
        let run = self.free.pop().unwrap_or_else(|| {
            self.lists.push(Vec::new());
            (self.lists.len() - 1) as u32
        });
        self.lists[run as usize].extend(items);
        run
    }

    /// Run `run`'s items, taken out while they are handled (handling them may start runs of
    /// its own); give them back with [`Runs::put_back`].
    pub fn take(&mut self, run: u32) -> Vec<T> {
        self.lists.get_mut(run as usize).map(std::mem::take).unwrap_or_default()
    }

    /// Ends run `run`: its list, emptied, is kept for the next run.
    pub fn put_back(&mut self, run: u32, mut items: Vec<T>) {
        if let Some(list) = self.lists.get_mut(run as usize) {
            items.clear();
            *list = items;
            self.free.push(run);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_keep_their_items_in_order_and_reuse_ended_runs() {
        let mut r = Runs::default();
        let a = r.start([1, 2, 3]);
        let b = r.start([4]);
        assert_ne!(a, b);
        let items = r.take(a);
        assert_eq!(items, vec![1, 2, 3]);
        // A run started while `a` is handled gets an index of its own.
        let c = r.start([5, 6]);
        assert!(c != a && c != b);
        r.put_back(a, items);
        assert_eq!(r.start([7]), a, "an ended run's index is reused");
        assert_eq!(r.take(a), vec![7], "and its list holds only the new items");
        assert_eq!(r.take(c), vec![5, 6]);
        assert_eq!(r.take(b), vec![4]);
    }
}
