//! An epilogue that multiplies each tile's f32 accumulator by one scalar before another
//! epilogue rounds and stores it: the FP8 GEMM's per-tensor scales (`scale_a · scale_b`),
//! applied once a tile, where the products are still exact in f32.

use crate::gemm::tile_epilogue::{TileAt, TileEpilogue};
use tilus::prelude::*;

/// See the module documentation. Everything but the scaling is `inner`'s (its deferred
/// stores included: the scaled result is what it holds).
pub(crate) struct Scaled<'a> {
    inner: &'a dyn TileEpilogue,
    alpha: Val,
}

impl<'a> Scaled<'a> {
    /// `inner` on `alpha ·` each accumulator.
    pub(crate) fn new(inner: &'a dyn TileEpilogue, alpha: Val) -> Scaled<'a> {
        Scaled { inner, alpha }
    }
}

impl TileEpilogue for Scaled<'_> {
    fn tile(&self, k: &mut Kernel, g: usize, acc: &RegisterTensor<f32>, at: &TileAt) {
        k.assign_tile(acc, *acc * Scalar::from(self.alpha));
        self.inner.tile(k, g, acc, at);
    }
    fn finish(&self, k: &mut Kernel, g: usize) {
        self.inner.finish(k, g);
    }
    fn prefetches(&self) -> bool {
        self.inner.prefetches()
    }
    fn prefetch(&self, k: &mut Kernel, g: usize, at: &TileAt) {
        self.inner.prefetch(k, g, at);
    }
    fn deferred_chunks(&self) -> i32 {
        self.inner.deferred_chunks()
    }
    fn begin(&self, k: &mut Kernel, g: usize) {
        self.inner.begin(k, g);
    }
    fn store_held(&self, k: &mut Kernel, g: usize, j: i32) {
        self.inner.store_held(k, g, j);
    }
}
