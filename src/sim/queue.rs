//! The event queue: items ordered by `(tick, seq)`, where `seq` is the
//! insertion counter. Two events at the same tick run in the order they were
//! scheduled, so ties never depend on a heap's internal layout.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

pub struct Queue<T> {
    heap: BinaryHeap<Entry<T>>,
    next_seq: u64,
}

struct Entry<T> {
    tick: u64,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.tick, self.seq) == (other.tick, other.seq)
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    /// Reversed: `BinaryHeap` is a max-heap and we want the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.tick, other.seq).cmp(&(self.tick, self.seq))
    }
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            heap: BinaryHeap::new(),
            next_seq: 0,
        }
    }
}

impl<T> Queue<T> {
    pub fn push(&mut self, tick: u64, item: T) {
        self.heap.push(Entry {
            tick,
            seq: self.next_seq,
            item,
        });
        self.next_seq += 1;
    }

    pub fn pop(&mut self) -> Option<(u64, T)> {
        self.heap.pop().map(|entry| (entry.tick, entry.item))
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_tick_first_then_insertion_order() {
        let mut queue = Queue::default();
        queue.push(5, "c");
        queue.push(1, "a");
        queue.push(5, "d");
        queue.push(1, "b");
        let order: Vec<&str> = std::iter::from_fn(|| queue.pop().map(|(_, item)| item)).collect();
        assert_eq!(order, ["a", "b", "c", "d"]);
        assert!(queue.is_empty());
    }
}
