//! Strategies. A case is *wild*: operations anywhere, every parameter drawn from valid and
//! invalid values alike; or *tame*: a plausible kernel built from snippets (a TMA load, a
//! `dot`, a `wgmma`, a store, loops and thread groups around them) into which one or two wild
//! operations are inserted. Tame cases get through the verifier to layout inference, shared
//! memory planning and CUDA emission, and their single wild operation probes one rule at a
//! time.
//!
//! This file holds the value strategies every family uses (element types, extents, scalar
//! expressions, tile and barrier handles) and the way cases are put together; each
//! operation's own strategy is in its family's file (`ops/`).

use proptest::prelude::*;

use crate::model::{BarIx, BarRef, Bin, Case, Dt, Edit, Op, Sc, T};
use crate::ops::arith::snippet_arith;
use crate::ops::control::{
    cond, group, snippet_branch, snippet_count, warps, Control, LetKind, To,
};
use crate::ops::cp_async::snippet_copy_async;
use crate::ops::mbarrier::Mbarrier;
use crate::ops::memory::{snippet_load_store, snippet_stage, snippet_store, Memory};
use crate::ops::mma::snippet_dot;
use crate::ops::shape::snippet_views;
use crate::ops::tma::{snippet_tma, snippet_tma_store};
use crate::ops::wgmma::snippet_wgmma;

/// Whether parameters are drawn from plausible values or from all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Tame,
    Wild,
}
pub use Mode::{Tame, Wild};

pub fn dt(m: Mode) -> BoxedStrategy<Dt> {
    match m {
        Tame => prop_oneof![3 => Just(Dt::F16), 1 => Just(Dt::Bf16), 2 => Just(Dt::F32)].boxed(),
        Wild => prop_oneof![
            3 => Just(Dt::F16),
            1 => Just(Dt::Bf16),
            2 => Just(Dt::F32),
            1 => Just(Dt::I32),
        ]
        .boxed(),
    }
}

/// An extent, offset or other integer.
pub fn int(m: Mode) -> BoxedStrategy<i32> {
    let tame = prop::sample::select(vec![16, 32, 64, 64, 128]);
    match m {
        Tame => tame.boxed(),
        Wild => prop_oneof![
            8 => tame,
            3 => prop::sample::select(vec![1, 2, 3, 7, 8, 17, 48, 96, 192, 256, 4096]),
            1 => prop::sample::select(vec![0, -1, -64, i32::MIN]),
            1 => prop::sample::select(vec![1 << 16, 46341, 1 << 20, 1 << 30, i32::MAX]),
        ]
        .boxed(),
    }
}

/// A rank: mostly 2; wild ranks go from 0 (invalid) to 4.
pub fn rank(m: Mode) -> BoxedStrategy<usize> {
    match m {
        Tame => prop_oneof![1 => Just(1usize), 6 => Just(2)].boxed(),
        Wild => prop_oneof![
            1 => Just(0usize),
            4 => Just(1),
            10 => Just(2),
            2 => Just(3),
            1 => Just(4),
        ]
        .boxed(),
    }
}

/// A tile shape.
pub fn dims(m: Mode) -> impl Strategy<Value = Vec<i32>> {
    rank(m).prop_flat_map(move |r| prop::collection::vec(int(m), r))
}

fn bin() -> impl Strategy<Value = Bin> {
    prop::sample::select(vec![
        Bin::Add,
        Bin::Sub,
        Bin::Mul,
        Bin::Div,
        Bin::Rem,
        Bin::And,
        Bin::Or,
        Bin::Xor,
        Bin::Shl,
        Bin::Shr,
        Bin::Lt,
        Bin::Eq,
        Bin::Le,
        Bin::Gt,
        Bin::Ge,
        Bin::Ne,
        Bin::LAnd,
        Bin::LOr,
    ])
}

/// A scalar expression.
pub fn sc(m: Mode) -> BoxedStrategy<Sc> {
    if m == Tame {
        let leaf = prop_oneof![
            4 => prop::sample::select(vec![0, 0, 16, 64, 128]).prop_map(Sc::Lit),
            2 => (0u8..2).prop_map(Sc::Const),
            1 => (0u8..2).prop_map(Sc::Runtime),
            1 => (0usize..4).prop_map(Sc::Val),
            1 => (0u8..2).prop_map(Sc::BlockIdx),
        ];
        return leaf
            .prop_recursive(1, 3, 2, |inner| {
                (prop::bool::ANY, inner.clone(), inner).prop_map(|(mul, a, b)| {
                    Sc::Bin(
                        if mul { Bin::Mul } else { Bin::Add },
                        Box::new(a),
                        Box::new(b),
                    )
                })
            })
            .boxed();
    }
    let leaf = prop_oneof![
        6 => int(Wild).prop_map(Sc::Lit),
        1 => prop::sample::select(vec![0u32, 1, 64, u32::MAX]).prop_map(Sc::LitU),
        2 => (0u8..2).prop_map(Sc::Runtime),
        2 => (0u8..2).prop_map(Sc::Const),
        3 => (0usize..16).prop_map(Sc::Val),
        1 => (0u8..3).prop_map(Sc::BlockIdx),
        1 => prop::sample::select(vec![0.0f32, -0.0, 0.5, -3.25, 1e30, f32::NAN, f32::INFINITY])
            .prop_map(|v| Sc::LitF(v.to_bits())),
    ];
    leaf.prop_recursive(2, 6, 2, |inner| {
        prop_oneof![
            3 => (bin(), inner.clone(), inner.clone())
                .prop_map(|(o, a, b)| Sc::Bin(o, Box::new(a), Box::new(b))),
            1 => (inner.clone(), inner.clone()).prop_map(|(a, b)| Sc::Cdiv(Box::new(a), Box::new(b))),
            1 => inner.clone().prop_map(|a| Sc::Not(Box::new(a))),
            1 => inner.clone().prop_map(|a| Sc::Neg(Box::new(a))),
            1 => (any::<bool>(), inner).prop_map(|(f, a)| Sc::Cast(f, Box::new(a))),
        ]
    })
    .boxed()
}

/// Shapes of global views and offsets: scalar lists, mostly of rank 2.
pub fn scs(m: Mode) -> impl Strategy<Value = Vec<Sc>> {
    rank(m).prop_flat_map(move |r| prop::collection::vec(sc(m), r))
}

/// A tile handle.
pub fn t(m: Mode) -> impl Strategy<Value = T> {
    let (n, p) = match m {
        Tame => (3usize, 0.1),
        Wild => (8, 0.2),
    };
    (0..n, prop::bool::weighted(p)).prop_map(|(idx, transposed)| T { idx, transposed })
}

/// A barrier handle.
pub fn bar(m: Mode) -> BoxedStrategy<BarRef> {
    if m == Tame {
        return (0usize..2)
            .prop_map(|arr| BarRef {
                arr,
                ix: BarIx::Index(0),
            })
            .boxed();
    }
    let ix = prop_oneof![
        6 => (0usize..5).prop_map(BarIx::Index),
        1 => (0usize..16).prop_map(BarIx::At),
        1 => prop::sample::select(vec![-1, 0, 1, 1 << 20, i32::MIN]).prop_map(BarIx::Lit),
    ];
    (0usize..4, ix)
        .prop_map(|(arr, ix)| BarRef { arr, ix })
        .boxed()
}

/// One of `v`.
pub fn u32s(v: &[u32]) -> impl Strategy<Value = u32> {
    prop::sample::select(v.to_vec())
}

/// An extent of a snippet: one of `v`, or now and then any.
pub fn tame_dim(v: &[i32]) -> impl Strategy<Value = i32> {
    prop_oneof![15 => prop::sample::select(v.to_vec()), 1 => int(Wild)]
}

/// One operation with random parameters, of any family (see each family's `arms`); `top`
/// says whether it is at the top level of the body.
fn leaf_op(m: Mode, top: bool) -> BoxedStrategy<Op> {
    prop::strategy::Union::new_weighted(Op::arms(m, top)).boxed()
}

/// A loop's unroll hint: none (`for_range`) or `for_range_unrolled`'s factor, 0 in wild mode
/// (a diagnostic).
fn unroll(m: Mode) -> BoxedStrategy<Option<u32>> {
    let factors = match m {
        Tame => vec![1, 2, 4],
        Wild => vec![0, 1, 2, 3, 4, u32::MAX],
    };
    prop_oneof![3 => Just(None), 1 => prop::sample::select(factors).prop_map(Some)].boxed()
}

/// Wild operations, with loops, conditionals and thread groups nested at most two deep.
pub fn wild_op() -> BoxedStrategy<Op> {
    leaf_op(Wild, true)
        .prop_recursive(2, 16, 4, |inner| {
            let body = prop::collection::vec(inner, 0..4);
            prop_oneof![
                3 => (sc(Wild), sc(Wild), sc(Wild), unroll(Wild), body.clone())
                    .prop_map(|(a, b, c, u, body)| Control::For(a, b, c, u, body).into()),
                3 => (group(Wild), body.clone()).prop_map(|(g, body)| Control::Group(g, body).into()),
                1 => (cond(Wild), body.clone()).prop_map(|(c, body)| Control::If(c, body).into()),
                1 => (cond(Wild), body.clone(), body.clone())
                    .prop_map(|(c, t, e)| Control::IfElse(c, t, e).into()),
                1 => (cond(Wild), body.clone()).prop_map(|(c, body)| Control::While(c, body).into()),
                1 => (sc(Wild), sc(Wild), body).prop_map(|(n, s, body)| Control::Count(n, s, body).into()),
            ]
        })
        .boxed()
}

/// Tame operations in groups of a few: snippets, single operations, loops (some of them a
/// pipeline with a phase variable) and thread groups around them.
fn chunk() -> BoxedStrategy<Vec<Op>> {
    let leaf = prop_oneof![
        4 => leaf_op(Tame, true).prop_map(|o| vec![o]),
        3 => snippet_tma(Sc::Lit(0)),
        3 => snippet_dot(),
        3 => snippet_wgmma(),
        2 => snippet_store(),
        2 => snippet_load_store(),
        2 => snippet_tma_store(),
        2 => snippet_copy_async(),
        3 => snippet_arith(),
        1 => snippet_views(),
        1 => snippet_stage(),
    ];
    leaf.prop_recursive(2, 24, 3, |inner| {
        let nested = prop::collection::vec(inner.clone(), 1..3)
            .prop_map(|b| b.concat())
            .boxed();
        let step = prop::sample::select(vec![16, 32, 64]).prop_map(Sc::Lit);
        prop_oneof![
            2 => (sc(Tame), step.clone(), unroll(Tame), prop::collection::vec(inner, 1..3)).prop_map(
                |(end, step, u, body)| {
                    vec![Control::For(Sc::Lit(0), end, step, u, body.concat()).into()]
                }
            ),
            1 => (group(Tame), prop::collection::vec(leaf_op(Tame, false), 1..4))
                .prop_map(|(g, body)| vec![Control::Group(g, body).into()]),
            1 => snippet_branch(nested.clone()),
            1 => snippet_count(nested),
            // `phase` is the most recent scalar outside the loop; inside, the loop index is
            1 => (snippet_tma(Sc::Val(1)), step).prop_map(|(mut body, step)| {
                body.push(
                    Control::Assign(
                        To::Mutable(0),
                        Sc::Bin(Bin::Xor, Box::new(Sc::Val(1)), Box::new(Sc::LitU(1))),
                    )
                    .into(),
                );
                crate::model::ops![
                    Control::Let(LetKind::VarU32, Sc::LitU(0)),
                    Control::For(Sc::Lit(0), Sc::Const(0), step, None, body),
                ]
            }),
        ]
    })
    .boxed()
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (0usize..8, dt(Wild)).prop_map(|(i, d)| Edit::Register(i, d)),
        (0usize..8, dt(Wild)).prop_map(|(i, d)| Edit::Shared(i, d)),
        (0usize..8, dt(Wild)).prop_map(|(i, d)| Edit::Global(i, d)),
    ]
}

fn wild_case() -> impl Strategy<Value = Case> {
    let prefix = prop_oneof![
        8 => Just(crate::model::ops![Control::Warps(4)]),
        1 => Just(vec![]),
        2 => warps(Wild).prop_map(|w| crate::model::ops![Control::Warps(w)]),
    ];
    let const_value = prop_oneof![6 => int(Wild).prop_map(i64::from), 1 => any::<i64>()];
    let consts = prop_oneof![
        10 => prop::collection::vec(const_value.clone(), 2),
        1 => prop::collection::vec(const_value, 0..4),
    ];
    let edits = prop_oneof![
        8 => Just(vec![]),
        1 => prop::collection::vec(edit(), 1..3),
    ];
    (
        prefix,
        prop::collection::vec(wild_op(), 0..8),
        consts,
        edits,
    )
        .prop_map(|(mut ops, rest, consts, edits)| {
            ops.extend(rest);
            Case { ops, consts, edits }
        })
}

fn tame_case() -> impl Strategy<Value = Case> {
    // `warps`, maybe `blocks` and `min_blocks_per_sm`, views of the f16 inputs and a barrier
    // array
    let blocks = prop_oneof![
        Just(vec![]),
        Just(crate::model::ops![Control::Blocks(vec![
            Sc::Cdiv(Box::new(Sc::Runtime(0)), Box::new(Sc::Lit(64))),
            Sc::Cdiv(Box::new(Sc::Const(0)), Box::new(Sc::Lit(128))),
        ])]),
        Just(crate::model::ops![Control::MinBlocks(1)]),
    ];
    let view = prop_oneof![
        Just(vec![Sc::Const(0), Sc::Const(1)]),
        Just(vec![Sc::Runtime(0), Sc::Const(1)]),
        Just(vec![Sc::Lit(4096), Sc::Lit(4096)]),
    ];
    let prelude = (
        warps(Tame),
        blocks,
        prop::collection::vec(view, 1..3),
        prop::collection::vec(u32s(&[1, 1, 128]), 1..3),
    )
        .prop_map(|(w, blocks, views, counts)| {
            let mut ops = crate::model::ops![Control::Warps(w)];
            ops.extend(blocks);
            // pointer 0 is `Ptr<f16>`
            ops.extend(
                views
                    .into_iter()
                    .map(|v| Op::from(Memory::GlobalView(0, v))),
            );
            ops.push(Mbarrier::Alloc(counts).into());
            ops
        });
    let sprinkled = prop_oneof![
        2 => Just(vec![]),
        2 => prop::collection::vec((any::<usize>(), wild_op()), 1),
        1 => prop::collection::vec((any::<usize>(), wild_op()), 2),
    ];
    let consts = prop::collection::vec(prop::sample::select(vec![64i64, 128, 256, 4096, 100]), 2);
    let edits = prop_oneof![
        19 => Just(vec![]),
        1 => prop::collection::vec(edit(), 1),
    ];
    (
        prelude,
        prop::collection::vec(chunk(), 1..5),
        sprinkled,
        consts,
        edits,
    )
        .prop_map(|(prelude, chunks, sprinkled, consts, edits)| {
            let mut ops = prelude;
            ops.extend(chunks.concat());
            for (at, op) in sprinkled {
                ops.insert(at % (ops.len() + 1), op);
            }
            Case { ops, consts, edits }
        })
}

/// A case: a third wild, two thirds tame.
pub fn case() -> impl Strategy<Value = Case> {
    prop_oneof![1 => wild_case(), 2 => tame_case()]
}
