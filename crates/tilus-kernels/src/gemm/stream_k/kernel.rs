//! The stream-K kernel, [`MatmulStreamK`]: the persistent kernel with the last rounds' tiles
//! shared out by K steps (see the module above).

use super::shares::StreamK;
use crate::gemm::persistent::MatmulPersistent;
use crate::gemm::tile_epilogue::{CastAndStore, STORE_CHUNK};
use tilus::lang::Element;
use tilus::prelude::*;
use tilus::tune::{Binding, Space};

/// The stream-K kernel: v6's cooperative, persistent main loop and epilogue on one of its
/// configurations (`ping_pong`, `persistent` and `hilbert` are v6's defaults here).
///
/// Its arguments are v6's and a workspace and flags, sized by [`super::workspace_len`] and
/// [`super::flags_len`] (the flags zero before the first launch; each launch leaves them so):
///
/// ```
/// use tilus_kernels::gemm::stream_k::{flags_len, workspace_len, MatmulStreamK};
/// let (m, n, k) = (256, 256, 128);
/// let (a, b) = (vec![half::f16::ONE; m * k], vec![half::f16::ONE; n * k]);
/// let mut c = vec![half::f16::NAN; m * n];
/// let config = MatmulStreamK::default();
/// let mut w = vec![0.0f32; workspace_len(config.tile.block_m as usize, config.tile.block_n as usize)];
/// let mut flags = vec![0i32; flags_len()];
/// let args = (m as i32, n as i32, k as i32, &a[..], &b[..], &mut c[..], &mut w[..], &mut flags[..]);
/// tilus::interpret(&config, args)?;
/// assert!(c.iter().all(|&v| v == half::f16::from_f32(128.0)));
/// assert!(flags.iter().all(|&f| f == 0));
/// # Ok::<(), tilus::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct MatmulStreamK {
    /// The block tile and the ring.
    pub tile: MatmulPersistent,
}

impl std::fmt::Debug for MatmulStreamK {
    /// The hyperparameters of its space, as they are set (`--set block_n=128`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = &self.tile;
        f.debug_struct("MatmulStreamK")
            .field("block_m", &t.block_m)
            .field("block_n", &t.block_n)
            .field("stages", &t.stages)
            .field("group_m", &t.group_m)
            .field("cluster_m", &t.cluster_m)
            .field("cluster_n", &t.cluster_n)
            .finish()
    }
}

impl Default for MatmulStreamK {
    /// v6's default configuration.
    fn default() -> Self {
        MatmulStreamK {
            tile: MatmulPersistent::default(),
        }
    }
}

/// v6's arguments, then the workspace and the flags.
///
/// ```
/// use tilus_kernels::gemm::stream_k::{MatmulStreamK, StreamKArgsOf};
/// fn takes<S: tilus::Script<Args = StreamKArgsOf<half::f16>>>() {}
/// takes::<MatmulStreamK>();
/// ```
pub type StreamKArgsOf<T> = (
    i32,
    Const<i32>,
    Const<i32>,
    Ptr<T>,
    Ptr<T>,
    PtrMut<T>,
    PtrMut<f32>,
    PtrMut<i32>,
);

/// The names of the arguments in the generated code.
pub(crate) const STREAM_K_ARG_NAMES: &[&str] = &[
    "m_size",
    "n_size",
    "k_size",
    "a_ptr",
    "b_ptr",
    "c_ptr",
    "w_ptr",
    "flags_ptr",
];

/// The handles of the arguments in operand type `T`.
pub(crate) type StreamKHandles<T> = (
    Val,
    Val,
    Val,
    PtrVal<T>,
    PtrVal<T>,
    PtrVal<T>,
    PtrVal<f32>,
    PtrVal<i32>,
);

crate::gemm::operand::f16_and_bf16_scripts!(
    MatmulStreamK,
    "matmul_stream_k",
    StreamKArgsOf,
    STREAM_K_ARG_NAMES,
    matmul
);

impl MatmulStreamK {
    /// The kernel's body for operand type `T`.
    pub(crate) fn matmul<T: Element>(
        &self,
        k: &mut Kernel,
        (m_size, n_size, k_size, a_ptr, b_ptr, c_ptr, w_ptr, flags_ptr): StreamKHandles<T>,
    ) {
        let t = MatmulPersistent {
            ping_pong: 0,
            persistent: 1,
            hilbert: 0,
            ..self.tile.clone()
        };
        let gc = k.name_next("gc").global_view::<T>(c_ptr, [m_size, n_size]);
        let width = if t.group_rows() > 64 {
            STORE_CHUNK / 2
        } else {
            STORE_CHUNK
        };
        let stores = t.c_stores(k, gc, n_size, width);
        let per_unit = t.per_unit();
        let sk = StreamK::new(
            (t.block_m, t.block_n, t.group_rows(), per_unit),
            CastAndStore::new(stores, t.block_n, false),
            (w_ptr, flags_ptr),
        );
        t.tiles(
            k,
            (m_size, n_size, k_size),
            (a_ptr, b_ptr),
            &sk.epilogue,
            Some(&sk),
        );
    }
}

/// The hyperparameters stream-K's search space covers (v6's others keep their defaults).
const STREAM_K_TUNED: &[&str] = &[
    "block_m",
    "block_n",
    "stages",
    "group_m",
    "cluster_m",
    "cluster_n",
];

/// The search space: v6's cooperative tiles, its stages and orders, alone or in pairs.
impl Tunable for MatmulStreamK {
    fn space() -> Space {
        Space::new()
            .axis(
                &["block_m", "block_n"],
                vec![vec![128, 128], vec![128, 256], vec![256, 128]],
            )
            .and_then(|s| s.values("stages", &[3, 4]))
            .and_then(|s| s.values("group_m", &[1, 8]))
            .and_then(|s| s.values("cluster_m", &[1, 2]))
            .and_then(|s| s.values("cluster_n", &[1]))
            .expect("the stream-K space is well formed")
    }

    fn from_binding(binding: &Binding) -> Result<Self, String> {
        MatmulPersistent::from_subset(binding, STREAM_K_TUNED).map(|tile| MatmulStreamK { tile })
    }

    fn to_binding(&self) -> Option<Binding> {
        Some(self.tile.subset_binding(STREAM_K_TUNED))
    }
}
