//! A kernel-owned workspace (`global_tensor`): blocks take turns through a semaphore in it,
//! and the last block sets it back to zero, as its `zeroed` declaration promises. The
//! interpreter (`interp/workspace.rs`) and the GPU (`runtime/gpu.rs`) run it. Marked call:
//! `workspace`.

use tilus::prelude::*;

use crate::common::mark;

/// Adds the rows of an `[n, 64]` f32 matrix into a `[64]` output, block `b` adding row `b`
/// after block `b - 1` (a semaphore in a zeroed workspace, `lock_semaphore(b)` then
/// `release_semaphore((b + 1) % n)`: the last block releases 0).
#[derive(Clone, Debug, Hash)]
pub struct TakeTurns {
    /// The planted bug: the last block releases `n`, leaving the workspace dirty.
    pub no_reset: bool,
}

impl TakeTurns {
    /// Columns of a row.
    pub const COLS: usize = 64;

    /// The host reference: `out` plus every row, added in block order (bit for bit).
    pub fn expected(x: &[f32], out: &[f32]) -> Vec<f32> {
        let mut acc = out.to_vec();
        for row in x.chunks(Self::COLS) {
            for (a, v) in acc.iter_mut().zip(row) {
                *a += v;
            }
        }
        acc
    }
}

impl Script for TakeTurns {
    type Args = (i32, Ptr<f32>, PtrMut<f32>);
    fn arg_names() -> &'static [&'static str] {
        &["n", "x", "out"]
    }
    fn body(&self, k: &mut Kernel, (n, x, out): Handles<Self::Args>) {
        let cols = Self::COLS as i32;
        k.blocks([n]);
        k.warps(2);
        let gx = k.global_view::<f32>(x, [n, cols.into()]);
        let go = k.global_view::<f32>(out, [1, cols]);
        let sem = mark("workspace", line!(), k.global_tensor::<i32>([1], true));
        let b = k.let_i32(k.block_idx().x);
        k.lock_semaphore(&sem, [0], b);
        let row = k.load_global(&gx, [b, 0.into()], [1, cols]);
        let acc = k.load_global(&go, [0, 0], [1, cols]);
        let sum = k.compute(acc + row);
        k.store_global(&go, &sum, [0, 0]);
        let next = if self.no_reset { b + 1 } else { (b + 1) % n };
        k.release_semaphore(&sem, [0], next);
    }
}
