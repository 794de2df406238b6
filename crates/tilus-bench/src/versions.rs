//! The kernel library's matmul entry points as versions of `tilus bench matmul` and `tilus
//! soak`: split-K (`split_k`), stream-K (`stream_k`) and the per-shape picker (`matmul`).

use crate::harness::Problem;
use crate::operand::Operand;
use crate::run::Version;
use std::sync::Arc;
use tilus::cudarc::driver::CudaStream;
use tilus_kernels::gemm::stream_k::StreamK;
use tilus_kernels::gemm::{Gemm, SplitK};

impl<T: Operand> Version<T> for SplitK<T> {
    fn name(&self) -> String {
        "split_k".into()
    }

    fn launch(&self, stream: &Arc<CudaStream>, p: &mut Problem<T>) -> tilus::Result<()> {
        self.launch_on(stream, (p.m, p.n, p.k), (&p.a, &p.b), &mut p.c)
    }

    fn describe(&self, stream: &Arc<CudaStream>, p: &mut Problem<T>) -> Option<String> {
        let c = self.config_used(stream, (p.m, p.n, p.k), (&p.a, &p.b), &mut p.c)?;
        Some(tilus::lang::config_string(&format!("{c:?}")))
    }
}

impl<T: Operand> Version<T> for StreamK<T> {
    fn name(&self) -> String {
        "stream_k".into()
    }

    fn launch(&self, stream: &Arc<CudaStream>, p: &mut Problem<T>) -> tilus::Result<()> {
        self.launch_on(stream, (p.m, p.n, p.k), (&p.a, &p.b), &mut p.c)
    }

    fn describe(&self, stream: &Arc<CudaStream>, p: &mut Problem<T>) -> Option<String> {
        let c = self.config_used(stream, (p.m, p.n, p.k), (&p.a, &p.b), &mut p.c)?;
        Some(tilus::lang::config_string(&format!("{c:?}")))
    }

    fn table_path(&self) -> Option<std::path::PathBuf> {
        StreamK::table_path(self)
    }
}

impl<T: Operand> Version<T> for Gemm<T> {
    fn name(&self) -> String {
        "matmul".into()
    }

    fn launch(&self, stream: &Arc<CudaStream>, p: &mut Problem<T>) -> tilus::Result<()> {
        self.matmul(stream, (p.m, p.n, p.k), &p.a, &p.b, &mut p.c)
            .map_err(tilus::Error::from)
    }

    fn describe(&self, _: &Arc<CudaStream>, p: &mut Problem<T>) -> Option<String> {
        self.chosen_for((p.m, p.n, p.k))
            .map(|k| k.name().to_string())
    }
}
