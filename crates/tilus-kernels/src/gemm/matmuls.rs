//! [`Matmuls`]: which kernels take each operand type (f16, and bf16 through [`Bf16`]), for
//! the host APIs that launch them ([`super::SplitK`], [`super::Gemm`]).

use crate::gemm::general::{GeneralArgsOf, MatmulGeneral, StageArgsOf, StageCopy};
use crate::gemm::operand::{Bf16, MatmulArgsOf, PartialsArgsOf, ReduceArgsOf};
use crate::gemm::persistent::MatmulPersistent;
use crate::gemm::split_k::kernels::{MatmulSplitK, SplitKReduce};
use crate::gemm::stream_k::{MatmulStreamK, StreamKArgsOf};
use crate::Operand;
use half::{bf16, f16};
use tilus::tune::Tunable;

/// The kernels of the series that take operand type `T`: what [`super::SplitK`] and
/// [`super::Gemm`] launch for it.
///
/// ```
/// use tilus::Script;
/// use tilus_kernels::gemm::Matmuls;
/// fn sum_kernel<T: Matmuls>() -> String {
///     T::reduce().name()
/// }
/// assert_eq!(sum_kernel::<half::f16>(), "split_k_reduce");
/// assert_eq!(sum_kernel::<half::bf16>(), "split_k_reduce_bf16");
/// ```
pub trait Matmuls: Operand {
    /// v6.
    type V6: Tunable<Args = MatmulArgsOf<Self>> + AsRef<MatmulPersistent>;
    /// Split-K's partial products.
    type Partials: Tunable<Args = PartialsArgsOf<Self>> + AsRef<MatmulSplitK>;
    /// Split-K's sum.
    type Reduce: tilus::Script<Args = ReduceArgsOf<Self>>;
    /// The general GEMM (any order, strides and batches).
    type General: Tunable<Args = GeneralArgsOf<Self>> + AsRef<MatmulGeneral>;
    /// The general GEMM's kernel with this configuration.
    fn general(config: MatmulGeneral) -> Self::General;
    /// The general GEMM's staging copy of operands TMA cannot read.
    type Stage: tilus::Script<Args = StageArgsOf<Self>>;
    /// The staging copy's kernel.
    fn stage() -> Self::Stage;
    /// The partials' kernel with this configuration.
    fn partials(config: MatmulSplitK) -> Self::Partials;
    /// Stream-K.
    type StreamK: Tunable<Args = StreamKArgsOf<Self>> + AsRef<MatmulStreamK>;
    /// Stream-K's kernel with this configuration.
    fn stream_k(config: MatmulStreamK) -> Self::StreamK;
    /// The sum's kernel.
    fn reduce() -> Self::Reduce;
}

impl Matmuls for f16 {
    type V6 = MatmulPersistent;
    type Partials = MatmulSplitK;
    type Reduce = SplitKReduce;
    type General = MatmulGeneral;
    fn general(config: MatmulGeneral) -> MatmulGeneral {
        config
    }
    type Stage = StageCopy;
    fn stage() -> StageCopy {
        StageCopy
    }
    fn partials(config: MatmulSplitK) -> MatmulSplitK {
        config
    }
    type StreamK = MatmulStreamK;
    fn stream_k(config: MatmulStreamK) -> MatmulStreamK {
        config
    }
    fn reduce() -> SplitKReduce {
        SplitKReduce
    }
}

impl Matmuls for bf16 {
    type V6 = Bf16<MatmulPersistent>;
    type Partials = Bf16<MatmulSplitK>;
    type Reduce = Bf16<SplitKReduce>;
    type General = Bf16<MatmulGeneral>;
    fn general(config: MatmulGeneral) -> Bf16<MatmulGeneral> {
        Bf16(config)
    }
    type Stage = Bf16<StageCopy>;
    fn stage() -> Bf16<StageCopy> {
        Bf16(StageCopy)
    }
    fn partials(config: MatmulSplitK) -> Bf16<MatmulSplitK> {
        Bf16(config)
    }
    type StreamK = Bf16<MatmulStreamK>;
    fn stream_k(config: MatmulStreamK) -> Bf16<MatmulStreamK> {
        Bf16(config)
    }
    fn reduce() -> Bf16<SplitKReduce> {
        Bf16(SplitKReduce)
    }
}

impl<S> AsRef<S> for Bf16<S> {
    fn as_ref(&self) -> &S {
        &self.0
    }
}

impl AsRef<MatmulPersistent> for MatmulPersistent {
    fn as_ref(&self) -> &MatmulPersistent {
        self
    }
}

impl AsRef<MatmulGeneral> for MatmulGeneral {
    fn as_ref(&self) -> &MatmulGeneral {
        self
    }
}

impl AsRef<MatmulSplitK> for MatmulSplitK {
    fn as_ref(&self) -> &MatmulSplitK {
        self
    }
}

impl AsRef<MatmulStreamK> for MatmulStreamK {
    fn as_ref(&self) -> &MatmulStreamK {
        self
    }
}
