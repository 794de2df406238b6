//! Lowering to the host's launch plan: each family's rules record their decisions in the
//! instructions (tensor maps, vector widths) and say what they need of the host; this driver
//! orders the kernel parameters (runtime scalars, pointers, then the tensor maps), the grid,
//! and the checks each pointer must pass before launch.

use super::context::LowerCx;
use super::infer_layout::for_each_inst_mut;
use super::rules::Rules;
use crate::ir::facts::{Access, Memory};
use crate::ir::{
    BinOp, DType, Expr, KernelParam, LaunchPlan, ParamKind, PointerRule, Program, Stmt, StmtKind,
    VarKind,
};

/// For every variable, the largest power of two known to divide its value: immutable `let`s
/// inherit it from their definition (in a branch or a `while` as anywhere: they are defined
/// once), loop indices from their start and step, the rest get 1.
pub fn var_divisibility(p: &Program) -> Vec<i64> {
    divisibility_in(p, &p.body)
}

pub(crate) fn divisibility_in(p: &Program, body: &[Stmt]) -> Vec<i64> {
    let mut divs = vec![1i64; p.vars.len()];
    fn go(stmts: &[Stmt], p: &Program, divs: &mut Vec<i64>) {
        for s in stmts {
            match &s.kind {
                StmtKind::Let { var, value } if p.var(*var).kind == VarKind::Let => {
                    let d = value.divisibility(&|v| divs[v.0 as usize]);
                    divs[var.0 as usize] = d;
                }
                StmtKind::For {
                    var,
                    start,
                    step,
                    body,
                    ..
                } => {
                    let f = |v: crate::ir::VarId| divs[v.0 as usize];
                    let d = start.divisibility(&f).min(step.divisibility(&f));
                    divs[var.0 as usize] = d;
                    go(body, p, divs);
                }
                StmtKind::ThreadGroup { body, .. } | StmtKind::While { body, .. } => {
                    go(body, p, divs)
                }
                StmtKind::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    go(then_body, p, divs);
                    go(else_body, p, divs);
                }
                StmtKind::Let { .. }
                | StmtKind::Assign { .. }
                | StmtKind::Sync { .. }
                | StmtKind::Inst(_) => {}
            }
        }
    }
    // what the script assumed of its arguments holds everywhere (the launch checks it)
    for (var, divisor, _) in assumed(body) {
        let pow2 = 1i64 << divisor.trailing_zeros().min(30);
        divs[var.0 as usize] = divs[var.0 as usize].max(pow2);
    }
    go(body, p, &mut divs);
    divs
}

/// Every `assume` of a statement list: (argument variable, divisor, where).
fn assumed(body: &[Stmt]) -> Vec<(crate::ir::VarId, i64, crate::ir::Loc)> {
    let mut out = vec![];
    for s in body {
        match &s.kind {
            StmtKind::Inst(crate::ir::Inst::Debug(crate::ir::DebugInst::Assume {
                var,
                divisor,
            })) if *divisor > 0 => out.push((*var, *divisor, s.loc)),
            StmtKind::For { body, .. }
            | StmtKind::While { body, .. }
            | StmtKind::ThreadGroup { body, .. } => out.extend(assumed(body)),
            StmtKind::If {
                then_body,
                else_body,
                ..
            } => {
                out.extend(assumed(then_body));
                out.extend(assumed(else_body));
            }
            _ => {}
        }
    }
    out
}

/// `max(a, b)` as an expression the host evaluates: `a + (b - a) * (a < b)`, in 64 bits.
fn larger(a: Expr, b: Expr) -> Expr {
    let less = Expr::Cast(
        DType::I64,
        Box::new(Expr::binary(BinOp::Lt, a.clone(), b.clone())),
    );
    let diff = Expr::binary(BinOp::Sub, b, a.clone());
    Expr::binary(BinOp::Add, a, Expr::binary(BinOp::Mul, diff, less))
}

/// Records every lowering decision in the program and builds its launch plan.
pub fn run(mut p: Program) -> (Program, LaunchPlan) {
    let mut body = std::mem::take(&mut p.body);
    p.tensor_maps.clear();
    let mut cx = LowerCx {
        p: &p,
        tensor_maps: vec![],
        alignments: vec![],
        divisibility: divisibility_in(&p, &body),
    };
    for_each_inst_mut(&mut body, &mut |inst, loc| inst.lower(&mut cx, loc));
    let LowerCx {
        tensor_maps,
        alignments,
        ..
    } = cx;
    p.body = body;
    p.tensor_maps = tensor_maps;
    let plan = launch_plan(&p, &alignments);
    (p, plan)
}

/// The launch plan of a lowered program: parameters, grid, and the pointer rules (every
/// view's elements must exist; its base must be aligned to its elements and to what the
/// instructions on it need).
fn launch_plan(p: &Program, alignments: &[(crate::ir::GlobalId, u32, String)]) -> LaunchPlan {
    let mut params = vec![];
    let mut arg_vars = vec![];
    for (i, prm) in p.params.iter().enumerate() {
        match &prm.kind {
            ParamKind::Scalar(t) => params.push(KernelParam::Scalar { arg: i, dtype: *t }),
            ParamKind::Pointer { .. } => params.push(KernelParam::Pointer { arg: i }),
            ParamKind::Const(..) => {}
        }
        if let Some(v) = prm.var {
            arg_vars.push((v, i));
        }
    }
    for spec in &p.tensor_maps {
        params.push(KernelParam::TensorMap(spec.clone()));
    }
    for (i, v) in p.vars.iter().enumerate() {
        if let crate::ir::VarKind::FastDivisor(divisor) = &v.kind {
            params.push(KernelParam::FastDivisor {
                var: crate::ir::VarId(i as u32),
                divisor: (**divisor).clone(),
            });
        }
        if let crate::ir::VarKind::Workspace(w) = &v.kind {
            // a byte per element at least (packed types round up: a workspace to spare)
            let elem = v.pointee.map_or(1, |t| t.bits().div_ceil(8));
            let bytes = Expr::Binary(
                crate::ir::BinOp::Mul,
                Box::new(w.elems.clone()),
                Box::new(Expr::Int(i64::from(elem), w.elems.dtype())),
            );
            params.push(KernelParam::Workspace {
                var: crate::ir::VarId(i as u32),
                name: v.name.clone(),
                bytes,
                zeroed: w.zeroed,
            });
        }
    }

    let mut rules: Vec<PointerRule> = vec![];
    let mut add = |arg: usize,
                   align: u32,
                   min: Option<Expr>,
                   elem_bytes: u32,
                   why: String,
                   nonneg: Vec<(Expr, String)>| {
        let r = match rules.iter_mut().position(|r| r.arg == arg) {
            Some(i) => &mut rules[i],
            None => {
                rules.push(PointerRule {
                    arg,
                    align: 0,
                    min_elems: Expr::Int(0, DType::I64),
                    nonnegative: vec![],
                    elem_bytes,
                    why: String::new(),
                });
                rules.last_mut().expect("just pushed")
            }
        };
        if align > r.align {
            r.align = align;
            r.why = why;
        }
        r.elem_bytes = elem_bytes;
        if let Some(min) = min {
            // the larger requirement: now when both are known constants, at launch otherwise
            match (r.min_elems.as_int(), min.as_int()) {
                (Some(a), Some(b)) if a >= b => {}
                (Some(a), _) if a <= 0 => r.min_elems = min,
                _ if r.min_elems == min => {}
                (Some(_), Some(_)) => r.min_elems = min,
                _ => r.min_elems = larger(r.min_elems.clone(), min),
            }
        }
        for n in nonneg {
            if !r.nonnegative.contains(&n) {
                r.nonnegative.push(n);
            }
        }
    };
    // every view declared: its elements exist and are aligned
    p.walk(&mut |s| {
        let StmtKind::Inst(i) = &s.kind else { return };
        for e in i.facts(p).effects {
            if let (Memory::Global(g), Access::Declare) = (e.memory, e.access) {
                let d = p.global(g);
                if let Some((arg, _)) = p.param_of(d.ptr) {
                    // packed elements: the bytes that hold them, counted as bytes
                    let (eb, min) = if d.dtype.is_subbyte() {
                        let m = d.min_elements();
                        let t = m.dtype();
                        let bits =
                            Expr::binary(BinOp::Mul, m, Expr::Int(i64::from(d.dtype.bits()), t));
                        let bytes = Expr::binary(
                            BinOp::Div,
                            Expr::binary(BinOp::Add, bits, Expr::Int(7, t)),
                            Expr::Int(8, t),
                        );
                        (1, bytes)
                    } else {
                        (d.dtype.nbytes(), d.min_elements())
                    };
                    // runtime strides: checked at launch (constant ones by the verifier)
                    let nonneg = d
                        .strides
                        .iter()
                        .enumerate()
                        .filter(|(_, s)| !d.row_major && s.eval(&|_| None).is_none())
                        .map(|(i, s)| (s.clone(), format!("stride {i} of view `{}`", d.name)))
                        .collect();
                    add(arg, eb, Some(min), eb, "element alignment".into(), nonneg);
                }
            }
        }
    });
    for (g, bytes, why) in alignments {
        let d = p.global(*g);
        if let Some((arg, _)) = p.param_of(d.ptr) {
            add(
                arg,
                *bytes,
                None,
                d.dtype.bits().div_ceil(8),
                why.clone(),
                vec![],
            );
        }
    }

    let pointers = p
        .params
        .iter()
        .enumerate()
        .filter_map(|(i, prm)| match prm.kind {
            ParamKind::Pointer { mutable, .. } => Some((i, mutable)),
            _ => None,
        })
        .collect();
    LaunchPlan {
        pointers,
        kernel_name: p.name.clone(),
        grid: [p.grid[0].clone(), p.grid[1].clone(), p.grid[2].clone()],
        block_threads: p.threads(),
        smem_bytes: p.smem_bytes,
        params,
        pointer_rules: rules,
        assumed: assumed(&p.body)
            .into_iter()
            .filter_map(|(v, d, loc)| {
                let arg = arg_vars.iter().find(|(x, _)| *x == v)?.1;
                Some((arg, d, loc))
            })
            .collect(),
        arg_vars,
        index_guards: vec![],
        persistent: p.persistent,
        cluster: p.cluster,
        waits_for_prior_grid: p.waits_for_prior_grid,
    }
}
