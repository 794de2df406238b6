//! Printing from a kernel, for debugging: [`Kernel::printf`] prints a line of text and scalar
//! values, [`Kernel::print_tensor`] a register or shared tile. On the GPU they become device
//! `printf` calls (the text appears on the process's standard output when the launch is
//! synchronized); the interpreter prints the same text (see `interp::Options::output`).
//!
//! Every block that reaches the call prints. To print from one block, put the call in a
//! condition on the block index:
//!
//! ```
//! use tilus::prelude::*;
//!
//! #[derive(Clone, Debug, Hash)]
//! struct Show;
//!
//! impl Script for Show {
//!     type Args = (i32,);
//!     fn body(&self, k: &mut Kernel, (n,): Handles<Self::Args>) {
//!         k.blocks([4]);
//!         k.warps(1);
//!         let b = k.let_i32(k.block_idx().x);
//!         k.if_(b.eq_(2), |k| {
//!             k.name_next("x");
//!             let x = k.register_tensor::<f32>([2, 3], Some(0.5));
//!             k.printf("n = {}, block {}", (n, b));
//!             k.print_tensor(&x);
//!         });
//!     }
//! }
//!
//! let opts = tilus::interp::Options {
//!     output: tilus::interp::Output::Capture,
//!     ..Default::default()
//! };
//! let report = tilus::interpret_with(&Show, (7,), &opts).unwrap();
//! assert_eq!(
//!     report.printed,
//!     "n = 7, block 2\n\
//!      x: f32[2, 3], block (2, 0, 0)\n\
//!      [[      0.5       0.5       0.5]\n \
//!      [      0.5       0.5       0.5]]\n"
//! );
//! ```

use super::{Kernel, RegisterTensor, Scalar, Scalars, SharedTensor};
use crate::ir::{BinOp, DebugInst, Expr, Inst, Loc, SharedDecl, SharedId, StmtKind, VarId};

/// The `(argument, divisor)` facts of `x % c == 0` conditions joined by `and`; `None` for
/// any other condition.
fn divisibility_facts(e: &Expr, out: &mut Vec<(VarId, i64)>) -> Option<()> {
    match e {
        Expr::Binary(BinOp::And, a, b) => {
            divisibility_facts(a, out)?;
            divisibility_facts(b, out)
        }
        Expr::Binary(BinOp::Eq, a, zero) if zero.as_int() == Some(0) => match &**a {
            Expr::Binary(BinOp::Rem, x, c) => match (&**x, c.as_int()) {
                (Expr::Var(v, _), Some(c)) => {
                    out.push((*v, c));
                    Some(())
                }
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// The literal pieces of a format string around its `{}` placeholders (`{{` and `}}` stand for
/// braces), or why it is not one.
fn parse_format(format: &str) -> Result<Vec<String>, String> {
    let mut pieces = vec![String::new()];
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                pieces.last_mut().expect("never empty").push('{');
            }
            '{' if chars.peek() == Some(&'}') => {
                chars.next();
                pieces.push(String::new());
            }
            '{' => {
                return Err(
                    "only `{}` placeholders are supported (write `{{` for a brace)".to_string(),
                )
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                pieces.last_mut().expect("never empty").push('}');
            }
            '}' => return Err("an unmatched `}` (write `}}` for a brace)".to_string()),
            '\0' => return Err("the text may not contain a NUL character".to_string()),
            c => pieces.last_mut().expect("never empty").push(c),
        }
    }
    Ok(pieces)
}

/// A tile [`Kernel::print_tensor`] prints: a [`RegisterTensor`] or a [`SharedTensor`] (or a
/// transposed view of either).
pub trait Printable {
    /// The instruction that prints the tile (declaring what it needs in the kernel).
    #[doc(hidden)]
    fn print_inst(&self, k: &mut Kernel, loc: Loc) -> DebugInst;
}

impl<T> Printable for RegisterTensor<T> {
    fn print_inst(&self, k: &mut Kernel, loc: Loc) -> DebugInst {
        let d = k.prog.register(self.view.tensor);
        let (name, dtype) = (format!("{}_print", d.name), d.dtype);
        let shape = k.prog.view_shape(&self.view);
        // row-major, of the view's shape: laid out and placed by the passes
        let scratch = SharedId(k.prog.shareds.len() as u32);
        k.prog.shareds.push(SharedDecl {
            name,
            dtype,
            shape,
            layout: None,
            offset: None,
            loc,
        });
        DebugInst::PrintRegister {
            src: self.view,
            scratch,
        }
    }
}

impl<T> Printable for SharedTensor<T> {
    fn print_inst(&self, k: &mut Kernel, loc: Loc) -> DebugInst {
        // the tile, a transposed view or one stage (`at`), checked as every shared operand
        DebugInst::PrintShared {
            src: k.shared_operand(self, "print_tensor", true, loc),
        }
    }
}

impl Kernel {
    /// Promises that integer arguments are multiples of constants: `cond` is `x % c == 0`,
    /// or several joined by `and`, with `x` an integer argument of the kernel. Lowering uses
    /// it (a row stride the promise makes a multiple of 4 floats lets loads and stores move
    /// 16 bytes at a time); the launch and the interpreter check it, with the arguments,
    /// before anything runs (an argument error naming the argument and this line); the
    /// generated code passes it on to the CUDA compiler (`__builtin_assume`).
    ///
    /// ```
    /// # use tilus::prelude::*;
    /// # fn body(k: &mut Kernel, n: Val) {
    /// k.assume((n % 8).eq_(0)); // rows of n halves are whole 16-byte vectors
    /// # }
    /// ```
    #[track_caller]
    pub fn assume(&mut self, cond: impl Into<Scalar>) {
        let loc = Loc::caller();
        let cond = cond.into();
        let mut facts = vec![];
        if divisibility_facts(&cond.0, &mut facts).is_none() {
            self.error(
                loc,
                "assume: the condition must be `x % c == 0` (joined by `and`) with `x` an \
                 integer argument of the kernel and `c` a constant: the only promises the \
                 launch can check",
            );
            return;
        }
        for (var, divisor) in facts {
            let inst = DebugInst::Assume { var, divisor };
            self.push(StmtKind::Inst(Inst::Debug(inst)), loc);
        }
    }

    /// Prints one line: `format` with the values of `args` in place of its `{}` placeholders
    /// (`{{` and `}}` print braces), and a newline. Values are integers and conditions
    /// (`true`/`false`); `args` is a tuple or an array, `()` for none:
    /// `k.printf("i = {}, n = {}", (i, n))`.
    ///
    /// The first thread of the current thread group prints (thread 0 of the block outside
    /// thread groups), once in every block that reaches the call.
    #[track_caller]
    pub fn printf(&mut self, format: &str, args: impl Scalars) {
        let loc = Loc::caller();
        let args = args.into_exprs();
        let pieces = match parse_format(format) {
            Ok(p) => p,
            Err(why) => return self.error(loc, format!("printf: {why}")),
        };
        let holes = pieces.len() - 1;
        if holes != args.len() {
            let s = |n: usize| if n == 1 { "" } else { "s" };
            return self.error(
                loc,
                format!(
                    "printf: the text has {holes} placeholder{} (`{{}}`) but {} value{} {} given",
                    s(holes),
                    args.len(),
                    s(args.len()),
                    if args.len() == 1 { "was" } else { "were" }
                ),
            );
        }
        let inst = DebugInst::Printf { pieces, args };
        self.push(StmtKind::Inst(Inst::Debug(inst)), loc);
    }

    /// Prints a tile: a header with its name, element type, shape and the block index, then
    /// its elements row by row, NumPy's way:
    ///
    /// ```text
    /// x: f32[2, 3], block (0, 0, 0)
    /// [[        1         2         3]
    ///  [        4         5         6]]
    /// ```
    ///
    /// Floats print with six significant digits (`%.6g`), integers in decimal, booleans as
    /// `true`/`false`; each row of more than 16 elements continues on the next lines.
    ///
    /// A **register tile** is gathered by the whole block (outside thread groups): every
    /// thread stores its elements into a shared scratch tile the size of the tile, between
    /// block barriers, and thread 0 prints. A **shared tile** is printed as it is by the first
    /// thread of the current group: `sync()` first if other threads wrote it.
    #[track_caller]
    pub fn print_tensor(&mut self, tile: &impl Printable) {
        let loc = Loc::caller();
        let inst = tile.print_inst(self, loc);
        self.push(StmtKind::Inst(Inst::Debug(inst)), loc);
    }
}

#[cfg(test)]
mod tests {
    use super::parse_format;

    #[test]
    fn formats_split_at_placeholders() {
        assert_eq!(parse_format("a {} b {}").unwrap(), ["a ", " b ", ""]);
        assert_eq!(parse_format("{{x}} {}").unwrap(), ["{x} ", ""]);
        assert_eq!(parse_format("none").unwrap(), ["none"]);
        assert!(parse_format("{0}").is_err());
        assert!(parse_format("a } b").is_err());
        assert!(parse_format("a {").is_err());
        assert!(parse_format("nul\0").is_err());
    }
}
