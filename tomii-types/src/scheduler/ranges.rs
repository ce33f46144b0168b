//! Worker-range classes: the distinct `worker_lo .. worker_hi` ranges of a graph's nodes, numbered,
//! so that a scheduler can keep one queue per range and find, for a task, its queue and, for a
//! worker, the queues it may serve.
//!
//! Built once at create time; lookups never allocate, except for the message of a failed lookup.
//! Nothing here is `unsafe`, and nothing here decides an order: that is the scheduler's policy.

#![forbid(unsafe_code)]

use super::{InitInfo, Task};

/// The distinct worker ranges of a graph's nodes, numbered `0..len()` in order of first appearance.
///
/// Tasks of one class may run on exactly the same workers, so a queue per class never holds a
/// task that one of the workers serving it must skip. Nearly every graph has a single class (every
/// node on every worker); [`class_of`](Self::class_of) takes a fast path for it.
#[derive(Clone, Debug)]
pub struct RangeClasses {
    /// `(worker_lo, worker_hi)` of each class.
    ranges: Vec<(u32, u32)>,
    /// Per class: the most of its tasks that can be ready at once.
    capacities: Vec<usize>,
    /// Per worker of the run: the classes whose range contains it, in increasing order.
    of_worker: Vec<Vec<usize>>,
    /// Whether there is one class and every worker of the run belongs to it (the usual case).
    single: bool,
}

impl RangeClasses {
    /// Numbers the distinct worker ranges of `init`'s nodes and, for each of `init.workers`, finds
    /// the classes it belongs to.
    pub fn new(init: &InitInfo) -> RangeClasses {
        let mut ranges: Vec<(u32, u32)> = Vec::new();
        let mut capacities: Vec<usize> = Vec::new();
        for node in &init.nodes {
            let range = (node.worker_lo, node.worker_hi);
            let tasks = (node.factor as usize).saturating_mul(init.slots as usize);
            match ranges.iter().position(|&known| known == range) {
                Some(class) => capacities[class] = capacities[class].saturating_add(tasks),
                None => {
                    ranges.push(range);
                    capacities.push(tasks);
                }
            }
        }
        let contains = |&(lo, hi): &(u32, u32), worker: u32| (lo..hi).contains(&worker);
        let of_worker = (0..init.workers)
            .map(|worker| (0..ranges.len()).filter(|&class| contains(&ranges[class], worker)).collect())
            .collect::<Vec<Vec<usize>>>();
        let single = ranges.len() == 1 && of_worker.iter().all(|classes| classes.as_slice() == [0]);
        RangeClasses { ranges, capacities, of_worker, single }
    }

    /// Whether there is one class and every worker belongs to it: then every task is of class 0
    /// and every worker serves it, so a scheduler may skip [`class_of`](Self::class_of) and
    /// [`classes_of`](Self::classes_of) on its hot path.
    #[inline]
    pub fn is_single(&self) -> bool {
        self.single
    }

    /// How many classes there are.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether the graph has no node at all.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The workers of `class`: `(worker_lo, worker_hi)`. Panics if there is no such class.
    pub fn range(&self, class: usize) -> (u32, u32) {
        self.ranges[class]
    }

    /// The most tasks of `class` that can be ready at once: the slots times the instances of its
    /// nodes. A safe queue capacity (it may be 0 for nodes of factor 0). Panics if there is no such
    /// class.
    pub fn capacity(&self, class: usize) -> usize {
        self.capacities[class]
    }

    /// The class of `task`, by its worker range; an error naming the node when no node declared
    /// that range (a host that keeps the contract never sends such a task).
    #[inline]
    pub fn class_of(&self, task: &Task) -> Result<usize, String> {
        let range = (task.worker_lo, task.worker_hi);
        let class = match self.ranges.as_slice() {
            [only] => (*only == range).then_some(0), // every node shares one range: the usual case
            ranges => ranges.iter().position(|&known| known == range),
        };
        class.ok_or_else(|| undeclared(task))
    }

    /// The classes whose range contains `worker`, in order of first appearance; empty for a worker
    /// outside every range, or outside the run's workers.
    #[inline]
    pub fn classes_of(&self, worker: u32) -> &[usize] {
        self.of_worker.get(worker as usize).map_or(&[], Vec::as_slice)
    }
}

#[cold]
fn undeclared(task: &Task) -> String {
    format!("task of node {} has worker range {}..{} that no node declared", task.node, task.worker_lo, task.worker_hi)
}

impl InitInfo {
    /// Fails, naming the node, when a node's worker range is empty or reaches beyond the run's
    /// workers. For schedulers that index per-worker state by the workers of a range.
    pub fn check_worker_ranges(&self) -> Result<(), String> {
        match self.nodes.iter().find(|n| n.worker_lo >= n.worker_hi || n.worker_hi > self.workers) {
            None => Ok(()),
            Some(node) => Err(format!(
                "node {:?} allows workers {}..{}, which is empty or beyond the run's {} workers",
                node.name, node.worker_lo, node.worker_hi, self.workers
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{init, task};
    use super::*;

    #[test]
    fn classes_are_numbered_in_order_of_first_appearance() {
        let classes = RangeClasses::new(&init(4, &[(0, 4), (1, 2), (0, 4), (2, 4), (1, 2)], &[]));
        assert_eq!(classes.len(), 3);
        assert_eq!([classes.range(0), classes.range(1), classes.range(2)], [(0, 4), (1, 2), (2, 4)]);
        // Two nodes of factor 1 share each of the first two classes; 4 slots each.
        assert_eq!([classes.capacity(0), classes.capacity(1), classes.capacity(2)], [8, 8, 4]);
    }

    #[test]
    fn a_task_finds_its_class_by_range() {
        let classes = RangeClasses::new(&init(4, &[(0, 4), (1, 2), (2, 4)], &[]));
        assert_eq!(classes.class_of(&task(0, (0, 4))), Ok(0));
        assert_eq!(classes.class_of(&task(0, (2, 4))), Ok(2));
        let error = classes.class_of(&Task { node: 7, ..task(0, (0, 2)) }).unwrap_err();
        assert_eq!(error, "task of node 7 has worker range 0..2 that no node declared");
    }

    #[test]
    fn the_single_class_fast_path_still_checks_the_range() {
        let classes = RangeClasses::new(&init(2, &[(0, 2)], &[]));
        assert_eq!(classes.class_of(&task(0, (0, 2))), Ok(0));
        assert!(classes.class_of(&task(0, (1, 2))).unwrap_err().contains("1..2"));
        let empty = RangeClasses::new(&init(2, &[], &[]));
        assert!(empty.is_empty());
        assert!(empty.class_of(&task(0, (0, 2))).is_err());
    }

    #[test]
    fn each_worker_belongs_to_the_classes_containing_it() {
        let classes = RangeClasses::new(&init(4, &[(0, 4), (1, 2), (2, 4), (3, 9)], &[]));
        assert_eq!(classes.classes_of(0), [0]);
        assert_eq!(classes.classes_of(1), [0, 1]);
        assert_eq!(classes.classes_of(3), [0, 2, 3]);
        assert!(classes.classes_of(4).is_empty(), "outside the run's workers");
        assert!(RangeClasses::new(&init(2, &[(1, 2)], &[])).classes_of(0).is_empty(), "outside every range");
    }

    #[test]
    fn a_single_class_is_one_range_that_every_worker_serves() {
        assert!(RangeClasses::new(&init(2, &[(0, 2), (0, 2)], &[])).is_single());
        assert!(!RangeClasses::new(&init(2, &[(0, 2), (1, 2)], &[])).is_single(), "two classes");
        assert!(!RangeClasses::new(&init(2, &[(1, 2)], &[])).is_single(), "worker 0 serves no class");
        assert!(!RangeClasses::new(&init(2, &[], &[])).is_single(), "no class");
    }

    #[test]
    fn empty_and_oversized_ranges_are_reported() {
        assert_eq!(init(2, &[(0, 2), (1, 2)], &[]).check_worker_ranges(), Ok(()));
        let empty = init(2, &[(0, 2), (1, 1)], &[]).check_worker_ranges().unwrap_err();
        assert_eq!(empty, "node \"n1\" allows workers 1..1, which is empty or beyond the run's 2 workers");
        assert!(init(2, &[(0, 3)], &[]).check_worker_ranges().unwrap_err().contains("beyond"));
    }
}
