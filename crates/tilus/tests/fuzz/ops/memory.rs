//! Memory: global views, shared and register tiles, `free_shared`, loads, stores and the
//! proxy fence.

use proptest::prelude::*;
use tilus::ir::AtomicOp;
use tilus::prelude::*;

use super::arith::Arith;
use super::control::{Control, Group};
use crate::model::{plain, Dt, Op, Sc, T};
use crate::replay::{by_dt, on, pick, El, Replay, G, P, S};
use crate::strategies::{dims, dt, int, sc, scs, t, tame_dim, Mode, Tame, Wild};

/// The initial value of a register tile.
#[derive(Clone, Copy, Debug, Hash)]
pub enum Init {
    None,
    Zero,
    One,
    MinusHalf,
    Nan,
    Inf,
    Huge,
}

impl Init {
    fn value(self) -> Option<f64> {
        match self {
            Init::None => None,
            Init::Zero => Some(0.0),
            Init::One => Some(1.0),
            Init::MinusHalf => Some(-0.5),
            Init::Nan => Some(f64::NAN),
            Init::Inf => Some(f64::INFINITY),
            Init::Huge => Some(1e300),
        }
    }
}

#[derive(Clone, Debug, Hash)]
pub enum Memory {
    /// A view of pointer argument `ptr` (0..8: f16, mut f16, bf16, mut bf16, f32, ...).
    GlobalView(usize, Vec<Sc>),
    Shared(Dt, Vec<i32>),
    Register(Dt, Vec<i32>, Init),
    FreeShared(T),
    LoadShared(T),
    /// `store_shared(shared, register of the tile's type)`.
    StoreShared(T, T),
    FenceProxyAsync,
    /// `fence_gpu()`.
    FenceGpu,
    /// `store_global(global, register of the view's type, offsets)`.
    StoreGlobal(usize, T, Vec<Sc>),
    /// `global_tensor::<dt>(shape, zeroed)`: a workspace the kernel owns, a new global view.
    Workspace(Dt, Vec<Sc>, bool),
    /// `store_global_where(global, register, offsets, arange(..) < bound)` along the tile's
    /// dimension `dim` (clamped to its rank).
    StoreGlobalWhere(usize, T, Vec<Sc>, usize, Sc),
    /// `store_global_at` (or `atomic_add_at`, `add`) of a tile into a view at coordinates made
    /// of `arange` along each of the first `n` dimensions of the tile.
    Scatter(usize, T, usize, bool),
    /// `tile.at(stage)`: one stage of a shared tile, a new shared handle.
    At(T, Stage),
    /// `global_view_strided(pointer, shape, strides)`.
    GlobalViewStrided(usize, Vec<Sc>, Vec<Sc>),
    /// `load_global(global, offsets, shape)`, or `load_global_or` with a fill value.
    LoadGlobal(usize, Vec<Sc>, Vec<i32>, Option<i32>),
    /// A tile atomic: `(op, global, values, compared values for cas, offsets)`.
    Atomic(AtomicOp, usize, T, T, Vec<Sc>),
    /// A scalar atomic: `(op, global, index, value, compared value for cas)`.
    AtomicScalar(AtomicOp, usize, Vec<Sc>, Sc, Sc),
    /// `load_global_scalar(global, index)`: a new scalar.
    LoadScalar(usize, Vec<Sc>),
}

/// The stage `at` takes.
#[derive(Clone, Copy, Debug, Hash)]
pub enum Stage {
    /// A scalar handle (counting back from the most recent one).
    Val(usize),
    /// A constant (negative, or past the stages, in wild cases).
    Lit(i32),
}

fn stage(m: Mode) -> BoxedStrategy<Stage> {
    match m {
        Tame => (0i32..2).prop_map(Stage::Lit).boxed(),
        Wild => prop_oneof![
            3 => (0i32..3).prop_map(Stage::Lit),
            2 => (0usize..8).prop_map(Stage::Val),
            1 => prop::sample::select(vec![-1, 64, i32::MAX]).prop_map(Stage::Lit),
        ]
        .boxed(),
    }
}

fn atomic_op() -> impl Strategy<Value = AtomicOp> {
    prop::sample::select(vec![
        AtomicOp::Add,
        AtomicOp::Add,
        AtomicOp::Min,
        AtomicOp::Max,
        AtomicOp::Exchange,
        AtomicOp::Cas,
    ])
}

impl Memory {
    /// Shared tiles are allocated only at the top level in tame cases (`top`).
    pub fn arms(m: Mode, top: bool) -> Vec<(u32, BoxedStrategy<Op>)> {
        let init = prop::sample::select(match m {
            Tame => vec![Init::Zero, Init::One, Init::None],
            Wild => vec![
                Init::None,
                Init::Zero,
                Init::Zero,
                Init::One,
                Init::MinusHalf,
                Init::Nan,
                Init::Inf,
                Init::Huge,
            ],
        });
        let mut arms = vec![
            (
                3,
                (0usize..8, scs(m))
                    .prop_map(|(p, s)| Memory::GlobalView(p, s).into())
                    .boxed(),
            ),
            (
                1,
                (dt(m), scs(m), prop::bool::ANY)
                    .prop_map(|(d, s, z)| Memory::Workspace(d, s, z).into())
                    .boxed(),
            ),
            (
                4,
                (dt(m), dims(m), init)
                    .prop_map(|(d, s, i)| Memory::Register(d, s, i).into())
                    .boxed(),
            ),
            (2, t(m).prop_map(|t| Memory::FreeShared(t).into()).boxed()),
            (3, t(m).prop_map(|t| Memory::LoadShared(t).into()).boxed()),
            (
                2,
                (t(m), t(m))
                    .prop_map(|(s, r)| Memory::StoreShared(s, r).into())
                    .boxed(),
            ),
            (1, Just(Memory::FenceProxyAsync.into()).boxed()),
            (1, Just(Memory::FenceGpu.into()).boxed()),
            (
                2,
                (t(m), stage(m))
                    .prop_map(|(t, s)| Memory::At(t, s).into())
                    .boxed(),
            ),
            (
                3,
                (0usize..8, t(m), scs(m))
                    .prop_map(|(g, r, o)| Memory::StoreGlobal(g, r, o).into())
                    .boxed(),
            ),
            (
                1,
                (0usize..8, t(m), scs(m), 0usize..3, sc(m))
                    .prop_map(|(g, r, o, d, b)| Memory::StoreGlobalWhere(g, r, o, d, b).into())
                    .boxed(),
            ),
            (
                1,
                (0usize..4, t(m), 1usize..4, prop::bool::ANY)
                    .prop_map(|(g, r, n, a)| Memory::Scatter(g, r, n, a).into())
                    .boxed(),
            ),
        ];
        arms.extend([
            (
                2,
                (0usize..8, scs(m), scs(m))
                    .prop_map(|(p, s, st)| Memory::GlobalViewStrided(p, s, st).into())
                    .boxed(),
            ),
            (
                3,
                (0usize..8, scs(m), dims(m), prop::option::of(int(m)))
                    .prop_map(|(g, o, s, f)| Memory::LoadGlobal(g, o, s, f).into())
                    .boxed(),
            ),
            (
                2,
                (atomic_op(), 0usize..8, t(m), t(m), scs(m))
                    .prop_map(|(op, g, v, c, o)| Memory::Atomic(op, g, v, c, o).into())
                    .boxed(),
            ),
            (
                1,
                (atomic_op(), 0usize..8, scs(m), sc(m), sc(m))
                    .prop_map(|(op, g, i, v, c)| Memory::AtomicScalar(op, g, i, v, c).into())
                    .boxed(),
            ),
            (
                1,
                (0usize..8, scs(m))
                    .prop_map(|(g, i)| Memory::LoadScalar(g, i).into())
                    .boxed(),
            ),
        ]);
        if m == Wild || top {
            arms.push((
                4,
                (dt(m), dims(m))
                    .prop_map(|(d, s)| Memory::Shared(d, s).into())
                    .boxed(),
            ));
        }
        arms
    }

    pub fn replay(&self, r: &mut Replay, k: &mut Kernel) {
        match self {
            Memory::GlobalView(ptr, shape) => {
                let shape = r.scalars(shape);
                let g = on!(r.ptrs[ptr % 8], P, |p: E| E::g(k.global_view(p, shape)));
                r.globals.push(g);
            }
            Memory::Workspace(dt, shape, zeroed) => {
                let shape = r.scalars(shape);
                let g = by_dt!(dt, |E| E::g(k.global_tensor::<E>(shape.clone(), *zeroed)));
                r.globals.push(g);
            }
            Memory::Shared(dt, shape) => {
                let s = by_dt!(dt, |E| E::s(k.shared_tensor::<E>(shape.clone())));
                r.shareds.push(s);
            }
            Memory::Register(dt, shape, init) => {
                let t = by_dt!(dt, |E| E::r(
                    k.register_tensor::<E>(shape.clone(), init.value())
                ));
                r.regs.push(t);
            }
            Memory::FreeShared(t) => {
                if let Some(s) = r.shared(*t) {
                    on!(s, S, |x: E| k.free_shared(&x));
                }
            }
            Memory::LoadShared(t) => {
                if let Some(s) = r.shared(*t) {
                    let t = on!(s, S, |x: E| E::r(k.load_shared(&x)));
                    r.regs.push(t);
                }
            }
            Memory::StoreShared(s, t) => {
                if let Some(s) = r.shared(*s) {
                    on!(s, S, |s: E| {
                        if let Some(t) = r.reg_of::<E>(*t) {
                            k.store_shared(&s, &t);
                        }
                    });
                }
            }
            Memory::FenceProxyAsync => k.fence_proxy_async(),
            Memory::FenceGpu => k.fence_gpu(),
            Memory::GlobalViewStrided(ptr, shape, strides) => {
                let (shape, strides) = (r.scalars(shape), r.scalars(strides));
                let g = on!(r.ptrs[ptr % 8], P, |p: E| E::g(
                    k.global_view_strided(p, shape, strides)
                ));
                r.globals.push(g);
            }
            Memory::LoadGlobal(g, offsets, shape, fill) => {
                let Some(g) = pick(&r.globals, *g) else {
                    return;
                };
                let offsets = r.scalars(offsets);
                let t = on!(g, G, |g: E| E::r(match fill {
                    Some(f) => k.load_global_or(&g, offsets, shape.clone(), *f as f64),
                    None => k.load_global(&g, offsets, shape.clone()),
                }));
                r.regs.push(t);
            }
            Memory::Atomic(op, g, v, c, offsets) => {
                let Some(g) = pick(&r.globals, *g) else {
                    return;
                };
                let offsets = r.scalars(offsets);
                let out = on!(g, G, |g: E| {
                    let (Some(v), Some(c)) = (r.reg_of::<E>(*v), r.reg_of::<E>(*c)) else {
                        return;
                    };
                    match op {
                        AtomicOp::Add => {
                            k.atomic_add(&g, &v, offsets);
                            None
                        }
                        AtomicOp::Min => {
                            k.atomic_min(&g, &v, offsets);
                            None
                        }
                        AtomicOp::Max => {
                            k.atomic_max(&g, &v, offsets);
                            None
                        }
                        AtomicOp::Exchange => Some(E::r(k.atomic_exchange(&g, &v, offsets))),
                        AtomicOp::Cas => Some(E::r(k.atomic_cas(&g, &c, &v, offsets))),
                    }
                });
                r.regs.extend(out);
            }
            Memory::AtomicScalar(op, g, index, v, c) => {
                let Some(g) = pick(&r.globals, *g) else {
                    return;
                };
                let (index, v, c) = (r.scalars(index), r.scalar(v), r.scalar(c));
                let old = on!(g, G, |g: E| match op {
                    AtomicOp::Add => k.atomic_add_scalar(&g, index, v),
                    AtomicOp::Min => k.atomic_min_scalar(&g, index, v),
                    AtomicOp::Max => k.atomic_max_scalar(&g, index, v),
                    AtomicOp::Exchange => k.atomic_exchange_scalar(&g, index, v),
                    AtomicOp::Cas => k.atomic_cas_scalar(&g, index, c, v),
                });
                r.vals.push(old);
            }
            Memory::LoadScalar(g, index) => {
                let Some(g) = pick(&r.globals, *g) else {
                    return;
                };
                let index = r.scalars(index);
                let x = on!(g, G, |g: E| k.load_global_scalar(&g, index));
                r.vals.push(x);
            }
            Memory::StoreGlobal(g, t, offsets) => {
                let Some(g) = pick(&r.globals, *g) else {
                    return;
                };
                let offsets = r.scalars(offsets);
                on!(g, G, |g: E| {
                    if let Some(t) = r.reg_of::<E>(*t) {
                        k.store_global(&g, &t, offsets);
                    }
                });
            }
            Memory::StoreGlobalWhere(g, t, offsets, dim, bound) => {
                let Some(g) = pick(&r.globals, *g) else {
                    return;
                };
                let offsets = r.scalars(offsets);
                let bound = r.scalar(bound);
                on!(g, G, |g: E| {
                    if let Some(t) = r.reg_of::<E>(*t) {
                        let shape: Vec<i32> = k.shape_of(&t).iter().map(|&x| x as i32).collect();
                        let d = (*dim).min(shape.len().saturating_sub(1));
                        let keep = k.arange(shape, d).lt(bound);
                        k.store_global_where(&g, &t, offsets, keep);
                    }
                });
            }
            Memory::Scatter(g, t, n, add) => {
                let Some(g) = pick(&r.globals, *g) else {
                    return;
                };
                on!(g, G, |g: E| {
                    if let Some(t) = r.reg_of::<E>(*t) {
                        let shape: Vec<i32> = k.shape_of(&t).iter().map(|&x| x as i32).collect();
                        let at: Vec<Tile<i32>> = (0..*n)
                            .map(|d| k.arange(shape.clone(), d.min(shape.len() - 1)))
                            .collect();
                        if *add {
                            k.atomic_add_at(&g, &t, ScatterAt(at));
                        } else {
                            k.store_global_at(&g, &t, ScatterAt(at));
                        }
                    }
                });
            }
            Memory::At(t, stage) => {
                if let Some(s) = r.shared(*t) {
                    let v = match *stage {
                        Stage::Val(i) => pick(&r.vals, i).unwrap_or(Val::constant(0)),
                        Stage::Lit(i) => Val::constant(i),
                    };
                    let s = on!(s, S, |x: E| E::s(x.at(v)));
                    r.shareds.push(s);
                }
            }
        }
    }
}

/// A register tile (possibly cast) stored through a writable view.
pub fn snippet_store() -> BoxedStrategy<Vec<Op>> {
    (
        prop::collection::vec(tame_dim(&[16, 32, 64, 128]), 1..=2),
        prop::bool::ANY,
        prop::collection::vec(sc(Tame), 2),
        prop::bool::ANY,
    )
        .prop_map(|(shape, cast, offsets, const_shape)| {
            let rank = shape.len();
            let mut ops: Vec<Op> = vec![Memory::Register(Dt::F32, shape.clone(), Init::One).into()];
            // pointer 5 is `PtrMut<f32>`, 1 is `PtrMut<f16>`
            let mut ptr = 5;
            if cast {
                ops.push(Arith::Cast(plain(0), Dt::F16).into());
                ptr = 1;
            }
            let view = if const_shape {
                vec![Sc::Const(0), Sc::Const(1)]
            } else {
                shape.iter().map(|&d| Sc::Lit(d)).collect()
            };
            ops.push(Memory::GlobalView(ptr, view[..rank].to_vec()).into());
            ops.push(Memory::StoreGlobal(0, plain(0), offsets[..rank].to_vec()).into());
            ops
        })
        .boxed()
}

/// One stage of a staged shared tile written from registers and read back.
pub fn snippet_stage() -> BoxedStrategy<Vec<Op>> {
    (
        dt(Tame),
        tame_dim(&[2, 3]),
        prop::collection::vec(tame_dim(&[16, 32, 64]), 2),
        stage(Tame),
    )
        .prop_map(|(dt, stages, shape, s)| {
            let mut tile = vec![stages];
            tile.extend(&shape);
            crate::model::ops![
                Memory::Shared(dt, tile),
                Memory::At(plain(0), s),
                Memory::Register(dt, shape, Init::One),
                Memory::StoreShared(plain(0), plain(0)),
                Memory::LoadShared(plain(0)),
            ]
        })
        .boxed()
}

/// A tile loaded from a view (possibly with a leading dimension, possibly cast), then stored
/// into another, or added into it atomically.
pub fn snippet_load_store() -> BoxedStrategy<Vec<Op>> {
    (
        prop::collection::vec(tame_dim(&[16, 32, 64, 128]), 1..=2),
        prop::bool::ANY,
        prop::collection::vec(sc(Tame), 2),
        prop::sample::select(vec![0u8, 1, 2, 3]),
        prop::option::of(prop::sample::select(vec![-1, 0, 7])),
    )
        .prop_map(|(shape, strided, offsets, end, fill)| {
            let rank = shape.len();
            let view: Vec<Sc> = shape.iter().map(|&d| Sc::Lit(d)).collect();
            // pointer 4 is `Ptr<f32>`, 5 `PtrMut<f32>`, 1 `PtrMut<f16>`
            let mut ops: Vec<Op> = vec![if strided {
                let mut st = vec![Sc::Lit(1); rank];
                if rank == 2 {
                    st[0] = Sc::Const(0);
                }
                Memory::GlobalViewStrided(4, view[..rank].to_vec(), st).into()
            } else {
                Memory::GlobalView(4, view[..rank].to_vec()).into()
            }];
            ops.push(Memory::LoadGlobal(0, offsets[..rank].to_vec(), shape.clone(), fill).into());
            match end {
                0 => {
                    ops.push(Memory::GlobalView(5, view[..rank].to_vec()).into());
                    ops.push(Memory::StoreGlobal(0, plain(0), offsets[..rank].to_vec()).into());
                }
                1 => {
                    ops.push(Arith::Cast(plain(0), Dt::F16).into());
                    ops.push(Memory::GlobalView(1, view[..rank].to_vec()).into());
                    ops.push(Memory::StoreGlobal(0, plain(0), offsets[..rank].to_vec()).into());
                }
                3 => {
                    // a counter bumped by one thread (pointer 7 is `PtrMut<i32>`)
                    ops.push(Memory::GlobalView(7, vec![Sc::Lit(4)]).into());
                    let i = vec![Sc::Lit(1)];
                    let bump = Memory::AtomicScalar(AtomicOp::Add, 0, i, Sc::Lit(1), Sc::Lit(0));
                    ops.push(Control::Group(Group::SingleThread, vec![bump.into()]).into());
                }
                _ => {
                    ops.push(Memory::GlobalView(5, view[..rank].to_vec()).into());
                    ops.push(
                        Memory::Atomic(
                            AtomicOp::Add,
                            0,
                            plain(0),
                            plain(0),
                            offsets[..rank].to_vec(),
                        )
                        .into(),
                    );
                }
            }
            ops
        })
        .boxed()
}

/// Coordinates of any count, for the fuzzer's scatters.
struct ScatterAt(Vec<Tile<i32>>);

impl tilus::lang::IndexTiles for ScatterAt {
    fn into_tiles(self) -> Vec<Tile<i32>> {
        self.0
    }
}
