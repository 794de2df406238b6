//! Emitters for tiles seen with another shape: the result's registers are copies of the
//! source's in the same thread (all of them, in order, for a reshape; the slice's, for a
//! slice), which the CUDA compiler's register allocation turns into renamings.

use super::memory::{declare, read, storage, word, Storage};
use super::Emitter;
use crate::ir::ShapeInst;

pub(super) fn emit(e: &mut Emitter, i: &ShapeInst) {
    let (src, out) = i.operands();
    let table = i
        .source_locals(e.p)
        .expect("planned programs' shape views fit their layouts (check_planned)");
    declare(e, out);
    let (sd, od) = (e.p.register(src.tensor), e.p.register(out));
    let (sp, op) = (
        storage(sd) == Storage::Packed16,
        storage(od) == Storage::Packed16,
    );
    let on = od.name.clone();
    let n = table.len();
    let identity = table.iter().enumerate().all(|(l, &s)| l == s);
    if identity && (sp == op) {
        // the same registers in the same order
        e.line("#pragma unroll");
        if op {
            let w = word(e, src.tensor, "2 * w");
            e.line(format!(
                "for (int w = 0; w < {}; ++w) {on}[w] = {w};",
                n / 2
            ));
        } else {
            let v = read(e, src.tensor, "l");
            e.line(format!("for (int l = 0; l < {n}; ++l) {on}[l] = {v};"));
        }
        return;
    }
    if op {
        for (w, pair) in table.chunks(2).enumerate() {
            let (a, b) = (pair[0], pair[1]);
            let v = if sp && a % 2 == 0 && b == a + 1 {
                word(e, src.tensor, &a.to_string())
            } else {
                format!(
                    "(u32){} | ((u32){} << 16)",
                    read(e, src.tensor, &a.to_string()),
                    read(e, src.tensor, &b.to_string())
                )
            };
            e.line(format!("{on}[{w}] = {v};"));
        }
    } else {
        for (l, &s) in table.iter().enumerate() {
            let v = read(e, src.tensor, &s.to_string());
            e.line(format!("{on}[{l}] = {v};"));
        }
    }
}
