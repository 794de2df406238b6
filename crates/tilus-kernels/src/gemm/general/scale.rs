//! The general GEMM's scaling epilogue: `C = alpha · acc + beta · C`, computed in f32 and
//! rounded once, C read only where `beta` is not zero (as BLAS does: a C of NaNs times a zero
//! beta is not read).

use crate::gemm::tile_epilogue::{columns, CStores, TileAt, TileEpilogue};
use tilus::lang::Element;
use tilus::prelude::*;

/// See the module documentation.
pub(crate) struct ScaleAndStore<T: Element> {
    stores: CStores<T>,
    /// C's view `[batch, m, n]`, read for `beta · C`.
    gc: GlobalTensor<T>,
    /// Rows of a consumer warp group's accumulator.
    rows: i32,
    block_n: i32,
    alpha: Val,
    beta: Val,
}

impl<T: Element> ScaleAndStore<T> {
    /// The epilogue storing through `stores` into `gc`, accumulators of `(rows, block_n)`.
    pub(crate) fn new(
        stores: CStores<T>,
        gc: GlobalTensor<T>,
        (rows, block_n): (i32, i32),
        (alpha, beta): (Val, Val),
    ) -> ScaleAndStore<T> {
        ScaleAndStore {
            stores,
            gc,
            rows,
            block_n,
            alpha,
            beta,
        }
    }
}

impl<T: Element> TileEpilogue for ScaleAndStore<T> {
    fn tile(&self, k: &mut Kernel, g: usize, acc: &RegisterTensor<f32>, at: &TileAt) {
        let width = self.stores.width();
        let rows = self.rows;
        self.stores.store(k, g, at.place(), |k, j| {
            k.name_next("acc_part");
            let part = columns(k, (acc, self.block_n), j * width, width);
            let out = k
                .name_next("scaled")
                .compute(part * Scalar::from(self.alpha));
            k.if_(Scalar::from(self.beta).ne_(0.0f32), |k| {
                // C's old values straight into the accumulator's layout (masked at the edges)
                let col = k.let_i32(at.cols + j * width);
                let mut place: Vec<Scalar> = at.batch.into_iter().map(Scalar::from).collect();
                place.extend([Scalar::from(at.rows), Scalar::from(col)]);
                let old = k
                    .name_next("c_old")
                    .load_global(&self.gc, place, [1, rows, width]);
                let old = k.reshape(&old, [rows, width]);
                k.assign_tile(&out, old.cast::<f32>().mul_add(self.beta, out));
            });
            k.name_next("out").cast::<T>(&out)
        });
    }

    fn finish(&self, k: &mut Kernel, g: usize) {
        self.stores.finish(k, g);
    }
}
