//! Which stage of a staged tile (`sa.at(s)`) an access touches, as the verifier's walks see
//! it. The static rules over asynchronous operands and proxy fences report a conflict between
//! two accesses to one tile only when they touch the same bytes for certain: one of them covers
//! the whole tile, both name the same constant stage, or both name it with the same expression
//! of variables that nothing wrote in between. Two runtime indices that may differ are left to
//! the interpreter, which compares the stages a run computes; reporting them here would reject
//! every pipeline that fills one stage while the tensor cores read another.

use crate::ir::{Expr, VarId};
use std::collections::HashMap;

/// The walk's clock: one tick per statement, and when each variable was last written.
#[derive(Clone, Debug, Default)]
pub(super) struct Clock {
    now: usize,
    written: HashMap<VarId, usize>,
}

/// Where an access was seen: the stage index it names (`None`: the whole tile) and the clock.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Stage {
    index: Option<Expr>,
    at: usize,
}

impl Stage {
    /// The stage index (`None`: the whole tile).
    pub fn index(&self) -> Option<&Expr> {
        self.index.as_ref()
    }
}

impl Clock {
    /// Advances to the next statement.
    pub fn tick(&mut self) {
        self.now += 1;
    }

    /// A variable is written (a `let`, an assignment, a loop counter's next value).
    pub fn write(&mut self, v: VarId) {
        self.tick();
        self.written.insert(v, self.now);
    }

    /// The stage an access names now.
    pub fn stamp(&self, index: Option<&Expr>) -> Stage {
        Stage {
            index: index.cloned(),
            at: self.now,
        }
    }

    /// Whether two accesses to one tile touch the same stage for certain.
    pub fn same(&self, a: &Stage, b: &Stage) -> bool {
        let (Some(x), Some(y)) = (&a.index, &b.index) else {
            return true;
        };
        if let (Some(i), Some(j)) = (x.as_int(), y.as_int()) {
            return i == j;
        }
        if x != y {
            return false;
        }
        let since = a.at.min(b.at);
        let mut vars = vec![];
        x.vars(&mut vars);
        vars.iter()
            .all(|v| self.written.get(v).is_none_or(|&w| w < since))
    }

    /// Whether a write to stage `w` replaces everything an earlier write to stage `r` left
    /// (the whole tile, or the same stage for certain).
    pub fn covers(&self, w: &Stage, r: &Stage) -> bool {
        w.index.is_none() || (r.index.is_some() && self.same(w, r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::DType;

    #[test]
    fn stages_are_the_same_only_for_certain() {
        let mut c = Clock::default();
        let s = Expr::Var(VarId(0), DType::I32);
        c.write(VarId(0));
        c.tick();
        let first = c.stamp(Some(&s));
        c.tick();
        assert!(
            c.same(&first, &c.stamp(Some(&s))),
            "same variable, not written since"
        );
        assert!(
            c.same(&first, &c.stamp(None)),
            "the whole tile holds every stage"
        );
        assert!(!c.same(&c.stamp(Some(&Expr::i32(0))), &c.stamp(Some(&Expr::i32(1)))));
        assert!(c.same(&c.stamp(Some(&Expr::i32(1))), &c.stamp(Some(&Expr::i32(1)))));
        c.write(VarId(0));
        assert!(!c.same(&first, &c.stamp(Some(&s))), "written in between");
        let other = Expr::Var(VarId(1), DType::I32);
        assert!(!c.same(&c.stamp(Some(&s)), &c.stamp(Some(&other))));
        assert!(c.covers(&c.stamp(None), &first));
        assert!(!c.covers(&first, &c.stamp(None)));
    }
}
