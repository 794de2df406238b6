//! The unfused baseline of `matmul_epilogue`: an elementwise kernel that applies the same
//! epilogue, `C = act(alpha · T + beta · D + bias)`, to a product `T` another kernel (cuBLAS)
//! has already written to global memory. It reads T and D and writes C, 16 bytes a thread at
//! a time: the extra pass over memory that fusing the epilogue saves.

use std::marker::PhantomData;
use tilus::prelude::*;
use tilus_kernels::gemm::epilogue::Activation;

/// The pass. Each block covers `rows × cols` elements of C.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EpiloguePass<A: Activation> {
    /// Rows per block.
    pub rows: i32,
    /// Columns per block.
    pub cols: i32,
    act: PhantomData<A>,
}

impl<A: Activation> Default for EpiloguePass<A> {
    /// 32 × 256 elements: 64 a thread over 4 warps, eight 16-byte accesses of each array.
    fn default() -> Self {
        EpiloguePass {
            rows: 32,
            cols: 256,
            act: PhantomData,
        }
    }
}

impl<A: Activation> Script for EpiloguePass<A> {
    /// `(m, n, alpha, beta, t, d, bias, c)`; `n` is a compile-time constant, as in the
    /// matmul, so that the row pitch is known to keep rows 16-byte aligned and the loads and
    /// stores of T, D and C are vectors.
    type Args = (
        i32,
        Const<i32>,
        f32,
        f32,
        Ptr<f16>,
        Ptr<f16>,
        Ptr<f16>,
        PtrMut<f16>,
    );

    fn name(&self) -> String {
        format!("epilogue_pass_{}", A::NAME)
    }

    fn arg_names() -> &'static [&'static str] {
        &["m", "n", "alpha", "beta", "t", "d", "bias", "c"]
    }

    fn body(&self, k: &mut Kernel, (m, n, alpha, beta, t, d, bias, c): Handles<Self::Args>) {
        k.blocks([cdiv(m, self.rows), cdiv(n, self.cols)]);
        k.warps(4);
        let om = k.let_i32(self.rows * k.block_idx().x);
        let on = k.let_i32(self.cols * k.block_idx().y);
        let gt = k.global_view::<f16>(t, [m, n]);
        let gd = k.global_view::<f16>(d, [m, n]);
        let gbias = k.global_view::<f16>(bias, [n]);
        let gc = k.global_view::<f16>(c, [m, n]);
        let shape = [self.rows, self.cols];
        let tt = k.load_global(&gt, [om, on], shape);
        let td = k.load_global(&gd, [om, on], shape);
        let tb = k.load_global(&gbias, [on], [self.cols]);
        let pre = tt.cast::<f32>() * alpha + td.cast::<f32>() * beta + tb.cast::<f32>();
        let out = k.compute(A::apply(pre).cast::<f16>());
        k.store_global(&gc, &out, [om, on]);
    }
}
