//! The language: the [`Script`] trait, the [`Kernel`] builder and typed handles.
//!
//! Instruction groups are namespaces on the builder, as in the seed: `k.tma()`,
//! `k.mbarrier()`; tensor and control instructions are methods of [`Kernel`].

mod args;
mod arith;
mod atomics;
mod cluster;
mod copy_async;
mod debug;
mod divmod;
mod element;
mod kernel;
mod mbarrier;
mod mma;
mod persistent;
mod pipeline;
mod raster;
mod registers;
mod scalar;
mod scatter;
mod script;
mod shape;
mod shared_writes;
mod tensors;
mod tma;
mod wgmma;
mod workspace;

pub use crate::ir::HostValue;
pub use crate::ir::WgmmaTarget;
pub use args::{Arg, ArgList, Const, Handles, HostArgs, Ptr, PtrMut, PtrVal};
pub use arith::{rand, randint, randn, where_, IntoTile, Tile, TileMath};
pub use cluster::MAX_CLUSTER_BLOCKS;
pub use debug::Printable;
pub use divmod::FastDivisor;
pub use element::Element;
pub use kernel::{BlockIdx, Kernel};
pub use mbarrier::{Barrier, Barriers, Mbarrier};
pub use pipeline::{ConsumerSlot, Pipeline, ProducerSlot};
pub use scalar::{cdiv, Dims, Scalar, Scalars, Val};
pub use scatter::IndexTiles;
pub use script::{config_string, snake_case, DynScript, Script};
pub use tensors::{GlobalTensor, RegisterTensor, SharedTensor};
pub use tma::Tma;
pub use wgmma::{Wgmma, WgmmaOperand};

use crate::ir::Program;
use crate::{Error, Result};

/// The argument names of a script, as the generated code and error messages use them (the
/// script's own, else `arg0`, `arg1`, ...).
pub fn arg_names<S: Script>() -> Vec<String> {
    let given = S::arg_names();
    (0..<S::Args as ArgList>::LEN)
        .map(|i| {
            given
                .get(i)
                .map(|s| s.to_string())
                .unwrap_or_else(|| format!("arg{i}"))
        })
        .collect()
}

/// Traces a script into an (unchecked) program. `consts` holds the values of the script's
/// `Const` arguments, in order.
pub fn trace<S: Script>(script: &S, consts: &[i64]) -> Result<Program> {
    let positions = <S::Args as ArgList>::const_positions();
    if positions.len() != consts.len() {
        return Err(Error::Argument {
            arg: "<constants>".into(),
            message: format!(
                "the script has {} compile-time constant arguments, {} values were given",
                positions.len(),
                consts.len()
            ),
        });
    }
    let names = arg_names::<S>();
    let mut k = Kernel::new(script.name());
    let handles = <S::Args as ArgList>::declare(&mut k, &names, consts);
    // a constant the kernel's type cannot hold would silently wrap in every expression
    for prm in &k.prog.params {
        if let crate::ir::ParamKind::Const(t, v) = prm.kind {
            if crate::ir::wrap_to(v, t) != v {
                return Err(Error::Argument {
                    arg: prm.name.clone(),
                    message: format!("{v} does not fit the argument's type {t}"),
                });
            }
        }
    }
    script.body(&mut k, handles);
    let (program, diags) = k.finish();
    if diags.is_empty() {
        Ok(program)
    } else {
        Err(Error::Script(diags))
    }
}
