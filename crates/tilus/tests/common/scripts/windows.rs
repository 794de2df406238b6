//! A wgmma into windows of its accumulator's columns, which the interpreter
//! (`interp/wgmma.rs`) and the GPU (`runtime/gpu.rs`) run against the same CPU reference.

use super::copy_in;
use crate::common::mark;
use half::f16;
use tilus::prelude::*;

/// Columns of each window (and of B's halves).
pub const WINDOW: usize = 64;

/// `c[64, 128]` from `a[64, 64]` and `b[128, 64]`: columns 0..64 overwritten with
/// `a @ b[0..64]ᵀ` (the accumulator's initial 5.0s ignored), columns 64..128 accumulating
/// `a @ b[64..128]ᵀ` onto the 5.0s; the first window is stored while the second is still
/// in flight. `early`: a slice of the second window's columns is read before its wait (a
/// fault; the verifier rejects it). `swapped`: the first window adds and the second
/// overwrites. Marked calls: `mma` (the second window's product), `read` (the early read).
#[derive(Clone, Copy, Debug, Hash)]
pub struct WgmmaWindows {
    pub early: bool,
    pub swapped: bool,
}

impl WgmmaWindows {
    /// What the kernel stores, from the inputs: `5 + ...` on the added window.
    pub fn expect(&self, a: &[f16], b: &[f16]) -> Vec<f64> {
        let k = 64;
        let mut c = vec![0.0; 64 * 2 * WINDOW];
        for i in 0..64 {
            for j in 0..2 * WINDOW {
                let dot: f64 = (0..k)
                    .map(|x| a[i * k + x].to_f64() * b[j * k + x].to_f64())
                    .sum();
                let added = (j >= WINDOW) != self.swapped;
                c[i * 2 * WINDOW + j] = if added { 5.0 + dot } else { dot };
            }
        }
        c
    }
}

impl Script for WgmmaWindows {
    type Args = (Ptr<f16>, Ptr<f16>, PtrMut<f32>);
    fn body(&self, k: &mut Kernel, (a, b, c): Handles<Self::Args>) {
        let w = WINDOW as i32;
        k.blocks([1]);
        k.warps(4);
        let ga = k.global_view(a, [64, 64]);
        let gb = k.global_view(b, [2 * w, 64]);
        let sa = k.shared_tensor::<f16>([64, 64]);
        let sb = k.shared_tensor::<f16>([2 * w, 64]);
        copy_in(k, &[(&ga, &sa), (&gb, &sb)]);
        let acc = k.register_tensor::<f32>([64, 2 * w], 5.0);
        k.wgmma().fence();
        let (mut left, mut right) = (WgmmaTarget::window(0), WgmmaTarget::window(i64::from(w)));
        if self.swapped {
            right = right.overwriting();
        } else {
            left = left.overwriting();
        }
        k.wgmma()
            .mma_to(&sa, &sb.rows(0, w).transpose(), &acc, left);
        k.wgmma().commit_group();
        #[rustfmt::skip]
        mark("mma", line!(), k.wgmma().mma_to(&sa, &sb.rows(w, w).transpose(), &acc, right));
        k.wgmma().commit_group();
        k.wgmma().wait_group(1);
        let gc = k.global_view(c, [64, 2 * w]);
        let done = k.slice(&acc, 1, 0, w);
        k.store_global(&gc, &done, [0, 0]);
        if self.early {
            #[rustfmt::skip]
            mark("read", line!(), k.slice(&acc, 1, w, w));
        }
        k.wgmma().wait_group(0);
        let rest = k.slice(&acc, 1, w, w);
        k.store_global(&gc, &rest, [0, w]);
    }
}
