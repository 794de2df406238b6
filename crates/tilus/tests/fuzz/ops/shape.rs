//! Shape: register tiles seen with another shape (`reshape`, `squeeze`, `unsqueeze`) or in
//! part (`slice`), whose layouts may or may not allow it; low-precision elements packed into
//! words and unpacked from them (`pack`, `unpack`, through a cast to the type and back);
//! registers relabelled (`relabel`).

use proptest::prelude::*;
use tilus::prelude::*;

use super::memory::{Init, Memory};
use crate::model::{plain, Dt, Op, Sc, T};
use crate::replay::{on, El, Replay, R};
use crate::strategies::{dims, int, t, tame_dim, Mode, Tame, Wild};

#[derive(Clone, Debug, Hash)]
pub enum Shape {
    Reshape(T, Vec<i32>),
    Squeeze(T, usize),
    Unsqueeze(T, usize),
    /// `slice(tile, dim, start, len)`.
    Slice(T, usize, i32, i32),
    /// `convert_layout(tile)`.
    Convert(T),
    /// `repeat` (`interleave` false) or `repeat_interleave(tile, dim, times)`.
    Repeat(T, usize, i32, bool),
    /// `pack::<i32>(cast::<L>(tile))`, `L` the low-precision type of [`lowp_type`].
    Pack(T, u8),
    /// `cast::<f32>(unpack::<L>(tile))`.
    Unpack(T, u8),
    /// `relabel(tile, rows, cols)`: a `[r, c]` tile a row per thread seen as `[c, r]` a
    /// column per thread (a transpose without moving data); other ranks all in one thread,
    /// relabelled as themselves.
    Relabel(T),
}

/// The low-precision types the pack and unpack ops take, by number.
fn lowp_type(n: u8) -> &'static str {
    ["i4", "f4e2m1", "u2", "i8"][n as usize % 4]
}

/// A dimension index: mostly a real one, in wild mode also past the end.
fn dim(m: Mode) -> BoxedStrategy<usize> {
    match m {
        Tame => (0usize..2).boxed(),
        Wild => prop_oneof![6 => 0usize..3, 1 => Just(7usize)].boxed(),
    }
}

/// A slice's start or length: small numbers and the usual extents.
fn part(m: Mode) -> BoxedStrategy<i32> {
    match m {
        Tame => prop::sample::select(vec![0, 1, 2, 4, 8, 16, 32]).boxed(),
        Wild => prop_oneof![3 => part(Tame), 1 => int(Wild)].boxed(),
    }
}

impl Shape {
    pub fn arms(m: Mode, _top: bool) -> Vec<(u32, BoxedStrategy<Op>)> {
        vec![
            (
                2,
                (t(m), dims(m))
                    .prop_map(|(r, s)| Shape::Reshape(r, s).into())
                    .boxed(),
            ),
            (
                1,
                (t(m), dim(m))
                    .prop_map(|(r, d)| Shape::Squeeze(r, d).into())
                    .boxed(),
            ),
            (
                1,
                (t(m), dim(m))
                    .prop_map(|(r, d)| Shape::Unsqueeze(r, d).into())
                    .boxed(),
            ),
            (
                2,
                (t(m), dim(m), part(m), part(m))
                    .prop_map(|(r, d, s, n)| Shape::Slice(r, d, s, n).into())
                    .boxed(),
            ),
            (1, t(m).prop_map(|r| Shape::Convert(r).into()).boxed()),
            (
                1,
                (
                    t(m),
                    dim(m),
                    prop::sample::select(vec![1, 2, 3, 0]),
                    prop::bool::ANY,
                )
                    .prop_map(|(r, d, n, i)| Shape::Repeat(r, d, n, i).into())
                    .boxed(),
            ),
            (
                1,
                (t(m), 0u8..4)
                    .prop_map(|(r, n)| Shape::Pack(r, n).into())
                    .boxed(),
            ),
            (
                1,
                (t(m), 0u8..4)
                    .prop_map(|(r, n)| Shape::Unpack(r, n).into())
                    .boxed(),
            ),
            (1, t(m).prop_map(|r| Shape::Relabel(r).into()).boxed()),
        ]
    }

    pub fn replay(&self, r: &mut Replay, k: &mut Kernel) {
        let Some(src) = r.reg(self.tile()) else {
            return;
        };
        if let Shape::Pack(_, n) | Shape::Unpack(_, n) = self {
            use tilus::lowp::{F4E2M1, I4, I8, U2};
            let pack = matches!(self, Shape::Pack(..));
            let out = on!(src, R, |x: E| match (lowp_type(*n), pack) {
                ("i4", true) => {
                    let q = k.cast::<I4>(&x);
                    R::I32(k.pack::<i32>(&q))
                }
                ("f4e2m1", true) => {
                    let q = k.cast::<F4E2M1>(&x);
                    R::I32(k.pack::<i32>(&q))
                }
                ("u2", true) => {
                    let q = k.cast::<U2>(&x);
                    R::I32(k.pack::<i32>(&q))
                }
                (_, true) => {
                    let q = k.cast::<I8>(&x);
                    R::I32(k.pack::<i32>(&q))
                }
                ("i4", false) => {
                    let q = k.unpack::<I4>(&x);
                    R::F32(k.cast::<f32>(&q))
                }
                ("f4e2m1", false) => {
                    let q = k.unpack::<F4E2M1>(&x);
                    R::F32(k.cast::<f32>(&q))
                }
                ("u2", false) => {
                    let q = k.unpack::<U2>(&x);
                    R::F32(k.cast::<f32>(&q))
                }
                (_, false) => {
                    let q = k.unpack::<I8>(&x);
                    R::F32(k.cast::<f32>(&q))
                }
            });
            r.regs.push(out);
            return;
        }
        let out = on!(src, R, |x: E| E::r(match self {
            Shape::Reshape(_, shape) => k.reshape(&x, shape.clone()),
            Shape::Squeeze(_, d) => k.squeeze(&x, *d),
            Shape::Unsqueeze(_, d) => k.unsqueeze(&x, *d),
            Shape::Slice(_, d, start, len) => k.slice(&x, *d, *start, *len),
            Shape::Convert(_) => k.convert_layout(&x),
            Shape::Repeat(_, d, n, false) => k.repeat(&x, *d, *n),
            Shape::Repeat(_, d, n, true) => k.repeat_interleave(&x, *d, *n),
            Shape::Relabel(_) => {
                use tilus::layout::RegisterLayout;
                let shape = k.shape_of(&x);
                let (from, to) = match shape[..] {
                    [r, c] => (
                        RegisterLayout::spatial(&[r, 1]).compose(&RegisterLayout::local(&[1, c])),
                        RegisterLayout::spatial(&[1, r]).compose(&RegisterLayout::local(&[c, 1])),
                    ),
                    _ => (RegisterLayout::local(&shape), RegisterLayout::local(&shape)),
                };
                k.relabel(&x, from, to)
            }
            Shape::Pack(..) | Shape::Unpack(..) => unreachable!("replayed above"),
        }));
        r.regs.push(out);
    }

    fn tile(&self) -> T {
        match self {
            Shape::Reshape(t, _)
            | Shape::Squeeze(t, _)
            | Shape::Unsqueeze(t, _)
            | Shape::Slice(t, ..)
            | Shape::Convert(t)
            | Shape::Repeat(t, ..)
            | Shape::Pack(t, _)
            | Shape::Unpack(t, _)
            | Shape::Relabel(t) => *t,
        }
    }
}

/// A tile sliced along its rows, reshaped (flat, or with a unit dimension around it) and
/// stored, which the default layout allows for most shapes and warp counts.
pub fn snippet_views() -> BoxedStrategy<Vec<Op>> {
    (
        tame_dim(&[4, 8, 16, 64]),
        tame_dim(&[32, 64, 128]),
        prop::sample::select(vec![1, 2, 4]),
        prop::bool::ANY,
        prop::sample::select(vec![Dt::F32, Dt::F16]),
    )
        .prop_map(|(rows, cols, take, flat, dt)| {
            let part = (rows / take).max(1);
            // pointer 5 is `PtrMut<f32>`, 1 is `PtrMut<f16>`
            let ptr = if dt == Dt::F32 { 5 } else { 1 };
            let mut ops: Vec<Op> = crate::model::ops![
                Memory::Register(dt, vec![rows, cols], Init::One),
                Shape::Slice(plain(0), 0, rows.saturating_sub(part), part),
            ];
            let view = if flat {
                let n = part.saturating_mul(cols);
                ops.push(Shape::Reshape(plain(0), vec![n]).into());
                vec![Sc::Lit(n)]
            } else {
                ops.push(Shape::Unsqueeze(plain(0), 1).into());
                vec![Sc::Lit(part), Sc::Lit(1), Sc::Lit(cols)]
            };
            let zeros = vec![Sc::Lit(0); view.len()];
            ops.push(Memory::GlobalView(ptr, view).into());
            ops.push(Memory::StoreGlobal(0, plain(0), zeros).into());
            ops
        })
        .boxed()
}
