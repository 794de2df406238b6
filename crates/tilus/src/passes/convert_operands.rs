//! Implicit layout conversions at uses: once layouts are inferred, an operand of an expression
//! (`compute`, `assign_tile`) or a cast whose layout does not give each thread the elements
//! its part of the result needs — two tiles whose layouts other instructions fixed, an mma
//! accumulator added to a tile loaded for coalesced reads — and a register operand of a
//! tensor-core instruction (`dot`'s a, b and c, `wgmma`'s a) laid out otherwise than its
//! fragments — a product's result fed to the next product — is converted to the layout the
//! use needs just before it, as if the script had written `k.convert_layout(&t)`
//! there: in registers where each thread holds its elements already (free), through a planned
//! shared scratch behind two block barriers otherwise. `tilus ir` shows the conversion and
//! which it is. A conversion that needs shared memory inside a thread group is not inserted
//! (a group cannot meet at block barriers): the verifier's diagnostic stands.

use crate::ir::{
    ArithInst, DType, Inst, MmaInst, Program, RegId, RegView, RegisterDecl, Repeat, ShapeInst,
    SharedDecl, SharedId, Stmt, StmtId, StmtKind, TileExpr, WgmmaA, WgmmaInst,
};
use crate::layout::RegisterLayout;

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

/// An operand to convert: its view, the layout its use needs (as seen through the view), the
/// threads of the using instruction's group, and the name of what it is converted for.
struct Wanted {
    view: RegView,
    layout: RegisterLayout,
    group: u32,
    for_name: String,
}

/// Whether `v`, laid out by inference, must be converted to `need` for a use by `group`
/// threads, and can be.
fn needs(p: &Program, v: &RegView, need: &RegisterLayout, group: u32) -> bool {
    let d = p.register(v.tensor);
    let Some(l) = d.layout.as_ref().map(|l| v.layout_of(l)) else {
        return false;
    };
    // a tile no thread's registers hold fails the register check whatever its layout
    !crate::passes::exceeds_registers(&l, d.dtype)
        && !crate::passes::exceeds_registers(need, d.dtype)
        && !l.same_mapping(need)
        && crate::passes::convertible(need, &l, group, p.threads())
}

/// The operands of an elementwise expression with output `out` that its layout leaves apart.
fn expression_operands(p: &Program, expr: &TileExpr, out: RegId) -> Vec<Wanted> {
    let d = p.register(out);
    let (shape, group) = (d.shape.clone(), d.group_threads);
    let Some(ol) = d.layout.clone() else {
        return vec![];
    };
    if crate::passes::exceeds_registers(&ol, d.dtype) {
        return vec![];
    }
    let mut wanted: Vec<Wanted> = vec![];
    let mut views = vec![];
    expr.tiles(&mut views);
    for v in views {
        if p.view_shape(&v) != shape || wanted.iter().any(|w| w.view == v) {
            continue;
        }
        let Some(l) = p.register(v.tensor).layout.as_ref().map(|l| v.layout_of(l)) else {
            continue;
        };
        // operands that broadcast into the result's layout need nothing
        if ol.broadcast_locals(&l).is_some() || !needs(p, &v, &ol, group) {
            continue;
        }
        wanted.push(Wanted {
            view: v,
            layout: ol.clone(),
            group,
            for_name: d.name.clone(),
        });
    }
    wanted
}

/// The operands of one instruction that need converting.
fn wanted_by(p: &Program, inst: &Inst) -> Vec<Wanted> {
    let want = |v: &RegView, layout: RegisterLayout, out: RegId| {
        let d = p.register(out);
        needs(p, v, &layout, d.group_threads).then(|| Wanted {
            view: *v,
            layout,
            group: d.group_threads,
            for_name: d.name.clone(),
        })
    };
    match inst {
        Inst::Arith(ArithInst::Map { expr, out } | ArithInst::Assign { expr, out }) => {
            expression_operands(p, expr, *out)
        }
        Inst::Arith(ArithInst::Cast { src, out }) => p
            .register(*out)
            .layout
            .clone()
            .and_then(|ol| want(src, ol, *out))
            .into_iter()
            .collect(),
        Inst::Mma(MmaInst::Dot {
            a,
            b,
            c,
            out,
            plan: Some(pl),
        }) => [(a, pl.a_layout()), (b, pl.b_layout()), (c, pl.c_layout())]
            .into_iter()
            .filter_map(|(v, l)| want(v, l, *out))
            .collect(),
        Inst::Wgmma(WgmmaInst::Mma {
            a: WgmmaA::Register(v),
            d,
            plan: Some(pl),
            ..
        }) => want(v, pl.a_layout(), *d).into_iter().collect(),
        _ => vec![],
    }
}

/// Points the operands of `inst` that `renamed` lists at their conversions.
fn rename(inst: &mut Inst, renamed: &[(RegView, RegId)]) {
    let to = |v: &mut RegView| {
        if let Some((_, t)) = renamed.iter().find(|(from, _)| from == v) {
            *v = RegView::plain(*t);
        }
    };
    match inst {
        Inst::Arith(ArithInst::Map { expr, .. } | ArithInst::Assign { expr, .. }) => {
            expr.tiles_mut(&mut |v: &mut RegView| to(v));
        }
        Inst::Arith(ArithInst::Cast { src, .. }) => to(src),
        Inst::Mma(MmaInst::Dot { a, b, c, .. }) => {
            to(a);
            to(b);
            to(c);
        }
        Inst::Wgmma(WgmmaInst::Mma {
            a: WgmmaA::Register(v),
            ..
        }) => to(v),
        _ => {}
    }
}

/// The conversions one statement needs, its operands renamed to their results.
fn converts_for(p: &mut Program, s: &mut Stmt) -> Vec<Stmt> {
    let loc = s.loc;
    let StmtKind::Inst(inst) = &mut s.kind else {
        return vec![];
    };
    let wanted = wanted_by(p, inst);
    let mut converts = vec![];
    let mut renamed: Vec<(RegView, RegId)> = vec![];
    for w in wanted {
        let src = p.register(w.view.tensor);
        let name = format!("{}_as_{}", src.name, w.for_name);
        let dtype = src.dtype;
        let t = RegId(p.registers.len() as u32);
        p.registers.push(RegisterDecl {
            name: name.clone(),
            dtype,
            shape: w.layout.shape().to_vec(),
            layout: Some(w.layout),
            group_threads: w.group,
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
            src: w.view,
            out: t,
            scratch,
            map: Repeat::Same,
        };
        converts.push(Stmt {
            kind: StmtKind::Inst(Inst::Shape(inst)),
            loc,
            id,
        });
        renamed.push((w.view, t));
    }
    rename(inst, &renamed);
    converts
}
