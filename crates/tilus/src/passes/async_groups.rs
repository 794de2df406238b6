//! Asynchronous groups as the passes see them, in program order: operations are issued into
//! the open group of their kind, `commit` closes it, `wait(n)` retires every committed group
//! but the newest `n`. Shared by the verifier's hazard rule and the shared-memory planner.

use crate::ir::facts::AsyncGroup;

/// Operations in flight of every group kind.
#[derive(Clone, Debug)]
pub(crate) struct AsyncGroups<T> {
    /// Per kind (in [`kind_index`] order): issued since the last commit, then committed
    /// groups, oldest first.
    open: [Vec<T>; 2],
    committed: [Vec<Vec<T>>; 2],
}

impl<T> Default for AsyncGroups<T> {
    fn default() -> Self {
        AsyncGroups {
            open: [vec![], vec![]],
            committed: [vec![], vec![]],
        }
    }
}

fn kind_index(k: AsyncGroup) -> usize {
    match k {
        AsyncGroup::Wgmma => 0,
        AsyncGroup::Bulk => 1,
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

    /// Whether the item at `pred` is in the open (uncommitted) group of its kind.
    pub fn is_uncommitted(&self, pred: impl Fn(&T) -> bool) -> bool {
        self.open.iter().flatten().any(pred)
    }
}
