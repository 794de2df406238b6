//! Asynchronous groups as the passes see them, in program order: operations are issued into
//! the open group of their kind, `commit` closes it, `wait(n)` retires every committed group
//! but the newest `n`. Shared by the verifier's hazard rule and the shared-memory planner.

use crate::ir::facts::AsyncGroup;

/// Operations in flight of every group kind.
#[derive(Clone, Debug)]
pub(crate) struct AsyncGroups<T> {
    /// Per kind (in [`kind_index`] order): issued since the last commit, then committed
    /// groups, oldest first.
    open: [Vec<T>; 3],
    committed: [Vec<Vec<T>>; 3],
}

impl<T> Default for AsyncGroups<T> {
    fn default() -> Self {
        AsyncGroups {
            open: [vec![], vec![], vec![]],
            committed: [vec![], vec![], vec![]],
        }
    }
}

fn kind_index(k: AsyncGroup) -> usize {
    match k {
        AsyncGroup::Wgmma => 0,
        AsyncGroup::Bulk => 1,
        AsyncGroup::CpAsync => 2,
    }
}

impl<T> AsyncGroups<T> {
    /// An operation issued into the open group of its kind.
    pub fn issue(&mut self, kind: AsyncGroup, item: T) {
        self.open[kind_index(kind)].push(item);
    }

    /// Closes the open group of a kind.
    pub fn commit(&mut self, kind: AsyncGroup) {
        let k = kind_index(kind);
        let g = std::mem::take(&mut self.open[k]);
        if !g.is_empty() {
            self.committed[k].push(g);
        }
    }

    /// Retires what a `wait_group(pending)` covers: every committed group but the newest
    /// `pending`; with `reads_only`, only the items `is_read` says are reads (the groups' other
    /// items stay in flight, and only groups that still read count towards `pending`).
    pub fn wait(
        &mut self,
        kind: AsyncGroup,
        pending: u32,
        reads_only: bool,
        is_read: impl Fn(&T) -> bool,
    ) -> Vec<T> {
        let groups = &mut self.committed[kind_index(kind)];
        let mut retired = vec![];
        let counted: Vec<usize> = (0..groups.len())
            .filter(|&g| !reads_only || groups[g].iter().any(&is_read))
            .collect();
        let keep = (pending as usize).min(counted.len());
        for &g in &counted[..counted.len() - keep] {
            let items = std::mem::take(&mut groups[g]);
            let (gone, stay): (Vec<T>, Vec<T>) =
                items.into_iter().partition(|i| !reads_only || is_read(i));
            retired.extend(gone);
            groups[g] = stay;
        }
        groups.retain(|g| !g.is_empty());
        retired
    }

    /// Every operation in flight (open or committed), of every kind.
    pub fn in_flight(&self) -> impl Iterator<Item = &T> {
        self.open
            .iter()
            .flatten()
            .chain(self.committed.iter().flatten().flatten())
    }

    /// What may be in flight after either of two paths (the branches of an `if`), from the
    /// state after each: open groups are joined, and committed groups are joined by their age
    /// counted from the newest, so that a later `wait_group(n)` keeps every item that either
    /// path would still keep (an item retired on one path and not the other stays in flight).
    pub fn join(&mut self, other: AsyncGroups<T>)
    where
        T: PartialEq,
    {
        let AsyncGroups { open, committed } = other;
        for (mine, theirs) in self.open.iter_mut().zip(open) {
            union_into(mine, theirs);
        }
        for (mine, theirs) in self.committed.iter_mut().zip(committed) {
            // align the newest groups
            let (n, m) = (mine.len(), theirs.len());
            if m > n {
                let mut older: Vec<Vec<T>> = (0..m - n).map(|_| vec![]).collect();
                older.append(mine);
                *mine = older;
            }
            let offset = mine.len() - m;
            for (i, g) in theirs.into_iter().enumerate() {
                union_into(&mut mine[offset + i], g);
            }
        }
    }

    /// Whether the item at `pred` is in the open (uncommitted) group of its kind.
    pub fn is_uncommitted(&self, pred: impl Fn(&T) -> bool) -> bool {
        self.open.iter().flatten().any(pred)
    }
}

/// Adds the items of `b` that `a` lacks.
fn union_into<T: PartialEq>(a: &mut Vec<T>, b: Vec<T>) {
    for x in b {
        if !a.contains(&x) {
            a.push(x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_join_keeps_what_either_path_keeps() {
        let k = AsyncGroup::Bulk;
        let mut a = AsyncGroups::default();
        a.issue(k, 1);
        a.commit(k);
        let mut b = a.clone();
        // one path waits for everything, the other issues and commits one more group
        a.wait(k, 0, false, |_| false);
        b.issue(k, 2);
        b.commit(k);
        a.join(b);
        let mut left: Vec<i32> = a.in_flight().copied().collect();
        left.sort();
        assert_eq!(left, vec![1, 2]);
        // waiting for all but the newest group keeps 2 (newest on path b)
        let retired = a.wait(k, 1, false, |_| false);
        assert_eq!(retired, vec![1]);
        assert_eq!(a.in_flight().copied().collect::<Vec<_>>(), vec![2]);
    }
}
