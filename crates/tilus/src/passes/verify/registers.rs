//! The block's register budget. Registers moved by `set_max_registers` come from a pool of
//! the block's own: what every thread was given at launch ([`launch_registers`] each). A warp
//! group asking for more waits until others have given enough back, so requests beyond the
//! pool would hang the block; and a warp group is moved as a whole, so the block must consist
//! of whole warp groups.

use crate::ir::registers::launch_registers;
use crate::passes::context::Checker;

pub(super) fn check(c: &mut Checker) {
    let Some(first) = c.register_requests.first().copied() else {
        return;
    };
    let p = c.p;
    let threads = p.threads();
    if !threads.is_multiple_of(128) {
        let msg = format!(
            "set_max_registers moves registers between whole warp groups, but the block has {} \
             warps: its last warp group is incomplete; use a multiple of 4 warps",
            threads / 32
        );
        c.err(first.loc, msg);
        return;
    }
    let start = launch_registers(p);
    let groups = (threads / 128) as usize;
    // the most each warp group ever asks for, and where
    let mut peak: Vec<(u32, Option<crate::ir::Loc>)> = vec![(start, None); groups];
    for r in &c.register_requests {
        let first_group = (r.first_thread / 128) as usize;
        // in u64: a group that reaches past the block (the group rule's diagnostic) must not
        // overflow here
        let last_thread = u64::from(r.first_thread) + u64::from(r.threads.max(1)) - 1;
        let last_group = usize::try_from(last_thread / 128).unwrap_or(usize::MAX);
        for g in peak
            .iter_mut()
            .take(last_group.saturating_add(1))
            .skip(first_group)
        {
            if g.1.is_none() || r.registers > g.0 {
                *g = (r.registers, Some(r.loc));
            }
        }
    }
    let pool = u64::from(start) * u64::from(threads);
    let asked: u64 = peak.iter().map(|(n, _)| u64::from(*n) * 128).sum();
    if asked > pool {
        let parts: Vec<String> = peak
            .iter()
            .enumerate()
            .map(|(g, (n, at))| match at {
                Some(at) => format!("warp group {g}: {n} at {at}"),
                None => format!("warp group {g}: {n} (its launch count)"),
            })
            .collect();
        let worst = peak
            .iter()
            .filter_map(|(n, at)| at.map(|l| (*n, l)))
            .max_by_key(|(n, _)| *n)
            .map_or(first.loc, |(_, l)| l);
        let msg = format!(
            "set_max_registers: the warp groups ask for {asked} registers in all ({}), but the \
             block's pool holds {pool} ({threads} threads with {start} each at launch); the \
             requests beyond it would wait forever: lower a count, or free registers in \
             another warp group",
            parts.join("; ")
        );
        c.err(worst, msg);
    }
}
