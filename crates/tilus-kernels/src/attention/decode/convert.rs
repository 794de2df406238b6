//! A step's keys and values converted from the cache's codes into the products' type, in
//! shared memory: what the decode kernel's one warp group does between its products, and
//! what its converters' warp group does beside them.

use tilus::layout::RegisterLayout;
use tilus::prelude::*;

/// Each thread a run of 8 or 16 consecutive elements of a row of a `[rows, cols]` tile of a
/// warp group: 8-byte loads of codes and 16-byte stores of `T` (one element at a time in the
/// inferred layout, a column per thread).
fn runs(rows: i32, cols: i32) -> RegisterLayout {
    let across = 128 / rows;
    RegisterLayout::spatial(&[rows as i64, across as i64])
        .compose(&RegisterLayout::local(&[1, (cols / across) as i64]))
}

/// The keys of a step, `chunks` tiles `[bkv, 64]` of codes from `sk.at(stage · chunks + c)`,
/// into `to(c)`, 16 rows at a time.
pub(super) fn keys<C: Element, T: Element>(
    k: &mut Kernel,
    (sk, stage, chunks): (&SharedTensor<C>, Val, i32),
    to: impl Fn(&mut Kernel, i32) -> SharedTensor<T>,
    bkv: i32,
) {
    for i in 0..bkv / 16 {
        for c in 0..chunks {
            let from = sk.at(k.let_i32(stage * chunks + c)).rows(i * 16, 16);
            let x = k.load_shared(&from);
            k.annotate_layout(&x, runs(16, 64));
            let x = k.cast::<T>(&x);
            let to = to(k, c).rows(i * 16, 16);
            k.store_shared(&to, &x);
        }
    }
}

/// The values of a step, `[bkv, d]` codes in `from`, into `to`, `n` rows at a time; the rows
/// at positions from `ctx` on (the step's first row at `first`) zeroed on the way (a code
/// left in a cache past its context may be NaN, and zero times NaN is NaN).
pub(super) fn values<C: Element, T: Element>(
    k: &mut Kernel,
    (from, to): (&SharedTensor<C>, &SharedTensor<T>),
    (first, ctx): (Val, Val),
    (bkv, d, n): (i32, i32, i32),
) {
    for i in 0..bkv / n {
        let v = k.load_shared(&from.rows(i * n, n));
        k.annotate_layout(&v, runs(n, d));
        let v = k.cast::<T>(&v);
        let row = k.arange([n, 1], 0) + first + i * n;
        let v = k.compute(where_(row.lt(ctx), v, 0.0));
        k.store_shared(&to.rows(i * n, n), &v);
    }
}
