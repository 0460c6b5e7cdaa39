//! Rows measured on a few threads (`durability`'s tables): each item
//! measured once, the results in the items' order whatever finished first.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `measure` of every item of `items`, on `jobs` threads (at least one, at
/// most one per item), in the items' order.
pub fn each<T: Sync, R: Send>(items: &[T], jobs: usize, measure: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, items.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(index) else { break };
                    let result = measure(item);
                    results.lock().expect("no panics while locked")[index] = Some(result);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("no panics while locked")
        .into_iter()
        .map(|result| result.expect("every item was measured"))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_item_once_in_order() {
        let items: Vec<u64> = (0..50).collect();
        assert_eq!(
            super::each(&items, 3, |n| n * 2),
            (0..50).map(|n| n * 2).collect::<Vec<_>>()
        );
        assert!(super::each(&Vec::<u64>::new(), 4, |n| *n).is_empty());
    }
}
