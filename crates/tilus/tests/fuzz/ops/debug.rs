//! Printing: `printf` with matching and mismatched placeholders, `print_tensor` of register
//! tiles (anywhere: inside thread groups and conditions too, where the verifier refuses
//! them), of boolean tiles and of shared tiles.

use proptest::prelude::*;
use tilus::prelude::*;

use crate::model::{Op, Sc, T};
use crate::replay::{on, pick, Replay, R, S};
use crate::strategies::{sc, t, Mode, Tame, Wild};

/// The texts `printf` is given: plain, with placeholders, with escaped braces, with `%`, with
/// placeholders it does not support, and with unmatched braces.
const FORMATS: &[&str] = &[
    "plain text",
    "{}",
    "a = {}, b = {}",
    "{{ {} }} 100% %d %s",
    "{:x}",
    "unmatched } {",
    "é {} \\ \" ? \n",
];

#[derive(Clone, Debug, Hash)]
pub enum Print {
    /// `printf(FORMATS[i], values)`.
    Printf(usize, Vec<Sc>),
    /// `print_tensor` of a register tile.
    Register(T),
    /// `print_tensor` of a boolean tile (`Replay::masks`).
    Mask(usize),
    /// `print_tensor` of a shared tile.
    Shared(T),
    /// `assume(x % c == 0)` of a scalar (an argument, or anything in wild programs).
    Assume(Sc, i32),
}

impl Print {
    pub fn arms(m: Mode, _top: bool) -> Vec<(u32, BoxedStrategy<Op>)> {
        let format = match m {
            Tame => 0usize..4,
            Wild => 0usize..FORMATS.len(),
        };
        let values = match m {
            Tame => prop::collection::vec(sc(Tame), 0..3),
            Wild => prop::collection::vec(sc(Wild), 0..4),
        };
        vec![
            (
                1,
                (format, values)
                    .prop_map(|(f, v)| Print::Printf(f, v).into())
                    .boxed(),
            ),
            (1, t(m).prop_map(|t| Print::Register(t).into()).boxed()),
            (1, (0usize..3).prop_map(|i| Print::Mask(i).into()).boxed()),
            (1, t(m).prop_map(|t| Print::Shared(t).into()).boxed()),
            (
                1,
                (sc(m), prop::sample::select(vec![1, 2, 4, 8, 16, 0, -4]))
                    .prop_map(|(x, c)| Print::Assume(x, c).into())
                    .boxed(),
            ),
        ]
    }

    pub fn replay(&self, r: &mut Replay, k: &mut Kernel) {
        match self {
            Print::Printf(f, values) => {
                let values = r.scalars(values);
                k.printf(FORMATS[f % FORMATS.len()], values);
            }
            Print::Assume(x, c) => {
                let x = r.scalar(x);
                k.assume((x % *c).eq_(0));
            }
            Print::Register(t) => {
                if let Some(t) = r.reg(*t) {
                    on!(t, R, |x: E| k.print_tensor(&x));
                }
            }
            Print::Mask(i) => {
                if let Some(m) = pick(&r.masks, *i) {
                    k.print_tensor(&m);
                }
            }
            Print::Shared(t) => {
                if let Some(s) = r.shared(*t) {
                    on!(s, S, |x: E| k.print_tensor(&x));
                }
            }
        }
    }
}
