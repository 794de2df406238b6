//! Rules for tiles seen with another shape: the shapes must agree (the same elements for a
//! reshape, a range inside the dimension for a slice); the layout passes between the source
//! and the result as the layout algebra says (both ways for a reshape, forward for a slice),
//! and a layout that cannot be seen that way (a factor the new shape would cut apart, a range
//! that only some threads hold) is a diagnostic at the user's line. A slice whose source
//! nothing constrains wishes for a layout it can keep, as global accesses wish for vectors.

use super::Rules;
use crate::ir::{Loc, Program, RegId, ReshapeOp, ShapeInst, SharedId};
use crate::layout::RegisterLayout;
use crate::passes::context::{Checker, LayoutCx, Scope};
use crate::passes::infer_layout::default_layout;

/// The result's layout from the source's (seen through its view), or why there is none.
fn derived(
    inst: &ShapeInst,
    l: &RegisterLayout,
    out_shape: &[i64],
) -> Result<RegisterLayout, String> {
    match inst {
        ShapeInst::Reshape { .. } => l.reshape(out_shape),
        ShapeInst::Slice { dim, start, .. } => {
            let len = *out_shape.get(*dim).ok_or("no such dimension")?;
            l.slice(*dim, *start, len)
        }
        ShapeInst::Unpack { .. } => {
            let (from, to) = (l.shape().last(), out_shape.last());
            match (from, to) {
                (Some(&f), Some(&t)) if f > 0 && t % f == 0 => Ok(l.unpacked(t / f)),
                _ => Err("the innermost extents do not divide".into()),
            }
        }
        ShapeInst::Pack { .. } => {
            let (from, to) = (l.shape().last(), out_shape.last());
            match (from, to) {
                (Some(&f), Some(&t)) if t > 0 && f % t == 0 => l.packed(f / t),
                _ => Err("the innermost extents do not divide".into()),
            }
        }
        ShapeInst::Convert { .. } => Ok(l.clone()),
        ShapeInst::Relabel { from, to, .. } => {
            if l.same_mapping(from) {
                Ok(to.clone())
            } else {
                Err(format!("relabel names the source's layout {from}"))
            }
        }
    }
}

/// The layout the instruction needed and what to do instead, for messages.
fn advice(inst: &ShapeInst, out_shape: &[i64]) -> String {
    match inst {
        ShapeInst::Reshape { .. } => format!(
            "a reshape keeps every thread's registers, so it needs a layout whose factors (the \
             threads and the local elements along each dimension) each fall inside one \
             dimension of {out_shape:?} or split at its boundaries; reshape to such a shape, \
             keep the data as separate tiles of the shapes you need (two tensors), or go \
             through memory (`store_global` into a scratch buffer, `sync()`, `load_global` \
             through a view of the new shape)"
        ),
        ShapeInst::Slice { dim, start, .. } => format!(
            "a slice keeps, in every thread, some of its own registers, so it needs every \
             thread to hold elements of {start}..{}: dimension {dim} in each thread's local \
             elements, in factors the range does not cut; keep the parts as separate tiles \
             (two tensors), or go through memory (`store_global` into a scratch buffer, \
             `sync()`, `load_global` of the part)",
            start + out_shape.get(*dim).copied().unwrap_or(0)
        ),
        ShapeInst::Pack { .. } => "pack packs each thread's own elements, so it needs a layout \
             that gives every thread whole words' worth of consecutive elements of the innermost \
             dimension: compute the elements in a vectorized layout (what global loads get), \
             or convert them first (`k.convert_layout`)"
            .to_string(),
        ShapeInst::Relabel { .. } => "relabel keeps every thread's registers, so the source \
             must have the layout it names: give the source that layout (`annotate_layout`), or \
             name the one it has"
            .to_string(),
        ShapeInst::Unpack { .. } | ShapeInst::Convert { .. } => String::new(),
    }
}

/// A layout of a `shape` tile (over `threads`) that `slice(dim, start, len)` can keep, for a
/// source nothing constrains, when the default layout cannot: the dimension cut into blocks
/// of `gcd(start, len)` elements, the blocks in each thread's registers (outermost) and each
/// block spread as the default spreads it. `None` where the default already allows the slice
/// or where that layout would leave threads idle (replicated).
fn slice_friendly(
    shape: &[i64],
    threads: i64,
    dim: usize,
    start: i64,
    len: i64,
) -> Option<RegisterLayout> {
    let n = *shape.get(dim)?;
    if start < 0 || len <= 0 || start + len > n || len == n || threads <= 0 {
        return None;
    }
    let default = default_layout(shape, threads);
    if default.slice(dim, start, len).is_ok() {
        return None;
    }
    let gcd = |mut a: i64, mut b: i64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let block = gcd(gcd(start, len), n);
    let mut inner = shape.to_vec();
    inner[dim] = block;
    let spread = default_layout(&inner, threads);
    if spread.replica_terms().iter().any(|t| t.modulus > 1) {
        return None;
    }
    let mut outer = vec![1; shape.len()];
    outer[dim] = n / block;
    let l = RegisterLayout::local(&outer).compose(&spread);
    l.slice(dim, start, len).is_ok().then_some(l)
}

/// Where the layout of `t` came from, for messages.
fn origin(cx: &LayoutCx, t: RegId) -> String {
    match &cx.layouts[t.0 as usize] {
        Some((_, at, what)) => format!(" (from {what} at {at})"),
        None => String::new(),
    }
}

impl Rules for ShapeInst {
    fn check(&self, c: &mut Checker, loc: Loc, _scope: &Scope) {
        let name = self.name();
        let (src, out) = self.operands();
        c.check_view(src, name, loc);
        let p = c.p;
        let from = c.view_shape(src);
        let to = p.register(out).shape.clone();
        let (ts, to_t) = (p.register(src.tensor).dtype, p.register(out).dtype);
        if let ShapeInst::Pack { .. } = self {
            let words = matches!(to_t, crate::ir::DType::U32 | crate::ir::DType::I32)
                || to_t == crate::ir::DType::U8
                || to_t == crate::ir::DType::I8;
            if !words || !ts.is_lowp() || self.pack_count(p).is_none() {
                c.err(
                    loc,
                    format!(
                        "pack: {ts} elements into {to_t} words; pack takes a low-precision type \
                         whose width divides the words' (1, 2, 4 or 8 bits) and words of u8, \
                         i8, u32 or i32"
                    ),
                );
            }
        } else if let ShapeInst::Unpack { .. } = self {
            let words = matches!(ts, crate::ir::DType::U32 | crate::ir::DType::I32)
                || ts == crate::ir::DType::U8
                || ts == crate::ir::DType::I8;
            if !words || !to_t.is_lowp() || self.unpack_count(p).is_none() {
                c.err(
                    loc,
                    format!(
                        "unpack: {to_t} elements from {ts} words; unpack takes words of u8, i8, \
                         u32 or i32 and a low-precision type whose width divides theirs (1, 2, \
                         4 or 8 bits; 3, 5, 6 and 7-bit elements come from packed global views)"
                    ),
                );
            }
        } else if ts != to_t {
            c.err(loc, format!("{name}: a {ts} tile into a {to_t} tile"));
        }
        let fits = match self {
            ShapeInst::Reshape { op, .. } => {
                let mut want = from.clone();
                let by_op = match *op {
                    ReshapeOp::Reshape => true,
                    ReshapeOp::Squeeze(d) => d < want.len() && want.remove(d) == 1 && want == to,
                    ReshapeOp::Unsqueeze(d) => {
                        d <= want.len() && {
                            want.insert(d, 1);
                            want == to
                        }
                    }
                };
                let count = |s: &[i64]| s.iter().try_fold(1i64, |a, &n| a.checked_mul(n));
                by_op && count(&from).is_some() && count(&from) == count(&to)
            }
            ShapeInst::Slice { dim, start, .. } => {
                *dim < from.len()
                    && to.len() == from.len()
                    && *start >= 0
                    && (0..from.len()).all(|d| d == *dim || from[d] == to[d])
                    && to[*dim] > 0
                    && start + to[*dim] <= from[*dim]
            }
            ShapeInst::Pack { .. } => {
                // types that do not divide were reported above
                let Some(k) = self.pack_count(p) else {
                    return;
                };
                let mut want = from.clone();
                if let Some(last) = want.last_mut() {
                    if *last % k != 0 {
                        c.err(
                            loc,
                            format!("pack: the innermost extent {last} is not a multiple of {k}"),
                        );
                        return;
                    }
                    *last /= k;
                }
                !from.is_empty() && want == to
            }
            ShapeInst::Unpack { .. } => {
                // types that do not divide were reported above
                let Some(k) = self.unpack_count(p) else {
                    return;
                };
                let mut want = from.clone();
                if let Some(last) = want.last_mut() {
                    *last = last.saturating_mul(k);
                }
                !from.is_empty() && want == to
            }
            ShapeInst::Relabel {
                from: lf, to: lt, ..
            } => {
                let once = |l: &RegisterLayout| {
                    l.is_valid() && l.replica_terms().iter().all(|t| t.modulus <= 1)
                };
                let threads = i64::from(p.register(src.tensor).group_threads.max(1));
                if !once(lf) || !once(lt) {
                    c.err(
                        loc,
                        format!(
                            "relabel: the layouts {lf} and {lt} must each hold every element \
                             of their tile once (no replicas)"
                        ),
                    );
                } else if lf.local_size() != lt.local_size()
                    || lf.num_threads() != lt.num_threads()
                    || lf.num_threads() > threads
                {
                    c.err(
                        loc,
                        format!(
                            "relabel: {lf} and {lt} must give the same threads (at most the \
                             tile's {threads}) the same number of registers ({} and {} threads, \
                             {} and {} registers each)",
                            lf.num_threads(),
                            lt.num_threads(),
                            lf.local_size(),
                            lt.local_size()
                        ),
                    );
                }
                lf.shape() == &from[..] && lt.shape() == &to[..]
            }
            ShapeInst::Convert { map, .. } => {
                if ts.bits() > 32 {
                    c.err(
                        loc,
                        format!("{name}: {ts} tiles do not convert (one 32-bit word per element)"),
                    );
                }
                match *map {
                    crate::ir::Repeat::Tile { dim, times }
                    | crate::ir::Repeat::Interleave { dim, times }
                        if dim >= from.len() || times < 1 =>
                    {
                        // the builder reported it
                        true
                    }
                    _ => map.shape(&from) == to,
                }
            }
        };
        if !fits {
            c.err(
                loc,
                format!("{name}: a {from:?} tile does not give the {to:?} tile it defines"),
            );
        }
    }

    fn anchor_layouts(&mut self, cx: &mut LayoutCx, loc: Loc) {
        // a relabelling names both sides' layouts
        if let ShapeInst::Relabel { src, out, from, to } = self {
            cx.require(src.tensor, src.layout_of(from), loc, "relabel");
            cx.require(*out, to.clone(), loc, "relabel");
            return;
        }
        // a pack needs whole words' worth of consecutive elements in each thread: its source
        // takes the vectorized layout of its width from the start (a cast from another layout
        // converts)
        let ShapeInst::Pack { src, .. } = self else {
            return;
        };
        let shape = cx.p.view_shape(src);
        let d = cx.p.register(src.tensor);
        if shape.is_empty() || shape.iter().any(|&n| n <= 0) || !d.dtype.is_lowp() {
            return;
        }
        let threads = d.group_threads.max(1) as i64;
        let l =
            crate::passes::infer_layout::fitted_layout_bits(&shape, threads, d.dtype.bits(), false);
        cx.require(src.tensor, src.layout_of(&l), loc, "pack");
    }

    fn propagate_layouts(&self, cx: &mut LayoutCx, loc: Loc) {
        if let ShapeInst::Convert { .. } = self {
            // the point of a conversion: each side's layout is its own uses'
            return;
        }
        let name = self.name();
        let (src, out) = self.operands();
        let p = cx.p;
        let out_shape = p.register(out).shape.clone();
        // one diagnostic per call: a source that cannot give the result's layout gets its
        // default afterwards, which would fail the other way round
        let prefix = format!("{name}: ");
        if cx
            .diags
            .iter()
            .any(|d| d.loc == loc && d.message.starts_with(&prefix))
        {
            return;
        }
        if let Some(l) = cx.get(src.tensor) {
            let l = src.layout_of(&l);
            match derived(self, &l, &out_shape) {
                Ok(o) => cx.require(out, o, loc, name),
                Err(why) => {
                    let msg = format!(
                        "{name}: `{}` has layout {l}{}, which cannot be seen as {out_shape:?} \
                         without moving data between threads: {why}; {}",
                        p.register(src.tensor).name,
                        origin(cx, src.tensor),
                        advice(self, &out_shape)
                    );
                    cx.error(loc, msg);
                }
            }
        } else if let (Some(o), ShapeInst::Pack { .. }) = (cx.get(out), self) {
            // back through a pack: each word's elements, consecutive in its thread
            if let Some(k) = self.pack_count(p) {
                cx.require(src.tensor, src.layout_of(&o.unpacked(k)), loc, name);
            }
        } else if let (Some(o), ShapeInst::Reshape { .. }) = (cx.get(out), self) {
            // back through the reshape (and the view: transposes are involutions)
            let from = p.view_shape(src);
            match o.reshape(&from) {
                Ok(l) => cx.require(src.tensor, src.layout_of(&l), loc, name),
                Err(why) => {
                    let msg = format!(
                        "{name}: `{}` needs layout {o}{}, which no layout of the {from:?} tile \
                         gives without moving data between threads: {why}; {}",
                        p.register(out).name,
                        origin(cx, out),
                        advice(self, &from)
                    );
                    cx.error(loc, msg);
                }
            }
        }
    }

    fn prefer_layouts(&self, cx: &mut LayoutCx, loc: Loc) {
        if let ShapeInst::Convert { src, out, map, .. } = self {
            if *map != crate::ir::Repeat::Same {
                return;
            }
            // a side nothing constrains takes the other's layout: the conversion is free
            if let Some(l) = cx.get(src.tensor) {
                cx.prefer(*out, src.layout_of(&l), loc, "convert_layout");
            } else if let Some(l) = cx.get(*out) {
                cx.prefer(src.tensor, src.layout_of(&l), loc, "convert_layout");
            }
            return;
        }
        // a source nothing else constrains gets a layout its slice can keep
        let ShapeInst::Slice {
            src,
            dim,
            start,
            out,
        } = self
        else {
            return;
        };
        let p = cx.p;
        let shape = p.view_shape(src);
        let Some(&len) = p.register(*out).shape.get(*dim) else {
            return;
        };
        let threads = p.register(src.tensor).group_threads.max(1) as i64;
        if let Some(l) = slice_friendly(&shape, threads, *dim, *start, len) {
            cx.prefer(src.tensor, src.layout_of(&l), loc, "the slice");
        }
    }

    fn internal_shared(&self, p: &Program) -> Vec<(SharedId, Vec<i64>)> {
        let ShapeInst::Convert {
            src,
            out,
            scratch,
            map,
        } = self
        else {
            return vec![];
        };
        let (Some(l), Some(o)) = (&p.register(src.tensor).layout, &p.register(*out).layout) else {
            return vec![(*scratch, vec![0])];
        };
        // a tile beyond any register file is the register rule's to report; the scratch
        // holds the source
        let shape = p.view_shape(src);
        let elements: i64 = shape.iter().product();
        let source = |c: &[i64]| map.source(c, &shape);
        let in_registers = p.register(*out).shape.iter().product::<i64>() > 1 << 20
            || o.in_thread_locals_of(&src.layout_of(l), &source).is_some();
        vec![(*scratch, vec![if in_registers { 0 } else { elements }])]
    }

    fn check_planned(&self, c: &mut Checker, loc: Loc) {
        let (src, out) = self.operands();
        let p = c.p;
        if let ShapeInst::Convert { .. } = self {
            let d = p.register(out);
            if self.converts_through_shared(p) && d.group_threads != p.threads() {
                let msg = format!(
                    "convert_layout: the threads of `{}`'s new layout need elements that other                      threads hold, which meet in shared memory behind block-wide barriers;                      convert in the whole block, or choose layouts whose threads keep their                      elements",
                    d.name
                );
                c.err(loc, msg);
            }
            return;
        }
        let (Some(l), Some(have)) = (&p.register(src.tensor).layout, &p.register(out).layout)
        else {
            return;
        };
        // a tile larger than a thread's registers is the register rule's; comparing its
        // layouts would take as long as it is large
        let fits = |t: crate::ir::RegId, l: &RegisterLayout| {
            (l.local_size().max(0) as u64).saturating_mul(u64::from(p.register(t).dtype.bits()))
                <= u64::from(crate::passes::MAX_REGISTERS) * 32
        };
        if !fits(src.tensor, l) || !fits(out, have) {
            return;
        }
        if self.source_locals(p).is_some() {
            return;
        }
        let l = src.layout_of(l);
        let msg = match derived(self, &l, &p.register(out).shape) {
            Ok(want) => format!(
                "{}: the result `{}` has layout {have}, not the layout {want} its source gives it",
                self.name(),
                p.register(out).name
            ),
            Err(why) => format!(
                "{}: `{}` has layout {l}, which cannot be seen as {:?}: {why}",
                self.name(),
                p.register(src.tensor).name,
                p.register(out).shape
            ),
        };
        c.err(loc, msg);
    }
}
