//! Rules for printing: a `printf` has one value per placeholder, each an integer or a
//! condition; a printed register tile gathers in a scratch tile of its own shape and type.
//! Everything else (the block scope of a register print, the scratch tile's place in shared
//! memory and its size limit) follows from the facts.

use super::Rules;
use crate::ir::{DebugInst, Loc};
use crate::passes::context::{Checker, Scope};

impl Rules for DebugInst {
    fn check(&self, c: &mut Checker, loc: Loc, _scope: &Scope) {
        let p = c.p;
        match self {
            DebugInst::Assume { var, divisor } => {
                let v = p.var(*var);
                if !matches!(v.kind, crate::ir::VarKind::Param(_)) {
                    let msg = format!(
                        "assume: `{}` is not an integer argument of the kernel: only arguments \
                         are checked at launch, so only they can be assumed",
                        v.name
                    );
                    c.err(loc, msg);
                }
                if *divisor < 2 {
                    c.err(loc, format!("assume: a multiple of {divisor} says nothing"));
                }
            }
            DebugInst::Printf { pieces, args } => {
                if pieces.len() != args.len() + 1 {
                    let msg = format!(
                        "printf: the text has {} placeholder(s) but {} value(s) were given",
                        pieces.len().saturating_sub(1),
                        args.len()
                    );
                    c.err(loc, msg);
                }
            }
            DebugInst::PrintRegister { src, scratch } => {
                c.check_view(src, "print_tensor", loc);
                let (d, s) = (p.register(src.tensor), p.shared(*scratch));
                if d.shape.is_empty() {
                    c.err(loc, "print_tensor: a tile needs at least one dimension");
                } else if s.dtype != d.dtype || s.shape != p.view_shape(src) {
                    let msg = format!(
                        "print_tensor: the scratch tile `{}` ({} {:?}) does not hold `{}` ({} {:?})",
                        s.name,
                        s.dtype,
                        s.shape,
                        d.name,
                        d.dtype,
                        p.view_shape(src)
                    );
                    c.err(loc, msg);
                }
            }
            DebugInst::PrintShared { src } => {
                let d = p.shared(src.tensor);
                // the elements the view covers: the tile's, or one stage's (`at`)
                let shape = p.sview_stored_shape(src);
                if d.shape.is_empty() {
                    c.err(loc, "print_tensor: a tile needs at least one dimension");
                } else if src.stage.is_some() {
                    c.check_sview(src, "print_tensor", loc);
                    if src.transposed && shape.len() != 2 {
                        let msg = format!(
                            "print_tensor: a stage of `{}` has {} dimension(s); transpose() \
                             needs 2",
                            d.name,
                            shape.len()
                        );
                        c.err(loc, msg);
                    }
                } else if src.transposed && d.shape.len() != 2 {
                    let msg = format!(
                        "print_tensor: `{}` has {} dimension(s); transpose() needs 2",
                        d.name,
                        d.shape.len()
                    );
                    c.err(loc, msg);
                }
            }
        }
    }
}
