//! The operand types the matmul commands (`bench matmul`, `soak`) run in, and which of a
//! version's kernels take each.

use half::{bf16, f16};
use tilus_bench::operand::Operand;
use tilus_bench::registry::{self, ConfigureFn, Entry, MatmulVersion};
use tilus_kernels::gemm::Matmuls;

/// An operand type of the matmul commands: which of a version's kernels take it.
pub(crate) trait BenchOperand: Operand + Matmuls {
    /// The version's fixed-configuration kernel in this type, if it has one.
    fn fixed(mv: &MatmulVersion) -> Option<registry::FixedFn<Self>>;
    /// The version's autotuned kernel in this type, if it has one.
    fn tuned(mv: &MatmulVersion) -> Option<registry::TunedFn<Self>>;
    /// The entry's script in this type with a configuration from settings (its main kernel's,
    /// for a version of two), if it has one.
    fn configure(e: &Entry) -> Option<ConfigureFn>;
}

impl BenchOperand for f16 {
    fn fixed(mv: &MatmulVersion) -> Option<registry::FixedFn<f16>> {
        Some(mv.fixed)
    }
    fn tuned(mv: &MatmulVersion) -> Option<registry::TunedFn<f16>> {
        Some(mv.tuned)
    }
    fn configure(e: &Entry) -> Option<ConfigureFn> {
        Some(e.configure)
    }
}

impl BenchOperand for bf16 {
    fn fixed(mv: &MatmulVersion) -> Option<registry::FixedFn<bf16>> {
        mv.bf16.map(|b| b.fixed)
    }
    fn tuned(mv: &MatmulVersion) -> Option<registry::TunedFn<bf16>> {
        mv.bf16.map(|b| b.tuned)
    }
    fn configure(e: &Entry) -> Option<ConfigureFn> {
        e.matmul.as_ref()?.bf16.map(|b| b.configure)
    }
}
