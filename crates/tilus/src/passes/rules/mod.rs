//! Each instruction family's rules for every pass, in the family's file: what the verifier
//! checks beyond the facts (shapes, dtypes, limits), what it checks once layouts and offsets
//! are known, which layouts it imposes, and what lowering decides for it (tensor maps, vector
//! widths, alignments). Everything the facts say (scoping, thread scope, hazards, fences,
//! liveness) is checked once for all instructions by the drivers.
//!
//! Dispatch is one exhaustive `match` per stage below: a new family is a compile error here
//! until it says what it does at every stage.

mod arithmetic;
mod cp_async;
mod debug;
mod mbarrier;
mod memory;
mod mma;
mod registers;
mod shape;
mod tma;
mod wgmma;

pub(crate) use mbarrier::bar_name;

use super::context::{Checker, LayoutCx, LowerCx, Scope};
use crate::ir::{Inst, Loc, Program, SharedId};

/// One family's rules. Stages a family has nothing to say about keep the empty default.
pub(crate) trait Rules {
    /// Rules that need no layouts (shapes, dtypes, operand kinds, limits).
    fn check(&self, _c: &mut Checker, _loc: Loc, _scope: &Scope) {}
    /// Rules that need the inferred layouts and the shared-memory plan.
    fn check_planned(&self, _c: &mut Checker, _loc: Loc) {}
    /// Layouts the instruction fixes (tensor-core operands); runs once, first.
    fn anchor_layouts(&mut self, _cx: &mut LayoutCx, _loc: Loc) {}
    /// Layouts the instruction passes between its operands; runs until nothing changes.
    fn propagate_layouts(&self, _cx: &mut LayoutCx, _loc: Loc) {}
    /// Layouts the instruction would like for tiles nothing else constrains (coalesced,
    /// vectorized global accesses), through [`LayoutCx::prefer`]: once propagation is done,
    /// the first such wish in program order is granted and propagated, until none is left;
    /// the rest get the default layout.
    fn prefer_layouts(&self, _cx: &mut LayoutCx, _loc: Loc) {}
    /// Decisions lowering makes for the instruction (recorded in it) and what it needs of the
    /// host (tensor maps, alignments).
    fn lower(&mut self, _cx: &mut LowerCx, _loc: Loc) {}
    /// The shapes of the shared tiles the instruction uses internally (a reduction's scratch),
    /// once layouts are known; applied by layout inference before shared memory is planned.
    fn internal_shared(&self, _p: &Program) -> Vec<(SharedId, Vec<i64>)> {
        vec![]
    }
}

impl Rules for Inst {
    fn check(&self, c: &mut Checker, loc: Loc, scope: &Scope) {
        match self {
            Inst::Memory(i) => i.check(c, loc, scope),
            Inst::Mbarrier(i) => i.check(c, loc, scope),
            Inst::Tma(i) => i.check(c, loc, scope),
            Inst::Mma(i) => i.check(c, loc, scope),
            Inst::Arith(i) => i.check(c, loc, scope),
            Inst::Wgmma(i) => i.check(c, loc, scope),
            Inst::Shape(i) => i.check(c, loc, scope),
            Inst::Debug(i) => i.check(c, loc, scope),
            Inst::Registers(i) => i.check(c, loc, scope),
            Inst::CpAsync(i) => i.check(c, loc, scope),
        }
    }

    fn check_planned(&self, c: &mut Checker, loc: Loc) {
        match self {
            Inst::Memory(i) => i.check_planned(c, loc),
            Inst::Mbarrier(i) => i.check_planned(c, loc),
            Inst::Tma(i) => i.check_planned(c, loc),
            Inst::Mma(i) => i.check_planned(c, loc),
            Inst::Arith(i) => i.check_planned(c, loc),
            Inst::Wgmma(i) => i.check_planned(c, loc),
            Inst::Shape(i) => i.check_planned(c, loc),
            Inst::Debug(i) => i.check_planned(c, loc),
            Inst::Registers(i) => i.check_planned(c, loc),
            Inst::CpAsync(i) => i.check_planned(c, loc),
        }
    }

    fn anchor_layouts(&mut self, cx: &mut LayoutCx, loc: Loc) {
        match self {
            Inst::Memory(i) => i.anchor_layouts(cx, loc),
            Inst::Mbarrier(i) => i.anchor_layouts(cx, loc),
            Inst::Tma(i) => i.anchor_layouts(cx, loc),
            Inst::Mma(i) => i.anchor_layouts(cx, loc),
            Inst::Arith(i) => i.anchor_layouts(cx, loc),
            Inst::Wgmma(i) => i.anchor_layouts(cx, loc),
            Inst::Shape(i) => i.anchor_layouts(cx, loc),
            Inst::Debug(i) => i.anchor_layouts(cx, loc),
            Inst::Registers(i) => i.anchor_layouts(cx, loc),
            Inst::CpAsync(i) => i.anchor_layouts(cx, loc),
        }
    }

    fn propagate_layouts(&self, cx: &mut LayoutCx, loc: Loc) {
        match self {
            Inst::Memory(i) => i.propagate_layouts(cx, loc),
            Inst::Mbarrier(i) => i.propagate_layouts(cx, loc),
            Inst::Tma(i) => i.propagate_layouts(cx, loc),
            Inst::Mma(i) => i.propagate_layouts(cx, loc),
            Inst::Arith(i) => i.propagate_layouts(cx, loc),
            Inst::Wgmma(i) => i.propagate_layouts(cx, loc),
            Inst::Shape(i) => i.propagate_layouts(cx, loc),
            Inst::Debug(i) => i.propagate_layouts(cx, loc),
            Inst::Registers(i) => i.propagate_layouts(cx, loc),
            Inst::CpAsync(i) => i.propagate_layouts(cx, loc),
        }
    }

    fn internal_shared(&self, p: &Program) -> Vec<(SharedId, Vec<i64>)> {
        match self {
            Inst::Memory(i) => i.internal_shared(p),
            Inst::Mbarrier(i) => i.internal_shared(p),
            Inst::Tma(i) => i.internal_shared(p),
            Inst::Mma(i) => i.internal_shared(p),
            Inst::Arith(i) => i.internal_shared(p),
            Inst::Wgmma(i) => i.internal_shared(p),
            Inst::Shape(i) => i.internal_shared(p),
            Inst::Debug(i) => i.internal_shared(p),
            Inst::Registers(i) => i.internal_shared(p),
            Inst::CpAsync(i) => i.internal_shared(p),
        }
    }

    fn prefer_layouts(&self, cx: &mut LayoutCx, loc: Loc) {
        match self {
            Inst::Memory(i) => i.prefer_layouts(cx, loc),
            Inst::Mbarrier(i) => i.prefer_layouts(cx, loc),
            Inst::Tma(i) => i.prefer_layouts(cx, loc),
            Inst::Mma(i) => i.prefer_layouts(cx, loc),
            Inst::Arith(i) => i.prefer_layouts(cx, loc),
            Inst::Wgmma(i) => i.prefer_layouts(cx, loc),
            Inst::Shape(i) => i.prefer_layouts(cx, loc),
            Inst::Debug(i) => i.prefer_layouts(cx, loc),
            Inst::Registers(i) => i.prefer_layouts(cx, loc),
            Inst::CpAsync(i) => i.prefer_layouts(cx, loc),
        }
    }

    fn lower(&mut self, cx: &mut LowerCx, loc: Loc) {
        match self {
            Inst::Memory(i) => i.lower(cx, loc),
            Inst::Mbarrier(i) => i.lower(cx, loc),
            Inst::Tma(i) => i.lower(cx, loc),
            Inst::Mma(i) => i.lower(cx, loc),
            Inst::Arith(i) => i.lower(cx, loc),
            Inst::Wgmma(i) => i.lower(cx, loc),
            Inst::Shape(i) => i.lower(cx, loc),
            Inst::Debug(i) => i.lower(cx, loc),
            Inst::Registers(i) => i.lower(cx, loc),
            Inst::CpAsync(i) => i.lower(cx, loc),
        }
    }
}
