//! The two products of a step of keys, as the one-warp-group kernels (the forward pass's
//! first version and the decode step) issue them: `S = Q·Kᵀ` over the head dimension's
//! chunks of 64, then `O = O·alpha + P·V` with `P` in registers, each waited for.

use tilus::lang::{WgmmaOperand, WgmmaTarget};
use tilus::prelude::*;

/// `S = Q·Kᵀ` into `s`: Q's chunks `sq.at(c)` against stage `stage`'s key chunks
/// `sk.at(stage · chunks + c)` (K-major operands of at most 128-byte rows), the first chunk's
/// product overwriting `s` (no zeroing); waits for it.
pub(crate) fn scores<T: Element>(
    k: &mut Kernel,
    (sq, sk): (&SharedTensor<T>, &SharedTensor<T>),
    (stage, chunks): (Val, i32),
    s: &RegisterTensor<f32>,
) {
    let q = chunks_of(sq, chunks);
    issue_scores(k, (&q, sk), stage, s);
    k.wgmma().wait_group(0);
}

/// Q's chunks of 64 columns, `sq.at(c)`, as [`issue_scores`] takes them.
pub(crate) fn chunks_of<T>(sq: &SharedTensor<T>, chunks: i32) -> Vec<SharedTensor<T>> {
    (0..chunks).map(|c| sq.at(Val::constant(c))).collect()
}

/// [`scores`] issued and committed as one group, not waited for, with Q's chunks `q` in
/// shared memory or in registers (WGMMA's A operand either way).
pub(crate) fn issue_scores<T: Element, Q: WgmmaOperand<T>>(
    k: &mut Kernel,
    (q, sk): (&[Q], &SharedTensor<T>),
    stage: Val,
    s: &RegisterTensor<f32>,
) {
    let chunks = q.len() as i32;
    k.wgmma().fence();
    for (c, qc) in q.iter().enumerate() {
        let target = if c == 0 {
            WgmmaTarget::all().overwriting()
        } else {
            WgmmaTarget::all()
        };
        let ks = sk.at(k.let_i32(stage * chunks + c as i32));
        k.wgmma().mma_to(qc, &ks.transpose(), s, target);
    }
    k.wgmma().commit_group();
}

/// `acc = acc · alpha + P·V`: the output so far rescaled, then `P` rounded to `T` as the A
/// operand (in registers) against the stage's values `sv` (MN-major, as stored); waits for it.
pub(crate) fn accumulate<T: Element>(
    k: &mut Kernel,
    (p, alpha): (&RegisterTensor<f32>, &RegisterTensor<f32>),
    sv: &SharedTensor<T>,
    acc: &RegisterTensor<f32>,
) {
    issue_accumulate(k, (p, alpha), sv, acc);
    k.wgmma().wait_group(0);
}

/// [`accumulate`] issued and committed as one group, not waited for.
pub(crate) fn issue_accumulate<T: Element>(
    k: &mut Kernel,
    (p, alpha): (&RegisterTensor<f32>, &RegisterTensor<f32>),
    sv: &SharedTensor<T>,
    acc: &RegisterTensor<f32>,
) {
    k.assign_tile(acc, *acc * *alpha);
    let p16 = k.cast::<T>(p);
    k.wgmma().fence();
    k.wgmma().mma(&p16, sv, acc);
    k.wgmma().commit_group();
}
