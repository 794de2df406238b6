//! Lowering to the host's launch plan: kernel parameters in order (runtime scalars, pointers,
//! then one tensor map per distinct TMA source/box/swizzle), the grid, and the checks each
//! pointer must pass before launch.

use crate::ir::{
    DType, Expr, GlobalId, Inst, KernelParam, LaunchPlan, MemoryInst, ParamKind, PointerRule,
    Program, SharedId, StmtKind, TensorMapSpec, TmaInst,
};

/// The name of the tensor-map parameter for copies from `src` into tiles like `dst`.
pub fn tensor_map_name(p: &Program, src: GlobalId, dst: SharedId) -> String {
    let maps = tensor_maps(p);
    let key = map_key(p, src, dst);
    maps.into_iter()
        .find(|(k, _)| *k == key)
        .map(|(_, s)| s.name)
        .unwrap_or_default()
}

type MapKey = (GlobalId, Vec<i64>, crate::layout::Swizzle);

fn map_key(p: &Program, src: GlobalId, dst: SharedId) -> MapKey {
    let s = p.shared(dst);
    let sw = s
        .layout
        .as_ref()
        .map_or(crate::layout::Swizzle::None, |l| l.swizzle);
    (src, s.shape.clone(), sw)
}

/// One tensor map per distinct (source view, box shape, swizzle), in program order.
fn tensor_maps(p: &Program) -> Vec<(MapKey, TensorMapSpec)> {
    let mut out: Vec<(MapKey, TensorMapSpec)> = vec![];
    p.walk(&mut |s| {
        if let StmtKind::Inst(Inst::Tma(TmaInst::GlobalToShared { src, dst, .. })) = &s.kind {
            let key = map_key(p, *src, *dst);
            if out.iter().any(|(k, _)| *k == key) {
                return;
            }
            let g = p.global(*src);
            let sh = p.shared(*dst);
            let same_src = out.iter().filter(|(k, _)| k.0 == *src).count();
            let name = if same_src == 0 {
                format!("{}_tmap", g.name)
            } else {
                format!("{}_tmap{}", g.name, same_src)
            };
            let ptr_arg = p.param_of(g.ptr).map(|(i, _)| i).unwrap_or(0);
            let spec = TensorMapSpec {
                name,
                ptr_arg,
                dtype: g.dtype,
                global_shape: g.shape.clone(),
                box_shape: sh.shape.iter().map(|&d| d as u32).collect(),
                swizzle: key.2,
            };
            out.push((key, spec));
        }
    });
    out
}

/// Elements per vector store that `store_global` may use for tile `src` into view `dst`
/// (shared with codegen, so that the alignment checked at launch is the one the code assumes).
pub fn store_vector_width(p: &Program, inst: &MemoryInst) -> u32 {
    let MemoryInst::StoreGlobal { dst, src, offsets } = inst else {
        return 1;
    };
    let g = p.global(*dst);
    let r = p.register(src.tensor);
    let Some(layout) = &r.layout else { return 1 };
    let layout = layout.permute(&src.perm(layout.rank()));
    let rank = layout.rank();
    let last = rank - 1;
    // Candidate widths: pairs (or more) of consecutive locals adjacent along the last dim.
    let max_bytes = 16u32;
    let elem = g.dtype.nbytes();
    let divs = var_divisibility(p);
    let mut width = 1u32;
    let mut cand = 2u32;
    while cand * elem <= max_bytes && (layout.local_size() as u32).is_multiple_of(cand) {
        let ok_locals = (0..layout.local_size()).step_by(cand as usize).all(|l| {
            let base = layout.local_coords(l);
            base[last] % cand as i64 == 0
                && (1..cand as i64).all(|j| {
                    let c = layout.local_coords(l + j);
                    c[last] == base[last] + j && (0..last).all(|d| c[d] == base[d])
                })
        });
        let ok_threads = layout.thread_terms()[last]
            .iter()
            .all(|t| t.stride % cand as i64 == 0);
        // the row pitch and the offset of the last dimension must keep vectors aligned
        let pitch_ok = g
            .shape
            .last()
            .and_then(|e| e.as_int())
            .is_some_and(|n| n % cand as i64 == 0)
            || rank == 1;
        let div = |v: crate::ir::VarId| divs[v.0 as usize];
        let off_ok = offsets
            .get(last)
            .is_some_and(|o| o.divisibility(&div) % cand as i64 == 0);
        if ok_locals && ok_threads && pitch_ok && off_ok {
            width = cand;
            cand *= 2;
        } else {
            break;
        }
    }
    width
}

/// For every variable, the largest power of two known to divide its value: immutable `let`s
/// inherit it from their definition, loop indices from their start and step, the rest get 1.
pub fn var_divisibility(p: &Program) -> Vec<i64> {
    let mut divs = vec![1i64; p.vars.len()];
    fn go(stmts: &[crate::ir::Stmt], p: &Program, divs: &mut Vec<i64>) {
        for s in stmts {
            match &s.kind {
                StmtKind::Let { var, value } if p.var(*var).kind == crate::ir::VarKind::Let => {
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
                StmtKind::ThreadGroup { body, .. } => go(body, p, divs),
                _ => {}
            }
        }
    }
    go(&p.body, p, &mut divs);
    divs
}

/// Builds the launch plan of a planned program.
pub fn launch_plan(p: &Program) -> LaunchPlan {
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
    let maps = tensor_maps(p);
    for (_, spec) in &maps {
        params.push(KernelParam::TensorMap(spec.clone()));
    }

    // Pointer rules: TMA sources need 16-byte alignment; stores need their vector alignment;
    // every view needs its elements to exist.
    let mut rules: Vec<PointerRule> = vec![];
    let add = |rules: &mut Vec<PointerRule>, arg: usize, align: u32, min: Expr, why: String| {
        if let Some(r) = rules.iter_mut().find(|r| r.arg == arg) {
            if align > r.align {
                r.align = align;
                r.why = why;
            }
            // keep the larger requirement when both are known constants; otherwise the newest
            match (r.min_elems.as_int(), min.as_int()) {
                (Some(a), Some(b)) if a >= b => {}
                _ => r.min_elems = min,
            }
        } else {
            rules.push(PointerRule {
                arg,
                align,
                min_elems: min,
                elem_bytes: 0,
                why,
            });
        }
    };
    let product = |shape: &[Expr]| {
        shape
            .iter()
            .cloned()
            .reduce(|a, b| {
                Expr::binary(
                    crate::ir::BinOp::Mul,
                    Expr::Cast(DType::I64, Box::new(a)),
                    b,
                )
            })
            .map(|e| Expr::Cast(DType::I64, Box::new(e)))
            .unwrap_or(Expr::Int(0, DType::I64))
    };
    p.walk(&mut |s| {
        let StmtKind::Inst(i) = &s.kind else { return };
        let (g, align, why) = match i {
            Inst::Tma(TmaInst::GlobalToShared { src, .. }) => (
                *src,
                16,
                "TMA needs a 16-byte aligned base address".to_string(),
            ),
            Inst::Memory(m @ MemoryInst::StoreGlobal { dst, .. }) => {
                let w = store_vector_width(p, m);
                let bytes = w * p.global(*dst).dtype.nbytes();
                (
                    *dst,
                    bytes,
                    format!("store_global writes {bytes}-byte vectors"),
                )
            }
            Inst::Memory(MemoryInst::GlobalView(g)) => {
                (*g, p.global(*g).dtype.nbytes(), "element alignment".into())
            }
            _ => return,
        };
        let d = p.global(g);
        if let Some((arg, _)) = p.param_of(d.ptr) {
            add(&mut rules, arg, align, product(&d.shape), why);
            if let Some(r) = rules.iter_mut().find(|r| r.arg == arg) {
                r.elem_bytes = d.dtype.nbytes();
            }
        }
    });

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
        arg_vars,
    }
}
