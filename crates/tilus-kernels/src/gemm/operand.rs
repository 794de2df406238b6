//! The matmul kernels' operand types: [`Bf16`] runs a kernel written for f16 on bf16 operands
//! (the same configuration, search space and body, with the element type swapped); the
//! argument lists of the matmul kernels.

use std::fmt::{self, Debug};
use tilus::prelude::{Const, Ptr, PtrMut};
use tilus::tune::{Binding, Space, Tunable};

/// Kernel `S` of the series on bf16 operands (see the module documentation). Its kernel name
/// is `S`'s with `_bf16` after it; its configurations print as `S`'s.
///
/// ```
/// use tilus::Script;
/// use tilus_kernels::gemm::{persistent::MatmulPersistent, Bf16};
/// let (m, n, k) = (128, 256, 64);
/// let (a, b) = (vec![half::bf16::ONE; m * k], vec![half::bf16::ONE; n * k]);
/// let mut c = vec![half::bf16::NAN; m * n];
/// let kernel = Bf16(MatmulPersistent::default());
/// assert_eq!(kernel.name(), "matmul_persistent_bf16");
/// tilus::interpret(&kernel, (m as i32, n as i32, k as i32, &a[..], &b[..], &mut c[..]))?;
/// assert!(c.iter().all(|&v| v == half::bf16::from_f32(64.0)));
/// # Ok::<(), tilus::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct Bf16<S>(pub S);

impl<S: Debug> Debug for Bf16<S> {
    /// As the f16 kernel's configuration (the element type is in the kernel's name).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// `impl Script for Bf16<S>`: the kernel named `name`, with arguments `args` named `names`,
/// whose body is `S`'s generic body `body::<bf16>` (the f16 kernel's `Script` impl calls the
/// same body with `f16`).
macro_rules! bf16_script {
    ($s:ty, $name:expr, $args:ty, $names:expr, $body:ident) => {
        impl tilus::Script for $crate::gemm::operand::Bf16<$s> {
            type Args = $args;

            fn name(&self) -> String {
                $name.into()
            }

            fn arg_names() -> &'static [&'static str] {
                $names
            }

            fn body(
                &self,
                k: &mut tilus::prelude::Kernel,
                args: tilus::prelude::Handles<Self::Args>,
            ) {
                self.0.$body::<half::bf16>(k, args);
            }
        }
    };
}
pub(crate) use bf16_script;

/// `impl Script` for kernel `S` in f16 (named `name`) and for `Bf16<S>` (named `name` then
/// `_bf16`), both running `S`'s generic body `body`, with arguments `args<T>` named `names`.
macro_rules! f16_and_bf16_scripts {
    ($s:ty, $name:literal, $args:ident, $names:expr, $body:ident) => {
        impl tilus::Script for $s {
            type Args = $args<half::f16>;

            fn name(&self) -> String {
                $name.into()
            }

            fn arg_names() -> &'static [&'static str] {
                $names
            }

            fn body(
                &self,
                k: &mut tilus::prelude::Kernel,
                args: tilus::prelude::Handles<Self::Args>,
            ) {
                self.$body::<half::f16>(k, args);
            }
        }

        $crate::gemm::operand::bf16_script!(
            $s,
            concat!($name, "_bf16"),
            $args<half::bf16>,
            $names,
            $body
        );
    };
}
pub(crate) use f16_and_bf16_scripts;

/// The f16 kernel's space, point for point.
impl<S: Tunable> Tunable for Bf16<S>
where
    Bf16<S>: tilus::Script,
{
    fn space() -> Space {
        S::space()
    }
    fn from_binding(binding: &Binding) -> Result<Self, String> {
        S::from_binding(binding).map(Bf16)
    }
    fn to_binding(&self) -> Option<Binding> {
        self.0.to_binding()
    }
}

/// A matmul's arguments `(m, n, k, a, b, c)` in `T`.
///
/// ```
/// use tilus_kernels::gemm::operand::{MatmulArgsOf, PartialsArgsOf, ReduceArgsOf};
/// use tilus_kernels::gemm::{persistent::MatmulPersistent, split_k::*, Bf16};
/// fn takes<S: tilus::Script<Args = A>, A>() {}
/// takes::<MatmulPersistent, MatmulArgsOf<half::f16>>();
/// takes::<Bf16<MatmulPersistent>, MatmulArgsOf<half::bf16>>();
/// takes::<MatmulSplitK, PartialsArgsOf<half::f16>>();
/// takes::<SplitKReduce, ReduceArgsOf<half::f16>>();
/// ```
pub type MatmulArgsOf<T> = (i32, Const<i32>, Const<i32>, Ptr<T>, Ptr<T>, PtrMut<T>);
/// Split-K's partials' arguments `(m, n, k, a, b, workspace, counters, c)` (the counters and C
/// written with `serial = 1` only).
pub type PartialsArgsOf<T> = (
    i32,
    Const<i32>,
    Const<i32>,
    Ptr<T>,
    Ptr<T>,
    PtrMut<f32>,
    PtrMut<i32>,
    PtrMut<T>,
);
/// Split-K's sum's arguments `(m, n, splits, workspace, c)`.
pub type ReduceArgsOf<T> = (i32, Const<i32>, Const<i32>, Ptr<f32>, PtrMut<T>);
