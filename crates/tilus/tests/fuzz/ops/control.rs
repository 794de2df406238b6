//! Control: launch configuration, scalar declarations and assignments, loops, conditionals,
//! `while` loops, thread groups, `sync`.

use proptest::prelude::*;
use tilus::prelude::*;

use crate::model::{Bin, Op, Sc};
use crate::replay::{pick, Replay};
use crate::strategies::{sc, u32s, Mode, Tame, Wild};

/// Which scalar declaration.
#[derive(Clone, Copy, Debug, Hash)]
pub enum LetKind {
    LetI32,
    LetU32,
    VarI32,
    VarU32,
    LetF32,
    VarF32,
}

/// The target of `assign`.
#[derive(Clone, Copy, Debug, Hash)]
pub enum To {
    /// A `var_*` scalar (any scalar when there is none).
    Mutable(usize),
    /// Any scalar: arguments, `let_*`, loop variables.
    Any(usize),
}

/// Which thread group.
#[derive(Clone, Copy, Debug, Hash)]
pub enum Group {
    Threads(u32, u32),
    SingleThread,
    SingleWarp(u32),
    /// `warp_group(first_warp)`.
    FourWarps(u32),
    /// `thread_groups(begin, count, copies)`: the group's index becomes a scalar of the body.
    Copies(u32, u32, u32),
}

#[derive(Clone, Debug, Hash)]
pub enum Control {
    Warps(u32),
    Blocks(Vec<Sc>),
    MinBlocks(u32),
    NameNext(&'static str),
    Let(LetKind, Sc),
    Assign(To, Sc),
    /// `for_range(start, end, step, body)`, or `for_range_unrolled` with the factor.
    For(Sc, Sc, Sc, Option<u32>, Vec<Op>),
    Group(Group, Vec<Op>),
    /// `if_(cond, then)`.
    If(Sc, Vec<Op>),
    /// `if_else(cond, then, otherwise)`.
    IfElse(Sc, Vec<Op>, Vec<Op>),
    /// `while_(cond, body)` with any condition (the fuzzer never runs programs, so it need
    /// not end).
    While(Sc, Vec<Op>),
    /// A counted `while` loop, which always ends for a positive step: `let c = var_i32(0);
    /// while_(c < end, { body; c += step })`; `c` is the most recent scalar in the body.
    Count(Sc, Sc, Vec<Op>),
    Sync,
    /// `sync_any(cond != 0)` wherever it lands: the block's answer becomes a scalar of the
    /// body (0 or 1).
    SyncAny(Sc),
    /// `sync_group()` in whatever group the operation lands in.
    SyncGroup,
    /// `fast_divisor(d).divmod(n)`: quotient and remainder become scalars of the body (a
    /// divisor the host cannot compute is a diagnostic).
    FastDivmod(Sc, Sc),
    /// `persistent_blocks(work)`: the blocks launched become a scalar of the body.
    PersistentBlocks(Sc),
    /// `cluster_blocks(dims)` (any numbers, so that the size checks are exercised).
    ClusterBlocks(Vec<u32>),
    /// `cluster_rank()`, which becomes a scalar of the body.
    ClusterRank,
    /// `cluster_sync()` wherever it lands.
    ClusterSync,
    /// `cluster_sync_relaxed()` wherever it lands.
    ClusterSyncRelaxed,
}

const NAMES: &[&str] = &[
    "acc",
    "acc",
    "",
    "int",
    "tilus_x",
    "__y",
    "9lives",
    "a b",
    "é",
    "v",
    "v0",
    "threadIdx",
    "_",
];

/// A thread group: plausible ones in tame mode; out-of-range, misaligned and overflowing
/// ones too in wild mode.
pub fn group(m: Mode) -> BoxedStrategy<Group> {
    match m {
        Tame => prop_oneof![
            3 => Just(Group::SingleThread),
            2 => u32s(&[0, 1, 2, 3]).prop_map(Group::SingleWarp),
            1 => Just(Group::FourWarps(0)),
            1 => (u32s(&[0, 32, 64]), u32s(&[32, 64])).prop_map(|(b, c)| Group::Threads(b, c)),
            1 => (u32s(&[0, 32]), u32s(&[32, 64]), u32s(&[1, 2]))
                .prop_map(|(b, c, n)| Group::Copies(b, c, n)),
        ]
        .boxed(),
        Wild => prop_oneof![
            3 => Just(Group::SingleThread),
            2 => u32s(&[0, 1, 2, 3, 4, u32::MAX]).prop_map(Group::SingleWarp),
            2 => u32s(&[0, 0, 4, 1, 8, u32::MAX]).prop_map(Group::FourWarps),
            2 => (
                u32s(&[0, 0, 32, 64, 1, 127, 128, u32::MAX]),
                u32s(&[1, 32, 64, 128, 0, 31, 96, u32::MAX]),
            )
                .prop_map(|(b, c)| Group::Threads(b, c)),
            1 => (
                u32s(&[0, 32, 128, 1, u32::MAX]),
                u32s(&[1, 32, 64, 128, 0, u32::MAX]),
                u32s(&[1, 2, 3, 0, u32::MAX]),
            )
                .prop_map(|(b, c, n)| Group::Copies(b, c, n)),
        ]
        .boxed(),
    }
}

/// A condition of `if_` or `while_`: comparisons (and their logical combinations) of
/// plausible scalars in tame mode; any scalar expression too in wild mode (integers are true
/// when nonzero).
pub fn cond(m: Mode) -> BoxedStrategy<Sc> {
    let cmp = prop::sample::select(vec![Bin::Lt, Bin::Le, Bin::Gt, Bin::Ge, Bin::Eq, Bin::Ne]);
    let compare = (cmp, sc(m), sc(m)).prop_map(|(o, a, b)| Sc::Bin(o, Box::new(a), Box::new(b)));
    match m {
        Tame => prop_oneof![
            4 => compare.clone(),
            1 => (prop::bool::ANY, compare.clone(), compare)
                .prop_map(|(and, a, b)| Sc::Bin(
                    if and { Bin::LAnd } else { Bin::LOr },
                    Box::new(a),
                    Box::new(b)
                )),
        ]
        .boxed(),
        Wild => prop_oneof![
            3 => compare.clone(),
            1 => compare.prop_map(|c| Sc::Not(Box::new(c))),
            2 => sc(Wild),
        ]
        .boxed(),
    }
}

/// A plausible `if` or `if`/`else` around `body` (and a second body for the `else`).
pub fn snippet_branch(body: BoxedStrategy<Vec<Op>>) -> BoxedStrategy<Vec<Op>> {
    (cond(Tame), body.clone(), prop::option::of(body))
        .prop_map(|(c, then, otherwise)| {
            vec![match otherwise {
                Some(e) => Control::IfElse(c, then, e).into(),
                None => Control::If(c, then).into(),
            }]
        })
        .boxed()
}

/// A counted `while` loop around `body`, up to a plausible bound by a positive step.
pub fn snippet_count(body: BoxedStrategy<Vec<Op>>) -> BoxedStrategy<Vec<Op>> {
    let step = prop::sample::select(vec![1, 16, 64]).prop_map(Sc::Lit);
    (sc(Tame), step, body)
        .prop_map(|(end, step, body)| vec![Control::Count(end, step, body).into()])
        .boxed()
}

/// The argument of `warps`.
pub fn warps(m: Mode) -> BoxedStrategy<u32> {
    match m {
        Tame => prop_oneof![6 => Just(4u32), 1 => Just(8)].boxed(),
        Wild => prop_oneof![
            6 => Just(4u32),
            3 => u32s(&[1, 2, 8, 12, 16, 32]),
            1 => u32s(&[0, 3, 33, u32::MAX]),
        ]
        .boxed(),
    }
}

impl Control {
    /// Single operations (loops and thread groups are made by `strategies`, around other
    /// operations). Tame cases never call `warps`, `blocks` or `min_blocks_per_sm`.
    pub fn arms(m: Mode, _top: bool) -> Vec<(u32, BoxedStrategy<Op>)> {
        let let_kind = prop::sample::select(vec![
            LetKind::LetI32,
            LetKind::LetU32,
            LetKind::VarI32,
            LetKind::VarU32,
            LetKind::LetF32,
            LetKind::VarF32,
        ]);
        let to = match m {
            Tame => (0usize..4).prop_map(To::Mutable).boxed(),
            Wild => prop_oneof![
                (0usize..16).prop_map(To::Mutable),
                (0usize..16).prop_map(To::Any)
            ]
            .boxed(),
        };
        let mut arms = vec![
            (
                1,
                prop::sample::select(NAMES.to_vec())
                    .prop_map(|n| Control::NameNext(n).into())
                    .boxed(),
            ),
            (
                3,
                (let_kind, sc(m))
                    .prop_map(|(k, v)| Control::Let(k, v).into())
                    .boxed(),
            ),
            (
                2,
                (to, sc(m))
                    .prop_map(|(v, e)| Control::Assign(v, e).into())
                    .boxed(),
            ),
            (2, Just(Control::Sync.into()).boxed()),
            (1, sc(m).prop_map(|c| Control::SyncAny(c).into()).boxed()),
            (1, Just(Control::SyncGroup.into()).boxed()),
            (
                1,
                (sc(m), sc(m))
                    .prop_map(|(d, n)| Control::FastDivmod(d, n).into())
                    .boxed(),
            ),
        ];
        if m == Wild {
            arms.push((1, warps(m).prop_map(|w| Control::Warps(w).into()).boxed()));
            arms.push((
                1,
                prop::collection::vec(sc(m), 0..5)
                    .prop_map(|d| Control::Blocks(d).into())
                    .boxed(),
            ));
            arms.push((
                1,
                u32s(&[0, 1, 2, 32, 33, u32::MAX])
                    .prop_map(|n| Control::MinBlocks(n).into())
                    .boxed(),
            ));
            arms.push((
                1,
                sc(m)
                    .prop_map(|w| Control::PersistentBlocks(w).into())
                    .boxed(),
            ));
            arms.push((
                1,
                prop::collection::vec(u32s(&[0, 1, 2, 4, 9]), 1..3)
                    .prop_map(|d| Control::ClusterBlocks(d).into())
                    .boxed(),
            ));
            arms.push((1, Just(Control::ClusterRank.into()).boxed()));
            arms.push((1, Just(Control::ClusterSync.into()).boxed()));
            arms.push((1, Just(Control::ClusterSyncRelaxed.into()).boxed()));
        }
        arms
    }

    pub fn replay(&self, r: &mut Replay, k: &mut Kernel) {
        match self {
            Control::Warps(n) => k.warps(*n),
            Control::Blocks(d) => k.blocks(r.scalars(d)),
            Control::MinBlocks(n) => k.min_blocks_per_sm(*n),
            Control::NameNext(n) => {
                k.name_next(n);
            }
            Control::Let(kind, v) => {
                let v = r.scalar(v);
                let val = match kind {
                    LetKind::LetI32 => k.let_i32(v),
                    LetKind::LetU32 => k.let_u32(v),
                    LetKind::VarI32 => k.var_i32(v),
                    LetKind::VarU32 => k.var_u32(v),
                    LetKind::LetF32 => k.let_f32(v),
                    LetKind::VarF32 => k.var_f32(v),
                };
                r.vals.push(val);
                if matches!(kind, LetKind::VarI32 | LetKind::VarU32 | LetKind::VarF32) {
                    r.muts.push(val);
                }
            }
            Control::Assign(to, v) => {
                let var = match *to {
                    To::Mutable(i) => pick(&r.muts, i).or(pick(&r.vals, i)),
                    To::Any(i) => pick(&r.vals, i),
                };
                if let Some(var) = var {
                    k.assign(var, r.scalar(v));
                }
            }
            Control::For(start, end, step, unroll, body) => {
                let (start, end, step) = (r.scalar(start), r.scalar(end), r.scalar(step));
                let body = |k: &mut Kernel, i| {
                    r.vals.push(i);
                    r.run(k, body);
                };
                match unroll {
                    None => k.for_range(start, end, step, body),
                    Some(u) => k.for_range_unrolled(start, end, step, *u, body),
                }
            }
            Control::Group(Group::Copies(begin, count, copies), body) => {
                k.thread_groups(*begin, *count, *copies, |k, g| {
                    r.vals.push(g);
                    r.run(k, body);
                });
            }
            Control::Group(g, body) => {
                let body = |k: &mut Kernel| r.run(k, body);
                match *g {
                    Group::Threads(begin, count) => k.thread_group(begin, count, body),
                    Group::SingleThread => k.single_thread(body),
                    Group::SingleWarp(w) => k.single_warp(w, body),
                    Group::FourWarps(w) => k.warp_group(w, body),
                    Group::Copies(..) => unreachable!("matched above"),
                }
            }
            Control::If(c, body) => {
                let c = r.scalar(c);
                k.if_(c, |k| r.run(k, body));
            }
            Control::IfElse(c, then, otherwise) => {
                let c = r.scalar(c);
                // both closures replay into the same handles, one after the other
                let r = std::cell::RefCell::new(r);
                k.if_else(
                    c,
                    |k| r.borrow_mut().run(k, then),
                    |k| r.borrow_mut().run(k, otherwise),
                );
            }
            Control::While(c, body) => {
                let c = r.scalar(c);
                k.while_(c, |k| r.run(k, body));
            }
            Control::Count(end, step, body) => {
                let (end, step) = (r.scalar(end), r.scalar(step));
                let c = k.var_i32(0);
                r.vals.push(c);
                r.muts.push(c);
                k.while_(c.lt(end), |k| {
                    r.run(k, body);
                    k.assign(c, c + step);
                });
            }
            Control::Sync => k.sync(),
            Control::SyncAny(c) => {
                let any = k.sync_any(r.scalar(c).ne_(0));
                let v = k.var_i32(0);
                k.if_(any, |k| k.assign(v, 1));
                r.vals.push(v);
            }
            Control::SyncGroup => k.sync_group(),
            Control::FastDivmod(d, n) => {
                let fd = k.fast_divisor(r.scalar(d));
                let (q, rem) = fd.divmod(k, r.scalar(n));
                r.vals.extend([q, rem]);
            }
            Control::PersistentBlocks(w) => {
                let blocks = k.persistent_blocks(r.scalar(w));
                r.vals.push(blocks);
            }
            Control::ClusterBlocks(d) => match d.as_slice() {
                [x] => k.cluster_blocks([*x]),
                [x, y] => k.cluster_blocks([*x, *y]),
                _ => k.cluster_blocks([1, 1, 1]),
            },
            Control::ClusterRank => {
                let rank = k.cluster_rank();
                let rank = k.let_i32(rank);
                r.vals.push(rank);
            }
            Control::ClusterSync => k.cluster_sync(),
            Control::ClusterSyncRelaxed => k.cluster_sync_relaxed(),
        }
    }

    /// The operation without the operations nested in it, for reports.
    pub fn head(&self) -> String {
        match self {
            Control::For(a, b, c, u, _) => format!("For({a:?}, {b:?}, {c:?}, unroll {u:?})"),
            Control::Group(g, _) => format!("Group({g:?})"),
            Control::If(c, _) => format!("If({c:?})"),
            Control::IfElse(c, ..) => format!("IfElse({c:?})"),
            Control::While(c, _) => format!("While({c:?})"),
            Control::Count(n, s, _) => format!("Count({n:?}, {s:?})"),
            op => format!("{op:?}"),
        }
    }

    /// The operation lists nested in a loop, a conditional (both branches) or a thread group.
    pub fn bodies(&self) -> Vec<&Vec<Op>> {
        match self {
            Control::For(.., body)
            | Control::Group(_, body)
            | Control::If(_, body)
            | Control::While(_, body)
            | Control::Count(.., body) => vec![body],
            Control::IfElse(_, then, otherwise) => vec![then, otherwise],
            _ => vec![],
        }
    }

    /// [`Control::bodies`], to change them.
    pub fn bodies_mut(&mut self) -> Vec<&mut Vec<Op>> {
        match self {
            Control::For(.., body)
            | Control::Group(_, body)
            | Control::If(_, body)
            | Control::While(_, body)
            | Control::Count(.., body) => vec![body],
            Control::IfElse(_, then, otherwise) => vec![then, otherwise],
            _ => vec![],
        }
    }
}
