//! The kernels the command line knows, by name: the built-in [`Registry`] (the series and the kernel
//! library) or a crate's own. An entry carries
//! everything a command needs, so a new kernel costs one entry:
//!
//! - `list`: its name and one line about it;
//! - `emit`, `ir`, `check`: a configuration from `--set`s, its search space, its compile-time
//!   constants for a size and the size used when none is given;
//! - `run`: its [`Workload`] (the dimensions of a size, random inputs, a reference and a
//!   check) and a small default size; [`Entry::interpret`] and [`Entry::run_on_gpu`] run it;
//! - `bench matmul`, `bench tune` and `soak`: [`MatmulVersion`], when it is a version of the
//!   matmul series (found by its short name, `v2`, through [`Registry::matmul_version`]);
//! - `bench memory`: [`MemoryBound`], when it is one of the memory-bound kernels, timed beside
//!   a device-to-device copy of the bytes it moves.

use crate::run::{Matmul, MatmulArgs, Version};
use crate::size::{quote, Size};
use crate::workload::Workload;
use crate::workloads::epilogue::EpilogueWorkload;
use crate::{Error, Result};
use half::bf16;
use std::sync::Arc;
use tilus::cudarc::driver::CudaStream;
use tilus::lang::{DynScript, HostValue};
use tilus::lowp::I4;
use tilus::runtime::{Device, LoadedKernel};
use tilus::tune::Tunable;
use tilus_kernels::gemm::epilogue::{Activation, GeluTanh, Identity, MatmulEpilogue, Relu};
use tilus_kernels::gemm::operand::Bf16;

/// Hyperparameter settings from the command line: `(name, value)` pairs, each name once.
pub type Settings = [(String, i64)];

/// A kernel's script with a configuration from settings (its default with them applied).
pub type ConfigureFn = fn(&Settings) -> Result<Box<dyn DynScript>>;

/// Builds a matmul version with a fixed configuration: the kernel and its `name=value` pairs.
pub type FixedFn<T = half::f16> = fn(&Settings, &Device) -> Result<(Box<dyn Version<T>>, String)>;

/// Builds an autotuned matmul version: bound to the device, tuned on its first launch of each
/// new problem (or dispatched from the on-disk table).
pub type TunedFn<T = half::f16> = fn(&Device) -> Result<Box<dyn Version<T>>>;

/// How a kernel takes part in `tilus bench matmul` and `tilus soak`: as a version of the
/// matmul series (the matmul [`Workload`]), checked and timed beside cuBLAS.
pub struct MatmulVersion {
    /// Its name in tables and in `--versions` (`v0`).
    pub version: &'static str,
    /// The kernel with a fixed configuration (the default with the settings applied), and
    /// that configuration as `name=value` pairs.
    pub fixed: FixedFn,
    /// The autotuned kernel: what `bench matmul` runs when [`MatmulVersion::tuned_in_bench`]
    /// says so, and what `bench tune` times the first call of (every version of the series
    /// has a search space).
    pub tuned: TunedFn,
    /// Whether `bench matmul` autotunes this version (without `--set` and `--fixed`); when
    /// not, it runs the default configuration.
    pub tuned_in_bench: bool,
    /// Whether `tilus soak` launches it (with its default configuration).
    pub soak: bool,
    /// The same kernel on bf16 operands, for the versions that have it
    /// (`tilus bench matmul --dtype bf16`).
    pub bf16: Option<Bf16Version>,
}

/// A matmul version on bf16 operands: as [`MatmulVersion::fixed`] and
/// [`MatmulVersion::tuned`].
#[derive(Clone, Copy)]
pub struct Bf16Version {
    /// Its script (the main kernel's, for a version of two) with a configuration from
    /// settings, as [`Entry::configure`]: what `tilus soak` compiles up front.
    pub configure: ConfigureFn,
    /// The kernel with a fixed configuration, and that configuration.
    pub fixed: FixedFn<bf16>,
    /// The autotuned kernel.
    pub tuned: TunedFn<bf16>,
}

/// Chooses the autotuned configuration of a kernel for these launch arguments (tuning on
/// first use) and returns its kernel and the configuration as `name=value` pairs.
pub type TunedKernelFn =
    fn(&Device, &Arc<CudaStream>, &[HostValue]) -> Result<(Arc<LoadedKernel>, String)>;

/// How a kernel takes part in `tilus bench memory`: its size for a benchmark's `ROWSxCOLS`,
/// the bytes it reads and writes, and its autotuned kernel.
pub struct MemoryBound {
    /// The kernel's size for a `[rows, cols]` benchmark size (a vector of `rows · cols`
    /// elements for an element-wise kernel, the matrix itself for a row-wise one).
    pub size: fn(usize, usize) -> Vec<i64>,
    /// Bytes one launch reads and writes at a size of the kernel.
    pub traffic: fn(&Size) -> Result<u128>,
    /// The autotuned kernel.
    pub tuned: TunedKernelFn,
}

/// A kernel the command line knows.
pub struct Entry {
    /// Its name on the command line (`hopper_matmul_v0`).
    pub name: &'static str,
    /// One line about it.
    pub about: &'static str,
    /// What it computes: the dimensions of a size, inputs, reference.
    pub workload: &'static dyn Workload,
    /// The default configuration with some hyperparameters replaced.
    pub configure: ConfigureFn,
    /// The autotuning search space.
    pub space: fn() -> Vec<Box<dyn DynScript>>,
    /// The compile-time constant values for a problem size.
    pub consts: fn(&Size) -> Vec<i64>,
    /// The size `emit`, `ir` and `check` use when none is given.
    pub compile_size: &'static [i64],
    /// The size `run` uses when none is given: small enough for the interpreter.
    pub run_size: &'static [i64],
    /// Its part in `bench matmul` and `soak`, if any.
    pub matmul: Option<MatmulVersion>,
    /// Its part in `bench memory`, if any.
    pub memory: Option<MemoryBound>,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("dims", &self.workload.dims())
            .field("matmul", &self.matmul.as_ref().map(|m| m.version))
            .finish_non_exhaustive()
    }
}

impl Entry {
    /// The size given on the command line, or `default` (one of the entry's sizes), parsed by
    /// the one rule for the dimensions of the entry's workload.
    pub fn size(&self, given: Option<&str>, default: &[i64]) -> Result<Size> {
        let dims = self.workload.dims();
        match given {
            Some(text) => Size::parse(dims, text),
            None => Size::new(dims, default),
        }
    }

    /// How this entry's sizes are written (`MxNxK`).
    pub fn size_form(&self) -> String {
        Size::form(self.workload.dims())
    }
}

impl Entry {
    /// A kernel `S` with a workload: what `list`, `emit`, `ir`, `check` and `run` need. Its
    /// configurations come from `S`'s default and search space; `consts` gives its
    /// compile-time constants for a size; `compile_size` is the size `emit`, `ir` and
    /// `check` use when none is given, `run_size` the one `run` uses (small enough for the
    /// interpreter).
    pub fn kernel<S: Tunable + Default>(
        name: &'static str,
        about: &'static str,
        workload: &'static dyn Workload,
        consts: fn(&Size) -> Vec<i64>,
        compile_size: &'static [i64],
        run_size: &'static [i64],
    ) -> Entry {
        Entry {
            name,
            about,
            workload,
            configure: configure::<S>,
            space: space::<S>,
            consts,
            compile_size,
            run_size,
            matmul: None,
            memory: None,
        }
    }

    /// A row-wise kernel `S` over a `[rows, cols]` f16 matrix (`cols` its compile-time
    /// constant), as the built-in norms are: compiled at 16384x8192, run at 37x1000, and
    /// timed by `tilus bench memory` beside a copy of the `traffic` bytes it moves.
    pub fn rows<S: Tunable + Default>(
        name: &'static str,
        about: &'static str,
        workload: &'static dyn Workload,
        traffic: fn(&Size) -> Result<u128>,
    ) -> Entry {
        memory_entry::<S>(name, about, workload, Shape::Rows, traffic)
    }
}

/// The default configuration of `S` with `settings` applied.
fn configured<S>(settings: &Settings) -> Result<S>
where
    S: Tunable + Default,
{
    tilus::tune::with_settings(&S::default(), settings).map_err(Error::Usage)
}

/// A matmul script of the series, as the registry builds its entry.
pub trait SeriesMatmul: Tunable<Args = MatmulArgs> + Default {
    /// Its name in tables and in `--versions` (`v0`).
    const VERSION: &'static str;
    /// Whether `bench matmul` autotunes it (without `--set` and `--fixed`).
    const TUNED_IN_BENCH: bool;
    /// The version on bf16 operands, when it has one.
    const BF16: Option<Bf16Version> = None;
}

impl SeriesMatmul for hopper_matmul::v0::MatmulTma {
    const VERSION: &'static str = "v0";
    // v0's default is the configuration the seed's autotuner settles on
    const TUNED_IN_BENCH: bool = false;
}

impl SeriesMatmul for hopper_matmul::v1::MatmulWgmma {
    const VERSION: &'static str = "v1";
    const TUNED_IN_BENCH: bool = true;
}

impl SeriesMatmul for hopper_matmul::v2::MatmulStaged {
    const VERSION: &'static str = "v2";
    const TUNED_IN_BENCH: bool = true;
}

impl SeriesMatmul for hopper_matmul::v3::MatmulSpecialized {
    const VERSION: &'static str = "v3";
    const TUNED_IN_BENCH: bool = true;
}

impl SeriesMatmul for hopper_matmul::v4::MatmulPipelined {
    const VERSION: &'static str = "v4";
    const TUNED_IN_BENCH: bool = true;
}

impl SeriesMatmul for hopper_matmul::v5::MatmulCooperative {
    const VERSION: &'static str = "v5";
    const TUNED_IN_BENCH: bool = true;
}

impl SeriesMatmul for tilus_kernels::gemm::persistent::MatmulPersistent {
    const VERSION: &'static str = "v6";
    const TUNED_IN_BENCH: bool = true;
    const BF16: Option<Bf16Version> = Some(Bf16Version {
        configure: configure::<Bf16<tilus_kernels::gemm::persistent::MatmulPersistent>>,
        fixed: |settings, device| {
            let config = configured::<tilus_kernels::gemm::persistent::MatmulPersistent>(settings)?;
            let shown = tilus::lang::config_string(&format!("{config:?}"));
            Ok((Box::new(Matmul::fixed("v6", Bf16(config), device)), shown))
        },
        tuned: |device| {
            Ok(Box::new(Matmul::<
                Bf16<tilus_kernels::gemm::persistent::MatmulPersistent>,
            >::tuned("v6", device)?))
        },
    });
}

fn fixed_version<S: SeriesMatmul>(
    settings: &Settings,
    device: &Device,
) -> Result<(Box<dyn Version>, String)> {
    let config = configured::<S>(settings)?;
    let shown = tilus::lang::config_string(&format!("{config:?}"));
    Ok((Box::new(Matmul::fixed(S::VERSION, config, device)), shown))
}

fn tuned_version<S: SeriesMatmul>(device: &Device) -> Result<Box<dyn Version>> {
    Ok(Box::new(Matmul::<S>::tuned(S::VERSION, device)?))
}

fn configure<S: Tunable + Default>(settings: &Settings) -> Result<Box<dyn DynScript>> {
    Ok(Box::new(configured::<S>(settings)?))
}

fn space<S: Tunable>() -> Vec<Box<dyn DynScript>> {
    <S as Tunable>::space()
        .bindings()
        .iter()
        .filter_map(|b| S::from_binding(b).ok())
        .map(|c| Box::new(c) as Box<dyn DynScript>)
        .collect()
}

fn split_k_fixed(settings: &Settings, device: &Device) -> Result<(Box<dyn Version>, String)> {
    use tilus_kernels::gemm::split_k::{MatmulSplitK, SplitK};
    let config = configured::<MatmulSplitK>(settings)?;
    let shown = tilus::lang::config_string(&format!("{config:?}"));
    Ok((Box::new(SplitK::fixed(config, device)), shown))
}

fn split_k_tuned(device: &Device) -> Result<Box<dyn Version>> {
    Ok(Box::new(tilus_kernels::gemm::split_k::SplitK::tuned(
        device,
    )?))
}

/// v6 on bf16 operands: its own entry (`tilus run`, `check`, `emit`), checked against cuBLAS
/// in bf16; `tilus bench matmul --dtype bf16 --versions v6` benchmarks it.
fn v6_bf16_entry() -> Entry {
    type S = Bf16<tilus_kernels::gemm::persistent::MatmulPersistent>;
    Entry {
        name: "hopper_matmul_v6_bf16",
        about: "v6 on bf16 operands: the same configurations, bf16 in and out",
        workload: &crate::workloads::matmul::MATMUL_BF16,
        configure: configure::<S>,
        space: space::<S>,
        consts: crate::workloads::matmul::consts,
        compile_size: &[4096, 4096, 4096],
        run_size: &[256, 256, 256],
        matmul: None,
        memory: None,
    }
}

/// Split-K for small M: the partials' kernel as the entry (its workload checks the summed
/// partials), the pair as the matmul version `split_k`.
fn split_k_entry() -> Entry {
    use tilus_kernels::gemm::split_k::{MatmulSplitK, SplitK};
    Entry {
        name: "hopper_matmul_split_k",
        about: "split-K for small M: K in ranges, f32 partials, then their sum",
        workload: &crate::workloads::split_k::SPLIT_K_PARTIALS,
        configure: configure::<MatmulSplitK>,
        space: space::<MatmulSplitK>,
        consts: crate::workloads::matmul::consts,
        compile_size: &[64, 8192, 8192],
        run_size: &[16, 256, 512],
        matmul: Some(MatmulVersion {
            version: "split_k",
            fixed: split_k_fixed,
            tuned: split_k_tuned,
            tuned_in_bench: true,
            soak: true,
            bf16: Some(Bf16Version {
                configure: configure::<Bf16<MatmulSplitK>>,
                fixed: |settings, device| {
                    let config = configured::<MatmulSplitK>(settings)?;
                    let shown = tilus::lang::config_string(&format!("{config:?}"));
                    Ok((Box::new(SplitK::<bf16>::fixed(config, device)), shown))
                },
                tuned: |device| Ok(Box::new(SplitK::<bf16>::tuned(device)?)),
            }),
        }),
        memory: None,
    }
}

/// Stream-K on v6's last rounds: its own entry (its workload passes the workspace and the
/// flags), and the matmul version `stream_k`.
fn stream_k_entry() -> Entry {
    use tilus_kernels::gemm::stream_k::{MatmulStreamK, StreamK};
    Entry {
        name: "hopper_matmul_stream_k",
        about: "v6 with stream-K: the last two rounds' tiles shared out by K steps",
        workload: &crate::workloads::stream_k::STREAM_K_MATMUL,
        configure: configure::<MatmulStreamK>,
        space: space::<MatmulStreamK>,
        consts: crate::workloads::matmul::consts,
        compile_size: &[4096, 4096, 4096],
        run_size: &[520, 700, 328],
        matmul: Some(MatmulVersion {
            version: "stream_k",
            fixed: |settings, device| {
                let config = configured::<MatmulStreamK>(settings)?;
                let shown = tilus::lang::config_string(&format!("{config:?}"));
                Ok((Box::new(StreamK::<half::f16>::fixed(config, device)), shown))
            },
            tuned: |device| Ok(Box::new(StreamK::<half::f16>::tuned(device)?)),
            // its space spills a few words (the autotuner skips spilling kernels): the default
            tuned_in_bench: false,
            soak: true,
            bf16: Some(Bf16Version {
                configure: configure::<Bf16<MatmulStreamK>>,
                fixed: |settings, device| {
                    let config = configured::<MatmulStreamK>(settings)?;
                    let shown = tilus::lang::config_string(&format!("{config:?}"));
                    Ok((Box::new(StreamK::<bf16>::fixed(config, device)), shown))
                },
                tuned: |device| Ok(Box::new(StreamK::<bf16>::tuned(device)?)),
            }),
        }),
        memory: None,
    }
}

/// A version of the matmul series as an entry.
fn matmul_entry<S: SeriesMatmul>(name: &'static str, about: &'static str) -> Entry {
    Entry {
        name,
        about,
        workload: &crate::workloads::matmul::MATMUL,
        configure: configure::<S>,
        space: space::<S>,
        consts: crate::workloads::matmul::consts,
        compile_size: &[4096, 4096, 4096],
        run_size: &[256, 256, 256],
        matmul: Some(MatmulVersion {
            version: S::VERSION,
            fixed: fixed_version::<S>,
            tuned: tuned_version::<S>,
            tuned_in_bench: S::TUNED_IN_BENCH,
            soak: true,
            bf16: S::BF16,
        }),
        memory: None,
    }
}

/// The sizes of a memory-bound kernel.
#[derive(Clone, Copy)]
enum Shape {
    /// A vector of `n` elements (`vector_add`).
    Vector,
    /// A `[rows, cols]` matrix of independent rows, `cols` a compile-time constant.
    Rows,
}

impl Shape {
    fn consts(self) -> fn(&Size) -> Vec<i64> {
        match self {
            Shape::Vector => crate::workloads::add::consts,
            Shape::Rows => crate::rows::consts,
        }
    }

    fn bench_size(self) -> fn(usize, usize) -> Vec<i64> {
        match self {
            Shape::Vector => |rows, cols| vec![(rows * cols) as i64],
            Shape::Rows => |rows, cols| vec![rows as i64, cols as i64],
        }
    }
}

/// The autotuned kernel of `S` for these launch arguments (see [`TunedKernelFn`]).
fn tuned_kernel<S: Tunable>(
    device: &Device,
    stream: &Arc<CudaStream>,
    values: &[HostValue],
) -> Result<(Arc<LoadedKernel>, String)> {
    let chosen = S::autotuned(device)?.choose(stream, values)?;
    let shown = tilus::lang::config_string(&format!("{:?}", chosen.config));
    Ok((chosen.kernel.clone(), shown))
}

/// A memory-bound kernel as an entry: compiled at the benchmark's size, run at a small one.
fn memory_entry<S: Tunable + Default>(
    name: &'static str,
    about: &'static str,
    workload: &'static dyn Workload,
    shape: Shape,
    traffic: fn(&Size) -> Result<u128>,
) -> Entry {
    let (compile_size, run_size): (&'static [i64], &'static [i64]) = match shape {
        Shape::Vector => (&[16384 * 8192], &[10000]),
        Shape::Rows => (&[16384, 8192], &[37, 1000]),
    };
    Entry {
        name,
        about,
        workload,
        configure: configure::<S>,
        space: space::<S>,
        consts: shape.consts(),
        compile_size,
        run_size,
        matmul: None,
        memory: Some(MemoryBound {
            size: shape.bench_size(),
            traffic,
            tuned: tuned_kernel::<S>,
        }),
    }
}

static EPILOGUE_IDENTITY: EpilogueWorkload<Identity> = EpilogueWorkload::new();
static EPILOGUE_RELU: EpilogueWorkload<Relu> = EpilogueWorkload::new();
static EPILOGUE_GELU: EpilogueWorkload<GeluTanh> = EpilogueWorkload::new();

/// The matmul with a fused epilogue and activation `A` as an entry.
fn epilogue_entry<A: Activation>(
    name: &'static str,
    about: &'static str,
    workload: &'static EpilogueWorkload<A>,
) -> Entry {
    Entry {
        name,
        about,
        workload,
        configure: configure::<MatmulEpilogue<A>>,
        space: space::<MatmulEpilogue<A>>,
        consts: crate::workloads::matmul::consts,
        compile_size: &[4096, 4096, 4096],
        run_size: &[192, 320, 128],
        matmul: None,
        memory: None,
    }
}

/// Every built-in kernel, owned: the series' steps and the library's kernels (what
/// [`Registry::builtin`] holds).
pub fn entries() -> Vec<Entry> {
    use hopper_matmul::v0::MatmulTma;
    use hopper_matmul::v1::MatmulWgmma;
    vec![
        matmul_entry::<MatmulTma>("hopper_matmul_v0", "v0: TMA + mbarrier + mma.sync"),
        matmul_entry::<MatmulWgmma>(
            "hopper_matmul_v1",
            "v1: TMA + mbarrier + WGMMA from shared memory",
        ),
        matmul_entry::<hopper_matmul::v2::MatmulStaged>(
            "hopper_matmul_v2",
            "v2: a ring of TMA stages ahead of the WGMMA",
        ),
        matmul_entry::<hopper_matmul::v3::MatmulSpecialized>(
            "hopper_matmul_v3",
            "v3: a producer warp fills the ring, a consumer warp group multiplies",
        ),
        matmul_entry::<hopper_matmul::v4::MatmulPipelined>(
            "hopper_matmul_v4",
            "v4: v3 on the library's Pipeline, one WGMMA in flight, tiles in grouped order",
        ),
        matmul_entry::<hopper_matmul::v5::MatmulCooperative>(
            "hopper_matmul_v5",
            "v5: two consumer warp groups share each stage's B tile, registers moved to them",
        ),
        matmul_entry::<tilus_kernels::gemm::persistent::MatmulPersistent>(
            "hopper_matmul_v6",
            "v6: v5 on a persistent grid, the ring running on from tile to tile",
        ),
        v6_bf16_entry(),
        split_k_entry(),
        stream_k_entry(),
        epilogue_entry::<Identity>(
            "matmul_epilogue_identity",
            "v6 + fused epilogue: C = alpha·A·Bᵀ + beta·D + bias",
            &EPILOGUE_IDENTITY,
        ),
        epilogue_entry::<Relu>(
            "matmul_epilogue_relu",
            "v6 + fused epilogue: C = relu(alpha·A·Bᵀ + beta·D + bias)",
            &EPILOGUE_RELU,
        ),
        epilogue_entry::<GeluTanh>(
            "matmul_epilogue_gelu",
            "v6 + fused epilogue: C = gelu_tanh(alpha·A·Bᵀ + beta·D + bias)",
            &EPILOGUE_GELU,
        ),
        quant_entry::<tilus_kernels::quant::QuantMatmul<I4>>(
            "quant_matmul_i4",
            "C = A·dequant(W)ᵀ, int4 weights in groups of 128: few rows of A, the weights' bytes",
            &crate::workloads::quant::QUANT_PACKED,
            &[3, 136, 256],
        ),
        quant_entry::<tilus_kernels::quant::QuantMatmulFragments<I4>>(
            "quant_matmul_fragments_i4",
            "the same on prepacked weights: each thread's codes one load from its WGMMA fragment",
            &crate::workloads::quant::QUANT_PREPACKED,
            &[5, 130, 256],
        ),
        quant_entry::<tilus_kernels::quant::QuantMatmulRing<I4>>(
            "quant_matmul_ring_i4",
            "the same for many rows of A: v6's ring, its producer dequantizing W into the stages",
            &crate::workloads::quant::QUANT_PACKED,
            &[300, 136, 256],
        ),
        Entry {
            name: "matmul_fp8_e4m3",
            about: "C = (s_a·s_b)·A·Bᵀ on e4m3 codes into bf16: v6's main loop, K steps of 128 codes promoted into f32",
            workload: &crate::workloads::fp8::FP8,
            configure: configure::<tilus_kernels::gemm::fp8::MatmulFp8<tilus::lowp::F8E4M3, half::bf16>>,
            space: space::<tilus_kernels::gemm::fp8::MatmulFp8<tilus::lowp::F8E4M3, half::bf16>>,
            consts: crate::workloads::fp8::consts,
            compile_size: &[4096, 4096, 4096],
            run_size: &[200, 136, 400],
            matmul: None,
            memory: None,
        },
        Entry {
            name: "decode_attention",
            about: "a decode step over a key-value cache: one warp group per key-value head's group of query heads, a TMA ring of the cache (one split here)",
            workload: &crate::workloads::decode::DECODE,
            configure: configure::<tilus_kernels::attention::decode::DecodeAttention<half::f16>>,
            space: space::<tilus_kernels::attention::decode::DecodeAttention<half::f16>>,
            consts: crate::workloads::decode::consts,
            compile_size: &[64, 4096],
            run_size: &[3, 200],
            matmul: None,
            memory: None,
        },
        Entry {
            name: "decode_attention_e4m3",
            about: "the same over a cache of e4m3 codes with a scale per key-value head, converted to f16 a step under the products",
            workload: &crate::workloads::decode::DECODE_E4M3,
            configure: configure::<
                tilus_kernels::attention::decode::DecodeAttention<half::f16, tilus::lowp::F8E4M3>,
            >,
            space: space::<
                tilus_kernels::attention::decode::DecodeAttention<half::f16, tilus::lowp::F8E4M3>,
            >,
            consts: crate::workloads::decode::consts,
            compile_size: &[64, 4096],
            run_size: &[3, 200],
            matmul: None,
            memory: None,
        },
        Entry {
            name: "tile_copy",
            about: "TMA load -> shared -> TMA store (the epilogue's building block)",
            workload: &crate::workloads::tile_copy::COPY,
            configure: configure::<tilus_kernels::copy::TileCopy>,
            space: space::<tilus_kernels::copy::TileCopy>,
            consts: crate::workloads::tile_copy::consts,
            compile_size: &[4096, 4096],
            run_size: &[200, 136],
            matmul: None,
            memory: None,
        },
        memory_entry::<tilus_kernels::elementwise::VectorAdd>(
            "vector_add",
            "c = a + b over f16 vectors (f32 sums, 16-byte accesses)",
            &crate::workloads::add::ADD_F16,
            Shape::Vector,
            crate::workloads::add::traffic_of::<half::f16>,
        ),
        memory_entry::<tilus_kernels::elementwise::VectorAddF32>(
            "vector_add_f32",
            "c = a + b over f32 vectors",
            &crate::workloads::add::ADD_F32,
            Shape::Vector,
            crate::workloads::add::traffic_of::<f32>,
        ),
        memory_entry::<tilus_kernels::norm::Softmax>(
            "softmax",
            "the softmax of each f16 row (max subtracted, f32 inside), one pass over memory",
            &crate::workloads::softmax::SOFTMAX,
            Shape::Rows,
            crate::rows::traffic_of,
        ),
        memory_entry::<tilus_kernels::norm::LayerNorm>(
            "layer_norm",
            "the layer norm of each f16 row (weight, bias, eps), one pass over memory",
            &crate::workloads::layer_norm::LAYER_NORM,
            Shape::Rows,
            crate::workloads::layer_norm::traffic_of,
        ),
        memory_entry::<tilus_kernels::norm::RmsNorm>(
            "rms_norm",
            "the RMSNorm of each f16 row (weight, eps), one pass over memory",
            &crate::workloads::rms_norm::RMS_NORM,
            Shape::Rows,
            crate::workloads::rms_norm::traffic_of,
        ),
    ]
}

/// The entry of a quantized matmul on int4 weights (`(m, n, k, a, w, scales, zeros, c)`,
/// `k` a compile-time constant), run at `run_size` when no size is given.
fn quant_entry<S: Tunable + Default + 'static>(
    name: &'static str,
    about: &'static str,
    workload: &'static crate::workloads::quant::QuantWorkload,
    run_size: &'static [i64],
) -> Entry {
    Entry {
        name,
        about,
        workload,
        configure: configure::<S>,
        space: space::<S>,
        consts: crate::workloads::quant::consts,
        compile_size: &[16, 28672, 8192],
        run_size,
        matmul: None,
        memory: None,
    }
}

/// The kernels a command line knows: the built-in ones ([`Registry::builtin`]: the tutorial
/// series and the kernel library) or a crate's own ([`Registry::new`], given to
/// `tilus_cli::main` from the crate's `src/bin/`).
pub struct Registry {
    entries: Vec<Entry>,
}

impl Registry {
    /// A registry of these entries; two entries with one name are an error.
    pub fn new(entries: Vec<Entry>) -> Result<Registry> {
        let mut seen = std::collections::HashSet::new();
        for e in &entries {
            if !seen.insert(e.name) {
                return Err(Error::Usage(format!(
                    "two kernels are named {}; each name once",
                    quote(e.name)
                )));
            }
        }
        Ok(Registry { entries })
    }

    /// The built-in kernels: every step of the series and the library's kernels.
    pub fn builtin() -> Registry {
        Registry { entries: entries() }
    }

    /// These entries and `more` after them (a crate's kernels beside the built-in ones).
    pub fn with(self, more: Vec<Entry>) -> Result<Registry> {
        let mut entries = self.entries;
        entries.extend(more);
        Registry::new(entries)
    }

    /// Every entry, in order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry with this name.
    pub fn find(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// The entry with this name, or an error that lists the known names.
    pub fn lookup(&self, name: &str) -> Result<&Entry> {
        let known: Vec<&str> = self.entries.iter().map(|e| e.name).collect();
        if name.trim().is_empty() {
            return Err(Error::Usage(format!(
                "the kernel name is empty; known: {}",
                known.join(", ")
            )));
        }
        self.find(name).ok_or_else(|| {
            Error::Usage(format!(
                "unknown kernel {}; known: {}",
                quote(name),
                known.join(", ")
            ))
        })
    }

    /// The names of the matmul versions (`v0`, ...), in the registry's order.
    pub fn matmul_versions(&self) -> Vec<&'static str> {
        self.entries
            .iter()
            .filter_map(|e| e.matmul.as_ref().map(|m| m.version))
            .collect()
    }

    /// The entry of the matmul version with this name (`v2`), or an error that lists the
    /// versions.
    pub fn matmul_version(&self, name: &str) -> Result<&Entry> {
        self.entries
            .iter()
            .find(|e| e.matmul.as_ref().is_some_and(|m| m.version == name))
            .ok_or_else(|| {
                Error::Usage(format!(
                    "unknown version {} (available: {})",
                    quote(name),
                    self.matmul_versions().join(", ")
                ))
            })
    }
}

/// Parses `--set NAME=VALUE` arguments. A name given twice, an empty name and a value that is
/// not an integer are errors; whether the name exists is the kernel's to say
/// ([`Entry::configure`]).
pub fn parse_settings(sets: &[String]) -> Result<Vec<(String, i64)>> {
    let mut out: Vec<(String, i64)> = Vec::with_capacity(sets.len());
    let mut seen: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    for s in sets {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| Error::Usage(format!("`--set {}`: expected NAME=VALUE", short(s))))?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() {
            return Err(Error::Usage(format!(
                "`--set {}`: the name is empty; expected NAME=VALUE",
                short(s)
            )));
        }
        let value = v.parse::<i64>().map_err(|_| {
            Error::Usage(format!(
                "`--set {}`: {} is not an integer that fits in 64 bits",
                short(s),
                quote(v)
            ))
        })?;
        if let Some(first) = seen.insert(k.to_string(), value) {
            return Err(Error::Usage(format!(
                "`--set {}` is given twice ({first} and {value}); give each hyperparameter once",
                short(k)
            )));
        }
        out.push((k.to_string(), value));
    }
    Ok(out)
}

/// A user's text, shortened for a message (without quotes).
fn short(s: &str) -> String {
    let q = quote(s);
    q[1..q.len() - 1].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn settings_are_checked() {
        assert_eq!(
            parse_settings(&sets(&["block_m=64", " block_k = 32"])).unwrap(),
            vec![("block_m".to_string(), 64), ("block_k".to_string(), 32)]
        );
        let e = parse_settings(&sets(&["block_m=64", "block_m=128"])).unwrap_err();
        assert!(e.to_string().contains("given twice (64 and 128)"), "{e}");
        for bad in [
            "block_m",
            "=4",
            "block_m=",
            "block_m=abc",
            "block_m=99999999999999999999",
        ] {
            assert!(parse_settings(&sets(&[bad])).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_registry_refuses_two_kernels_of_one_name_and_extends_the_builtin_one() {
        let builtin = Registry::builtin();
        let n = builtin.entries().len();
        let again = entries().into_iter().take(1).collect();
        let e = builtin.with(again).err().unwrap().to_string();
        assert!(
            e.contains("two kernels are named `hopper_matmul_v0`"),
            "{e}"
        );
        let own = Entry::rows::<tilus_kernels::norm::RmsNorm>(
            "my_rms_norm",
            "a crate's own row-wise kernel",
            &crate::workloads::rms_norm::RMS_NORM,
            crate::workloads::rms_norm::traffic_of,
        );
        let r = Registry::builtin().with(vec![own]).unwrap();
        assert_eq!(r.entries().len(), n + 1);
        assert!(r.find("my_rms_norm").is_some_and(|e| e.memory.is_some()));
        assert!(Registry::builtin().find("my_rms_norm").is_none());
    }

    #[test]
    fn matmul_versions_are_found_by_their_short_names() {
        let r = Registry::builtin();
        assert_eq!(
            r.matmul_versions(),
            vec!["v0", "v1", "v2", "v3", "v4", "v5", "v6", "split_k", "stream_k"]
        );
        for v in r.matmul_versions() {
            let e = r.matmul_version(v).unwrap();
            assert_eq!(e.name, format!("hopper_matmul_{v}"));
        }
        for bad in ["v9", "", "hopper_matmul_v0"] {
            let e = r.matmul_version(bad).err().unwrap();
            assert!(matches!(e, Error::Usage(_)), "{e}");
            assert!(
                e.to_string()
                    .contains("(available: v0, v1, v2, v3, v4, v5, v6, split_k, stream_k)"),
                "{e}"
            );
        }
    }

    #[test]
    fn every_entry_configures_and_names_bad_hyperparameters() {
        let r = Registry::builtin();
        for e in r.entries() {
            let s = (e.configure)(&[]).unwrap();
            assert!(!s.config().is_empty());
            assert!(!(e.space)().is_empty());
            let bad = (e.configure)(&[("block_q".into(), 1)]).err().unwrap();
            assert!(
                bad.to_string().contains("no hyperparameter `block_q`"),
                "{bad}"
            );
            let run = e.size(None, e.run_size).unwrap();
            let compile = e.size(None, e.compile_size).unwrap();
            // a tile far too large is the verifier's to reject, with a diagnostic
            let first = s.config().split('=').next().unwrap_or_default().to_string();
            let huge = (e.configure)(&[(first, i32::MAX as i64)]).unwrap();
            let traced = huge.trace(&(e.consts)(&compile));
            let checked = traced.and_then(tilus::passes::compile_program);
            assert!(
                matches!(checked, Err(tilus::Error::Script(_))),
                "{:?}",
                checked.map(|_| ())
            );
            assert_eq!((e.consts)(&compile).len(), s.const_names().len());
            assert_eq!(run.names(), e.workload.dims());
        }
        assert!(r.lookup("").unwrap_err().to_string().contains("empty"));
        assert!(r
            .lookup("nope")
            .unwrap_err()
            .to_string()
            .contains("known: hopper_matmul_v0"));
    }
}
