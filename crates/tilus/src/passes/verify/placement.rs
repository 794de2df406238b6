//! Where an instruction may run, from its facts: the threads its scope needs, register tiles
//! used in the group that declared them, shared tiles used before they are freed.

use crate::ir::facts::{Access, Memory, ThreadScope};
use crate::ir::{Inst, Loc};
use crate::passes::context::{Checker, Scope};

pub(super) fn check(c: &mut Checker, inst: &Inst, loc: Loc, scope: &Scope) {
    let p = c.p;
    let facts = inst.facts(p);
    let name = inst.name();
    let threads = scope.threads;
    match facts.scope {
        ThreadScope::Any => {}
        ThreadScope::OneThread => {
            if !scope.single_thread {
                c.err(
                    loc,
                    format!(
                        "{name} runs in a group of {threads} threads: each of them would issue \
                         its own; wrap it in single_thread()"
                    ),
                );
            }
        }
        ThreadScope::OneOrWarp => {
            if !scope.single_thread && (threads != 32 || !scope.base.is_multiple_of(32)) {
                c.err(
                    loc,
                    format!(
                        "{name} is issued once, by one thread or by one warp (an elected lane); \
                         the current group has {threads} threads starting at thread {}: wrap it \
                         in single_thread() or single_warp(..)",
                        scope.base
                    ),
                );
            } else if let (false, Some((at, what, v))) = (scope.single_thread, scope.divergent) {
                c.err(
                    loc,
                    format!(
                        "{name} issued by a warp elects one of its lanes, which needs the whole \
                         warp at once, but it is inside the {what} at {at}, whose condition reads \
                         `{}`, which may differ between threads; move it out of the {what} or \
                         into single_thread()",
                        p.var(v).name
                    ),
                );
            }
        }
        ThreadScope::Warps => {
            if !threads.is_multiple_of(32) || !scope.base.is_multiple_of(32) {
                c.err(
                    loc,
                    format!(
                        "{name} runs on whole warps; the current group has {threads} threads \
                         starting at thread {}",
                        scope.base
                    ),
                );
            }
        }
        ThreadScope::WarpGroup => {
            if threads != 128 || !scope.base.is_multiple_of(128) {
                c.err(
                    loc,
                    format!(
                        "{name} runs on a warp group: 4 consecutive warps starting at a warp index \
                         divisible by 4 (a block of 4 warps, or inside warp_group(..)); here the \
                         group has {threads} threads starting at thread {}",
                        scope.base
                    ),
                );
            }
        }
        ThreadScope::WarpGroups => {
            if threads == 0 || !threads.is_multiple_of(128) || !scope.base.is_multiple_of(128) {
                c.err(
                    loc,
                    format!(
                        "{name} runs on whole warp groups: a multiple of 128 threads starting at \
                         a thread divisible by 128 (the block, or warp_group(..) / \
                         thread_group(..) of whole warp groups); here the group has {threads} \
                         threads starting at thread {}",
                        scope.base
                    ),
                );
            } else if let Some((at, what, v)) = scope.divergent {
                c.err(
                    loc,
                    format!(
                        "{name} must be executed by every warp of its warp groups at once, but \
                         it is inside the {what} at {at}, whose condition reads `{}`, which may \
                         differ between threads; move it out of the {what}",
                        p.var(v).name
                    ),
                );
            }
        }
        ThreadScope::Block => {
            if !scope.is_block {
                c.err(
                    loc,
                    format!("{name} must run in the whole block, outside thread groups"),
                );
            } else if let Some(d) = scope.divergent {
                c.err(loc, divergent_block_message(p, name, d));
            }
        }
        ThreadScope::BlockOnce => {
            if !scope.is_block || scope.loop_depth > 0 {
                c.err(
                    loc,
                    format!(
                        "{name} must run once in the whole block: outside loops and thread groups"
                    ),
                );
            } else if let Some(at) = scope.branch_loc {
                c.err(
                    loc,
                    format!(
                        "{name} must run once in the whole block, not inside the if at {at}: on \
                         the other path it would never run; call it before the if"
                    ),
                );
            }
        }
    }
    for e in &facts.effects {
        let what = if e.role.is_empty() {
            name.to_string()
        } else {
            format!("{name} {}", e.role)
        };
        match e.memory {
            Memory::Register(r) => {
                let d = p.register(r);
                if d.group_threads != threads {
                    let msg = format!(
                        "{what}: register tensor `{}` belongs to a group of {} threads but is used in a group of {threads}",
                        d.name, d.group_threads
                    );
                    c.err_once(loc, msg);
                }
            }
            Memory::Shared(t) => {
                if matches!(e.access, Access::Declare | Access::Release) {
                    continue;
                }
                if let Some(at) = c.freed_shared.get(&t) {
                    let msg = format!(
                        "{name} uses shared tensor `{}` after free_shared at {at}",
                        p.shared(t).name
                    );
                    c.err_once(loc, msg);
                }
            }
            Memory::Global(_) => {}
        }
    }
}

/// Why an instruction that waits for the whole block cannot run under a condition (`at`,
/// `if`/`while`, the variable it reads) that may differ between threads.
pub(super) fn divergent_block_message(
    p: &crate::ir::Program,
    name: &str,
    (at, what, v): (Loc, &str, crate::ir::VarId),
) -> String {
    format!(
        "{name} waits for every thread of the block, inside the {what} at {at}, whose condition \
         reads `{}`, which may differ between the threads of the block: threads that skip the \
         body would never arrive; move it out, or make the condition depend only on arguments, \
         constants, the block index and variables the whole block computes alike",
        p.var(v).name
    )
}
