//! Rules for mbarriers: counts, indices and who arrives. Whether the transaction bytes a
//! phase expects match the copies issued on it is checked over the facts of every
//! instruction (`verify/transactions.rs`).

use super::Rules;
use crate::ir::{BarrierRef, Loc, MbarrierInst};
use crate::passes::context::{Checker, Scope};

/// `name[i]` for a constant index, else the array's name.
pub(crate) fn bar_name(c: &Checker, b: &BarrierRef) -> String {
    match b.index.as_int() {
        Some(i) => format!("{}[{}]", c.p.barrier(b.array).name, i),
        None => c.p.barrier(b.array).name.clone(),
    }
}

fn check_index(c: &mut Checker, b: &BarrierRef, loc: Loc) {
    let n = c.p.barrier(b.array).counts.len() as i64;
    if let Some(i) = b.index.as_int() {
        if i < 0 || i >= n {
            let name = c.p.barrier(b.array).name.clone();
            c.err(
                loc,
                if i == n {
                    format!(
                        "barrier index {i} or higher is out of range: `{name}` has {n} barrier(s)"
                    )
                } else {
                    format!("barrier index {i} is out of range: `{name}` has {n} barrier(s)")
                },
            );
        }
    }
}

impl Rules for MbarrierInst {
    fn check(&self, c: &mut Checker, loc: Loc, scope: &Scope) {
        match self {
            MbarrierInst::Alloc(id) => {
                let d = c.p.barrier(*id);
                if d.counts.is_empty() || d.counts.iter().any(|&n| n == 0 || n >= (1 << 20)) {
                    let counts = d.counts.clone();
                    c.err(loc, format!("mbarrier.alloc: every count must be between 1 and 2^20 - 1, got {counts:?}"));
                }
            }
            MbarrierInst::Arrive { bar: b, .. } | MbarrierInst::ArriveExpectTx { bar: b, .. } => {
                check_index(c, b, loc);
                let per_thread = match self {
                    MbarrierInst::Arrive { count, .. } => *count,
                    _ => 1,
                };
                if per_thread == 0 || per_thread >= (1 << 20) {
                    c.err(
                        loc,
                        format!(
                            "mbarrier.arrive_count: a count of {per_thread} is outside 1 to 2^20 - 1"
                        ),
                    );
                }
                // At a variable index, even the barrier with the largest count is too small.
                let counts = &c.p.barrier(b.array).counts;
                let count = match b.index.as_int() {
                    Some(i) => usize::try_from(i)
                        .ok()
                        .and_then(|i| counts.get(i))
                        .copied()
                        .unwrap_or(0),
                    None => counts.iter().copied().max().unwrap_or(0),
                };
                let arrivals = u64::from(scope.threads) * u64::from(per_thread);
                if count > 0 && arrivals > u64::from(count) {
                    let who = if per_thread == 1 {
                        format!("{} threads arrive", scope.threads)
                    } else {
                        format!(
                            "{} thread{} arriving {per_thread} times each make {arrivals} arrivals",
                            scope.threads,
                            if scope.threads == 1 { "" } else { "s" }
                        )
                    };
                    let hint = if per_thread == 1 {
                        "wrap it in single_thread() or raise the count"
                    } else {
                        "arrive from fewer threads, lower the count or raise the barrier's"
                    };
                    let msg = format!(
                        "{}: {who} on `{}`, which expects {} arrival{} per phase; {hint}",
                        self.name(),
                        bar_name(c, b),
                        count,
                        if count == 1 { "" } else { "s" }
                    );
                    c.err(loc, msg);
                }
                if let MbarrierInst::ArriveExpectTx { bytes, .. } = self {
                    if let Some(v) = bytes.as_int() {
                        if !(0..(1 << 20)).contains(&v) {
                            c.err(loc, format!("arrive_and_expect_tx: {v} bytes is outside the barrier's transaction range (0 to 2^20 - 1)"));
                        }
                    }
                }
            }
            MbarrierInst::ArriveRemote { bar, .. } => {
                check_index(c, bar, loc);
                if !c.p.clustered {
                    c.err(
                        loc,
                        "mbarrier.arrive_remote in a kernel without clusters: declare them with \
                         k.cluster_blocks([..]), or arrive on this block's barrier with arrive()",
                    );
                }
            }
            MbarrierInst::Wait { bar, .. } => check_index(c, bar, loc),
        }
    }
}
