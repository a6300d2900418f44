//! One helper for the folder's per-file work (reading, checking, linking): spread over the
//! machine's cores, results kept in input order.

/// `f` applied to every item, on up to one thread per core (this thread is one of them: a single
/// item spawns no thread), the results in the order of `items`. A panic in `f` is re-raised here.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    // One item or none: no thread, and no need to know the cores (reading that costs more).
    let workers = if items.len() < 2 { 1 } else { cores().min(items.len()) };
    if workers == 1 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    // Items are taken one at a time, so one slow item (a compile) does not hold up a chunk.
    let work = || {
        let mut mine = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(item) = items.get(i) else { break mine };
            mine.push((i, f(item)));
        }
    };
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let handles: Vec<_> = (1..workers).map(|_| s.spawn(work)).collect();
        let mut all = work();
        for h in handles {
            all.extend(h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        all
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// The cores this process may use, read once (each reading is a few file reads of the cgroup's
/// CPU quota, and a start maps the folder's files three times).
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_the_input_order() {
        let items: Vec<u32> = (0..100).collect();
        let out = super::map(&items, |i| {
            // Uneven work, so threads finish out of order.
            if i % 7 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            i * 2
        });
        assert_eq!(out, (0..100).map(|i| i * 2).collect::<Vec<_>>());
        assert!(super::map(&[] as &[u32], |i| *i).is_empty());
    }
}
