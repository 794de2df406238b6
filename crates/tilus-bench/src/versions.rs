//! The kernel library's matmul entry points as versions of `tilus bench matmul` and `tilus
//! soak`: split-K (`split_k`) and the per-shape picker (`matmul`).

use crate::harness::Problem;
use crate::operand::Operand;
use crate::run::Version;
use std::sync::Arc;
use tilus::cudarc::driver::CudaStream;
use tilus_kernels::gemm::{Gemm, SplitK};

/// The library's error as the language's, which [`Version::launch`] returns: a refused call
/// becomes an argument error that names the kernel's rule.
fn as_tilus(e: tilus_kernels::Error) -> tilus::Error {
    match e {
        tilus_kernels::Error::Tilus(t) => t,
        tilus_kernels::Error::Shape { kernel, message } => tilus::Error::Argument {
            arg: kernel.into(),
            message,
        },
    }
}

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

impl<T: Operand> Version<T> for Gemm<T> {
    fn name(&self) -> String {
        "matmul".into()
    }

    fn launch(&self, stream: &Arc<CudaStream>, p: &mut Problem<T>) -> tilus::Result<()> {
        self.matmul(stream, (p.m, p.n, p.k), &p.a, &p.b, &mut p.c)
            .map_err(as_tilus)
    }

    fn describe(&self, _: &Arc<CudaStream>, p: &mut Problem<T>) -> Option<String> {
        self.chosen_for((p.m, p.n, p.k))
            .map(|k| k.name().to_string())
    }
}
