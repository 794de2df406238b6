//! Implicit layout conversions at elementwise uses: once layouts are inferred, an operand of an
//! expression (`compute`, `assign_tile`) whose layout does not give each thread the elements
//! its part of the result needs — two tiles whose layouts other instructions fixed, an mma
//! accumulator added to a tile loaded for coalesced reads — is converted to the result's
//! layout just before the expression, as if the script had written `k.convert_layout(&t)`
//! there: in registers where each thread holds its elements already (free), through a planned
//! shared scratch behind two block barriers otherwise. `tilus ir` shows the conversion and
//! which it is. A conversion that needs shared memory inside a thread group is not inserted
//! (a group cannot meet at block barriers): the verifier's diagnostic stands.

use crate::ir::{
    ArithInst, DType, Inst, Program, RegId, RegView, RegisterDecl, Repeat, ShapeInst, SharedDecl,
    SharedId, Stmt, StmtId, StmtKind,
};

/// Inserts the conversions the program's elementwise uses need; the number inserted.
pub(crate) fn insert(p: &mut Program) -> usize {
    let mut body = std::mem::take(&mut p.body);
    let n = walk(p, &mut body);
    p.body = body;
    n
}

fn walk(p: &mut Program, stmts: &mut Vec<Stmt>) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < stmts.len() {
        for body in stmts[i].kind.bodies_mut() {
            n += walk(p, body);
        }
        let before = converts_for(p, &mut stmts[i]);
        let added = before.len();
        for (k, s) in before.into_iter().enumerate() {
            stmts.insert(i + k, s);
        }
        n += added;
        i += added + 1;
    }
    n
}

/// The conversions one statement needs, its operands renamed to their results.
fn converts_for(p: &mut Program, s: &mut Stmt) -> Vec<Stmt> {
    let loc = s.loc;
    let StmtKind::Inst(Inst::Arith(ArithInst::Map { expr, out } | ArithInst::Assign { expr, out })) =
        &mut s.kind
    else {
        return vec![];
    };
    let out = *out;
    let d = p.register(out);
    let (shape, group) = (d.shape.clone(), d.group_threads);
    let Some(ol) = d.layout.clone() else {
        return vec![];
    };
    if crate::passes::exceeds_registers(&ol, d.dtype) {
        return vec![];
    }
    let mut wanted: Vec<RegView> = vec![];
    let mut views = vec![];
    expr.tiles(&mut views);
    for v in views {
        if p.view_shape(&v) != shape || wanted.contains(&v) {
            continue;
        }
        let Some(l) = p.register(v.tensor).layout.as_ref().map(|l| v.layout_of(l)) else {
            continue;
        };
        // a tile no thread's registers hold fails the register check whatever its layout
        if crate::passes::exceeds_registers(&l, p.register(v.tensor).dtype) {
            continue;
        }
        if ol.broadcast_locals(&l).is_some() {
            continue;
        }
        // in registers, or through shared memory by the whole block
        if ol.in_thread_locals(&l).is_none() && group != p.threads() {
            continue;
        }
        wanted.push(v);
    }
    let mut converts = vec![];
    let mut renamed: Vec<(RegView, RegId)> = vec![];
    for v in wanted {
        let src = p.register(v.tensor);
        let name = format!("{}_as_{}", src.name, p.register(out).name);
        let dtype = src.dtype;
        let t = RegId(p.registers.len() as u32);
        p.registers.push(RegisterDecl {
            name: name.clone(),
            dtype,
            shape: shape.clone(),
            layout: Some(ol.clone()),
            group_threads: group,
            loc,
        });
        let scratch = SharedId(p.shareds.len() as u32);
        p.shareds.push(SharedDecl {
            name: format!("{name}_scratch"),
            dtype: DType::F32,
            shape: vec![0],
            layout: None,
            offset: None,
            loc,
        });
        let id = StmtId(p.stmt_count);
        p.stmt_count += 1;
        let inst = ShapeInst::Convert {
            src: v,
            out: t,
            scratch,
            map: Repeat::Same,
        };
        converts.push(Stmt {
            kind: StmtKind::Inst(Inst::Shape(inst)),
            loc,
            id,
        });
        renamed.push((v, t));
    }
    if !renamed.is_empty() {
        expr.tiles_mut(&mut |v: &mut RegView| {
            if let Some((_, t)) = renamed.iter().find(|(from, _)| from == v) {
                *v = RegView::plain(*t);
            }
        });
    }
    converts
}
