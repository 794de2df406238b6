//! The host API of decode attention: the call checked, the split chosen, the two kernels
//! launched (or interpreted) over a workspace of partial results kept between calls.

use super::append::DecodeAppend;
use super::element::CacheElement;
use super::merge::DecodeMerge;
use super::problem::{Checked, Decode, KvLayout, MAX_SPLITS, NAME};
use super::{AttentionElement, DecodeAttention};
use crate::host::length;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::lowp::F8E4M3;
use tilus::runtime::Device;

/// Kernels by their configuration.
type Kept<S> = Mutex<HashMap<S, Arc<tilus::Jit<S>>>>;

/// Choices [`DecodeOp::run_with`] takes instead of making them: `None` leaves each to the
/// host API.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tiling {
    /// Stages of the kernel's ring.
    pub stages: Option<i32>,
    /// Splits of the contexts (1 to [`MAX_SPLITS`]).
    pub splits: Option<usize>,
    /// `Some(true)`: a split launch merges in the kernel ([`DecodeAttention::merge`]) instead
    /// of by [`DecodeMerge`] (head dimensions up to 128).
    pub merge: Option<bool>,
    /// `Some(true)`: the kernel's steps overlapped ([`DecodeAttention::overlap`]).
    pub overlap: Option<bool>,
    /// Q in registers or not ([`DecodeAttention::q_in_registers`]; `None`: the kernel's
    /// default, registers over a cache of codes up to head dimension 128).
    pub q_in_registers: Option<bool>,
    /// A warp group of converters beside the products over a cache of codes or not
    /// ([`DecodeAttention::converters`]; `None`: the kernel's default, converters where Q
    /// comes from global memory and the steps are not merged in the kernel).
    pub converters: Option<bool>,
}

/// The cache's buffers: `k` and `v` (the layout [`Decode::layout`] says), the block table
/// (`None` for a contiguous cache), each sequence's context length, and the scales of a cache
/// of scaled codes.
pub struct Cache<'a, K: ?Sized, I: ?Sized, F: ?Sized = [f32]> {
    /// Keys.
    pub k: &'a K,
    /// Values.
    pub v: &'a K,
    /// The block table, `[batch, pages_per_seq]` page numbers (paged caches only).
    pub table: Option<&'a I>,
    /// Context lengths `[batch]`, the new tokens included.
    pub lens: &'a I,
    /// A cache of scaled codes ([`CacheElement::SCALED`], e4m3): `[2, kv_heads]`, the keys'
    /// scale of each key-value head, then the values' (a code stands for `code · scale`);
    /// `None` for a cache of the attention's own type.
    pub scales: Option<&'a F>,
}

/// The kernels a [`DecodeOp<T>`] keeps for a cache of `C`, by configuration.
#[doc(hidden)]
pub struct Kernels<T: AttentionElement, C: CacheElement> {
    decode: Kept<DecodeAttention<T, C>>,
    append: Kept<DecodeAppend<T, C>>,
}

impl<T: AttentionElement, C: CacheElement> Default for Kernels<T, C> {
    fn default() -> Self {
        Kernels {
            decode: Mutex::new(HashMap::new()),
            append: Mutex::new(HashMap::new()),
        }
    }
}

/// The cache types a [`DecodeOp<T>`] reads: `T` itself, or e4m3 codes with a scale per
/// key-value head (half the bytes a step reads).
///
/// ```
/// use half::f16;
/// use tilus::lowp::F8E4M3;
/// use tilus_kernels::attention::{decode::{head_scales, Cache, Decode, DecodeOp, KvLayout}, Heads};
/// // one sequence of 100 positions, contiguous; 4 query heads over 2 key-value heads of 64
/// let call = Decode {
///     batch: 1, queries: 1, heads: Heads::new(4, 2, 64),
///     layout: KvLayout::Contiguous { capacity: 100 }, max_context: 100,
/// };
/// let values: Vec<f64> = (0..100 * 2 * 64).map(|i| ((i * 37 % 101) as f64 - 50.0) / 25.0).collect();
/// // quantized with a scale per head: the keys' scales, then the values'
/// let scales = [head_scales::<F8E4M3>(&values, 2, 64), head_scales::<F8E4M3>(&values, 2, 64)].concat();
/// let codes: Vec<F8E4M3> = values.iter().enumerate()
///     .map(|(i, x)| F8E4M3::from_f64(x / scales[i / 64 % 2] as f64)).collect();
/// let q = vec![f16::from_f32(0.25); 4 * 64];
/// let (mut o, mut lse) = (vec![f16::NAN; 4 * 64], vec![f32::NAN; 4]);
/// let cache = Cache { k: &codes[..], v: &codes[..], table: None, lens: &[100][..], scales: Some(&scales[..]) };
/// DecodeOp::interpret(&call, 0.125, &q, cache, (&mut o, &mut lse))?;
/// // the exact step over the codes' values (each code times its head's scale)
/// let cache = Cache { k: &codes[..], v: &codes[..], table: None, lens: &[100][..], scales: Some(&scales[..]) };
/// let (want, _) = tilus_kernels::attention::decode::reference::decode(&call, 0.125, &q, &cache);
/// assert!(o.iter().zip(&want).all(|(x, w)| (x.to_f64() - w).abs() <= 2e-3 * (1.0 + w.abs())));
/// // without its scales, a cache of codes is refused before anything runs
/// let cache = Cache { k: &codes[..], v: &codes[..], table: None, lens: &[100][..], scales: None };
/// assert!(DecodeOp::interpret(&call, 0.125, &q, cache, (&mut o, &mut lse)).is_err());
/// # Ok::<(), tilus_kernels::Error>(())
/// ```
pub trait CacheOf<T: AttentionElement>: CacheElement {
    /// The op's kernels for this cache type.
    #[doc(hidden)]
    fn kernels(op: &DecodeOp<T>) -> &Kernels<T, Self>;
}

impl<T: AttentionElement> CacheOf<T> for T {
    fn kernels(op: &DecodeOp<T>) -> &Kernels<T, T> {
        &op.same
    }
}

impl<T: AttentionElement> CacheOf<T> for F8E4M3 {
    fn kernels(op: &DecodeOp<T>) -> &Kernels<T, F8E4M3> {
        &op.e4m3
    }
}

/// The partial slots and the ticket counters.
struct Workspace {
    part: CudaSlice<f32>,
    counts: CudaSlice<i32>,
}

/// Decode attention over a key-value cache, on device buffers of `T` (f16 or bf16): for each
/// sequence's new tokens, `o = softmax(scale · q·kᵀ) · v` over its context, and `lse`, each
/// row's natural log-sum-exp. Layouts: `q` and `o` `[batch, queries, q_heads, head_dim]`,
/// `lse` `[batch, queries, q_heads]`, the cache as [`KvLayout`] says.
///
/// The contexts are split among blocks where the batch alone would leave multiprocessors
/// idle ([`Decode::split`]); each split's partial output goes to a workspace, and a second
/// kernel merges them.
///
/// ```
/// use half::f16;
/// use tilus_kernels::attention::{decode::{Cache, Decode, DecodeOp, KvLayout}, Heads};
/// // one sequence of 40 positions in pages of 16 (pages 2, 0, 1), one new token, 4 query
/// // heads over 1 key-value head of 64
/// let call = Decode {
///     batch: 1, queries: 1, heads: Heads::new(4, 1, 64),
///     layout: KvLayout::Paged { page_size: 16, pages: 3, pages_per_seq: 3 },
///     max_context: 40,
/// };
/// let (kv, table, lens) = (vec![f16::ONE; 3 * 16 * 64], [2, 0, 1], [40]);
/// let q = vec![f16::from_f32(0.5); 4 * 64];
/// let (mut o, mut lse) = (vec![f16::NAN; 4 * 64], vec![f32::NAN; 4]);
/// let cache = Cache { k: &kv[..], v: &kv[..], table: Some(&table[..]), lens: &lens[..], scales: None };
/// DecodeOp::interpret(&call, 0.125, &q, cache, (&mut o, &mut lse))?;
/// // equal scores: each head averages its 40 values (ones)
/// assert!(o.iter().all(|&x| x == f16::ONE));
/// assert!((lse[0] - (4.0 + 40f32.ln())).abs() < 1e-4);
/// # Ok::<(), tilus_kernels::Error>(())
/// ```
pub struct DecodeOp<T: AttentionElement> {
    same: Kernels<T, T>,
    e4m3: Kernels<T, F8E4M3>,
    merge: Kept<DecodeMerge<T>>,
    /// The partial slots and the ticket counters, grown as calls need.
    workspace: Mutex<Option<Workspace>>,
    /// One float the kernels take as the scales of a cache that has none (never read).
    no_scales: CudaSlice<f32>,
    multiprocessors: usize,
    device: Device,
}

impl<T: AttentionElement> DecodeOp<T> {
    /// The host API on `device` (kernels compiled on their first use).
    pub fn new(device: &Device) -> crate::Result<Self> {
        let multiprocessors = device
            .context()
            .attribute(
                tilus::cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(|e| tilus::Error::Driver {
                call: "cuDeviceGetAttribute",
                message: format!("{e:?}"),
            })?;
        Ok(DecodeOp {
            same: Kernels::default(),
            e4m3: Kernels::default(),
            merge: Mutex::new(HashMap::new()),
            workspace: Mutex::new(None),
            no_scales: device
                .stream()
                .alloc_zeros::<f32>(1)
                .map_err(|e| tilus::Error::Driver {
                    call: "cuMemAlloc",
                    message: format!("{NAME}: {e}"),
                })?,
            multiprocessors: multiprocessors.max(1) as usize,
            device: device.clone(),
        })
    }

    /// `o` and `lse` of `q` over `cache` for the step `call` (see the type's doc), on
    /// `stream`. The buffers' lengths are checked; the table's pages and the context lengths
    /// live on the device and are the caller's to keep in range.
    pub fn run<C: CacheOf<T>>(
        &self,
        stream: &Arc<CudaStream>,
        call: &Decode,
        scale: f32,
        q: &CudaSlice<T>,
        cache: Cache<'_, CudaSlice<C>, CudaSlice<i32>, CudaSlice<f32>>,
        outputs: (&mut CudaSlice<T>, &mut CudaSlice<f32>),
    ) -> crate::Result<()> {
        self.run_with(stream, (call, Tiling::default()), scale, q, cache, outputs)
    }

    /// [`DecodeOp::run`] with the stages of the ring and the split given instead of chosen
    /// (the benchmark's way to measure the choices).
    pub fn run_with<C: CacheOf<T>>(
        &self,
        stream: &Arc<CudaStream>,
        (call, tiling): (&Decode, Tiling),
        scale: f32,
        q: &CudaSlice<T>,
        cache: Cache<'_, CudaSlice<C>, CudaSlice<i32>, CudaSlice<f32>>,
        (o, lse): (&mut CudaSlice<T>, &mut CudaSlice<f32>),
    ) -> crate::Result<()> {
        let c = call.checked(scale)?;
        let lens = (cache.k.len(), cache.v.len(), cache.table.map(|t| t.len()));
        buffers(
            call,
            &c,
            (q.len(), lens, cache.lens.len()),
            (o.len(), lse.len()),
        )?;
        scales_of::<C>(&c, cache.scales.map(|s| s.len()))?;
        let (splits, split_keys) = split_of::<T, C>(call, tiling, self.multiprocessors)?;
        let (direct, merge) = Self::plan(c.d, splits, tiling.merge);
        let config = configured::<T, C>(call, tiling, (direct, merge), splits);
        let (parts, groups) = workspace(call, c.d, splits, direct);
        let mut ws = self.workspace.lock().unwrap_or_else(|e| e.into_inner());
        if ws
            .as_ref()
            .is_none_or(|w| w.part.len() < parts || w.counts.len() < groups)
        {
            let err = |e: tilus::cudarc::driver::DriverError| tilus::Error::Driver {
                call: "cuMemAlloc",
                message: format!("{NAME}'s workspace: {e}"),
            };
            // the ticket counters start at zero and every launch leaves them there
            let p = stream.alloc_zeros::<f32>(parts).map_err(err)?;
            let n = stream.alloc_zeros::<i32>(groups).map_err(err)?;
            *ws = Some(Workspace { part: p, counts: n });
        }
        let Workspace { part, counts } = ws.as_mut().expect("allocated above");
        let decode = kept(&C::kernels(self).decode, &config, &self.device);
        let table = cache.table.unwrap_or(cache.lens);
        decode.launch(
            stream,
            (
                call.batch as i32,
                c.hq,
                c.hkv,
                splits as i32,
                split_keys as i32,
                c.page_size,
                c.pages_per_seq,
                c.rows_cache,
                scale * std::f32::consts::LOG2_E,
                q,
                cache.k,
                cache.v,
                table,
                cache.lens,
                cache.scales.unwrap_or(&self.no_scales),
                &mut *part,
                &mut *counts,
                &mut *o,
                &mut *lse,
            ),
        )?;
        if direct || merge {
            return Ok(());
        }
        let merger = DecodeMerge::<T>::new(c.d, splits as i32);
        let merger = kept(&self.merge, &merger, &self.device);
        merger.launch(
            stream,
            (
                c.rows as i32,
                splits as i32,
                c.hq,
                c.hkv,
                call.queries as i32,
                config.slot,
                config.row_blocks(),
                &*part,
                &*part,
                o,
                lse,
            ),
        )?;
        Ok(())
    }

    /// How a launch of `splits` splits ends: `(direct, merge)`. One split: the kernel writes
    /// the output (no slots), up to head dimension 128 (at 256 the output in `T` beside the
    /// accumulator would spill). Several: the slots are merged by [`DecodeMerge`], a second
    /// launch that reads every split of a row at once, or (`merge`, [`Tiling::merge`]) by
    /// the kernel itself: the block that takes its group's last ticket, each warp a row with
    /// every split at once.
    fn plan(d: i32, splits: usize, merge: Option<bool>) -> (bool, bool) {
        let small = d <= 128;
        (
            splits == 1 && small,
            splits > 1 && small && merge == Some(true),
        )
    }

    /// [`DecodeOp::run`] on the CPU interpreter, on host slices, split as on a device of
    /// 132 multiprocessors. The table's pages and the context lengths are checked here.
    pub fn interpret<C: CacheOf<T>>(
        call: &Decode,
        scale: f32,
        q: &[T],
        cache: Cache<'_, [C], [i32]>,
        outputs: (&mut [T], &mut [f32]),
    ) -> crate::Result<()> {
        Self::interpret_with((call, Tiling::default()), scale, q, cache, outputs)
    }

    /// [`DecodeOp::interpret`] with the contexts in `splits` splits (at most
    /// [`MAX_SPLITS`]): the tests' way to every split.
    pub fn interpret_split<C: CacheOf<T>>(
        call: &Decode,
        scale: f32,
        splits: usize,
        q: &[T],
        cache: Cache<'_, [C], [i32]>,
        outputs: (&mut [T], &mut [f32]),
    ) -> crate::Result<()> {
        let tiling = Tiling {
            splits: Some(splits),
            ..Tiling::default()
        };
        Self::interpret_with((call, tiling), scale, q, cache, outputs)
    }

    /// [`DecodeOp::interpret`] with the choices of `tiling` (the stages, the split, the merge
    /// in the kernel), as [`DecodeOp::run_with`].
    pub fn interpret_with<C: CacheOf<T>>(
        (call, tiling): (&Decode, Tiling),
        scale: f32,
        q: &[T],
        cache: Cache<'_, [C], [i32]>,
        (o, lse): (&mut [T], &mut [f32]),
    ) -> crate::Result<()> {
        let c = call.checked(scale)?;
        let lens = (cache.k.len(), cache.v.len(), cache.table.map(|t| t.len()));
        buffers(
            call,
            &c,
            (q.len(), lens, cache.lens.len()),
            (o.len(), lse.len()),
        )?;
        scales_of::<C>(&c, cache.scales.map(|s| s.len()))?;
        contents(call, cache.table, cache.lens)?;
        let (splits, split_keys) = split_of::<T, C>(call, tiling, 132)?;
        let (direct, merge) = Self::plan(c.d, splits, tiling.merge);
        let config = configured::<T, C>(call, tiling, (direct, merge), splits);
        let (parts, groups) = workspace(call, c.d, splits, direct);
        let mut part = vec![f32::NAN; parts];
        let mut counts = vec![0i32; groups];
        let table = cache.table.unwrap_or(cache.lens);
        tilus::interpret(
            &config,
            (
                call.batch as i32,
                c.hq,
                c.hkv,
                splits as i32,
                split_keys as i32,
                c.page_size,
                c.pages_per_seq,
                c.rows_cache,
                scale * std::f32::consts::LOG2_E,
                q,
                cache.k,
                cache.v,
                table,
                cache.lens,
                cache.scales.unwrap_or(&[0.0]),
                &mut part[..],
                &mut counts[..],
                &mut *o,
                &mut *lse,
            ),
        )?;
        // every launch leaves the counters at zero for the next (the device's are kept): the
        // kernel's invariant
        assert!(
            counts.iter().all(|&n| n == 0),
            "{NAME}: a ticket counter left at {counts:?}"
        );
        if direct || merge {
            return Ok(());
        }
        let merger = DecodeMerge::<T>::new(c.d, splits as i32);
        tilus::interpret(
            &merger,
            (
                c.rows as i32,
                splits as i32,
                c.hq,
                c.hkv,
                call.queries as i32,
                config.slot,
                config.row_blocks(),
                &part[..],
                &part[..],
                o,
                lse,
            ),
        )?;
        Ok(())
    }
}

/// The split of a launch over a cache of `C`: `splits` given (1 to [`MAX_SPLITS`]) or chosen
/// for `multiprocessors` ([`Decode::split_in`]: a converted cache keeps two blocks busy on
/// each), and the keys per split.
fn split_of<T: AttentionElement, C: CacheElement>(
    call: &Decode,
    tiling: Tiling,
    multiprocessors: usize,
) -> crate::Result<(usize, usize)> {
    match tiling.splits {
        Some(s) if (1..=MAX_SPLITS).contains(&s) => {
            let bkv = call.kernel::<T, T>().block_kv as usize;
            Ok((s, call.max_context.div_ceil(bkv).div_ceil(s) * bkv))
        }
        Some(s) => Err(crate::Error::Shape {
            kernel: NAME,
            message: format!("splits = {s}: 1 to {MAX_SPLITS}"),
        }),
        None if <C as tilus::lang::Element>::DTYPE == <T as tilus::lang::Element>::DTYPE => {
            Ok(call.split::<T>(multiprocessors))
        }
        // two blocks a multiprocessor, Q in registers or not: the 64 KB of shared memory a
        // block takes with Q in registers (head dimension 128) would let a third on, but its
        // registers do not (204 a thread; at 168, 100 bytes spill); docs/perf.md
        None => Ok(call.split_in(2 * multiprocessors)),
    }
}

/// The workspace of a launch: the partial slots' f32 elements (`64 · (d + 4)` a block; one
/// row for a direct launch, which writes none) and the ticket counters (one per block of
/// rows).
fn workspace(call: &Decode, d: i32, splits: usize, direct: bool) -> (usize, usize) {
    let groups = call.partial_rows::<u8>(1) / 64;
    let rows = if direct {
        1
    } else {
        call.partial_rows::<u8>(splits)
    };
    (rows * (d as usize + 4), groups)
}

impl<T: AttentionElement> DecodeOp<T> {
    /// Writes the new tokens' keys and values (`k_new`, `v_new`: `[batch, queries, kv_heads,
    /// head_dim]`) into the cache in place, at the end of each sequence's context (token `t`
    /// at position `lens[b] − queries + t`), before [`DecodeOp::run`] reads them. `lens`
    /// counts the new tokens; the pages the positions fall in must be in the table. A cache
    /// of scaled codes takes its `scales` ([`Cache::scales`]): each value divided by its
    /// head's scale, rounded to the nearest code, saturated.
    pub fn append<C: CacheOf<T>>(
        &self,
        stream: &Arc<CudaStream>,
        call: &Decode,
        (k_new, v_new): (&CudaSlice<T>, &CudaSlice<T>),
        (k, v): (&mut CudaSlice<C>, &mut CudaSlice<C>),
        (table, lens, scales): (
            Option<&CudaSlice<i32>>,
            &CudaSlice<i32>,
            Option<&CudaSlice<f32>>,
        ),
    ) -> crate::Result<()> {
        let c = call.checked(1.0)?;
        appended(call, &c, (k_new.len(), v_new.len()))?;
        let q_len = c.rows * c.d as usize;
        buffers(
            call,
            &c,
            (
                q_len,
                (k.len(), v.len(), table.map(|t| t.len())),
                lens.len(),
            ),
            (q_len, c.rows),
        )?;
        scales_of::<C>(&c, scales.map(|s| s.len()))?;
        let config = DecodeAppend::<T, C>::new(call.queries as i32, table.is_some(), c.d);
        let kernel = kept(&C::kernels(self).append, &config, &self.device);
        kernel.launch(
            stream,
            (
                call.batch as i32,
                c.hkv * c.d,
                c.page_size,
                c.pages_per_seq,
                c.rows_cache,
                k_new,
                v_new,
                table.unwrap_or(lens),
                lens,
                scales.unwrap_or(&self.no_scales),
                k,
                v,
            ),
        )?;
        Ok(())
    }

    /// [`DecodeOp::append`] on the CPU interpreter, on host slices (the context lengths and
    /// the pages checked).
    pub fn interpret_append<C: CacheOf<T>>(
        call: &Decode,
        (k_new, v_new): (&[T], &[T]),
        (k, v): (&mut [C], &mut [C]),
        (table, lens, scales): (Option<&[i32]>, &[i32], Option<&[f32]>),
    ) -> crate::Result<()> {
        let c = call.checked(1.0)?;
        appended(call, &c, (k_new.len(), v_new.len()))?;
        let q_len = c.rows * c.d as usize;
        buffers(
            call,
            &c,
            (
                q_len,
                (k.len(), v.len(), table.map(|t| t.len())),
                lens.len(),
            ),
            (q_len, c.rows),
        )?;
        contents(call, table, lens)?;
        scales_of::<C>(&c, scales.map(|s| s.len()))?;
        let config = DecodeAppend::<T, C>::new(call.queries as i32, table.is_some(), c.d);
        tilus::interpret(
            &config,
            (
                call.batch as i32,
                c.hkv * c.d,
                c.page_size,
                c.pages_per_seq,
                c.rows_cache,
                k_new,
                v_new,
                table.unwrap_or(lens),
                lens,
                scales.unwrap_or(&[0.0]),
                k,
                v,
            ),
        )?;
        Ok(())
    }
}

/// The kernel for `call` over a cache of `C`, with `tiling`'s stages and overlap and the
/// launch's ending (`direct`, `merge` of `splits`).
fn configured<T: AttentionElement, C: CacheElement>(
    call: &Decode,
    tiling: Tiling,
    (direct, merge): (bool, bool),
    splits: usize,
) -> DecodeAttention<T, C> {
    let merged = if merge { splits as i32 } else { 0 };
    let mut config = call.kernel::<T, C>().with_direct(direct).with_merge(merged);
    if let Some(stages) = tiling.stages {
        config.stages = stages;
    }
    config.overlap = tiling.overlap == Some(true);
    if let Some(q_in_registers) = tiling.q_in_registers {
        config.q_in_registers = q_in_registers;
    }
    // converters by default where the rest allows them (Q from global memory, no merge in
    // the kernel)
    config.converters = tiling
        .converters
        .unwrap_or(config.converters && config.q_in_registers);
    config
}

/// The scales a cache of `C` takes: `2 · kv_heads` of them for scaled codes, none otherwise.
fn scales_of<C: CacheElement>(c: &Checked, scales: Option<usize>) -> crate::Result<()> {
    match (C::SCALED, scales) {
        (true, Some(n)) => length(NAME, "scales", n, 2 * c.hkv as usize),
        (false, None) => Ok(()),
        (true, None) => Err(crate::Error::Shape {
            kernel: NAME,
            message: format!(
                "a cache of {} codes without its scales ([2, kv_heads] = {})",
                C::NAME,
                2 * c.hkv
            ),
        }),
        (false, Some(_)) => Err(crate::Error::Shape {
            kernel: NAME,
            message: format!(
                "scales given for a cache of {} (they are for codes)",
                C::NAME
            ),
        }),
    }
}

/// The new keys' and values' lengths: `batch · queries · kv_heads · head_dim` each.
fn appended(call: &Decode, c: &Checked, (k_new, v_new): (usize, usize)) -> crate::Result<()> {
    let n = call.batch * call.queries * c.hkv as usize * c.d as usize;
    length(NAME, "k_new", k_new, n)?;
    length(NAME, "v_new", v_new, n)
}

/// The kernel `config`, compiled once and kept.
fn kept<S>(map: &Kept<S>, config: &S, device: &Device) -> Arc<tilus::Jit<S>>
where
    S: tilus::Script + Clone + Eq + std::hash::Hash,
{
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    map.entry(config.clone())
        .or_insert_with(|| Arc::new(tilus::Jit::new(config.clone(), device)))
        .clone()
}

/// The buffers' lengths: `q` and the cache's `(k, v, table)` and `lens`; `o` and `lse`.
fn buffers(
    call: &Decode,
    c: &Checked,
    (q, (k, v, table), lens): (usize, (usize, usize, Option<usize>), usize),
    (o, lse): (usize, usize),
) -> crate::Result<()> {
    let q_len = c.rows * c.d as usize;
    let kv_len = c.rows_cache as usize * c.hkv as usize * c.d as usize;
    length(NAME, "q", q, q_len)?;
    length(NAME, "k", k, kv_len)?;
    length(NAME, "v", v, kv_len)?;
    length(NAME, "lens", lens, call.batch)?;
    length(NAME, "o", o, q_len)?;
    length(NAME, "lse", lse, c.rows)?;
    match (table, &call.layout) {
        (Some(t), KvLayout::Paged { .. }) => length(NAME, "table", t, c.table_len),
        (None, KvLayout::Contiguous { .. }) => Ok(()),
        (Some(_), KvLayout::Contiguous { .. }) => Err(crate::Error::Shape {
            kernel: NAME,
            message: "a block table given for a contiguous cache".into(),
        }),
        (None, KvLayout::Paged { .. }) => Err(crate::Error::Shape {
            kernel: NAME,
            message: "a paged cache without its block table".into(),
        }),
    }
}

/// The context lengths (in `queries ..= max_context`) and the pages they use (in the cache).
fn contents(call: &Decode, table: Option<&[i32]>, lens: &[i32]) -> crate::Result<()> {
    let bad = |message: String| crate::Error::Shape {
        kernel: NAME,
        message,
    };
    for (b, &len) in lens.iter().enumerate() {
        if len < call.queries as i32 || len as usize > call.max_context {
            return Err(bad(format!(
                "lens[{b}] = {len}: a context holds its {} new tokens and at most max_context = {}",
                call.queries, call.max_context
            )));
        }
    }
    if let (
        Some(table),
        KvLayout::Paged {
            page_size,
            pages,
            pages_per_seq,
        },
    ) = (table, &call.layout)
    {
        for (b, &len) in lens.iter().enumerate() {
            let used = (len as usize).div_ceil(*page_size);
            let row = &table[b * pages_per_seq..][..used];
            if let Some(i) = row.iter().position(|&p| p < 0 || p as usize >= *pages) {
                return Err(bad(format!(
                    "table[{b}][{i}] = {}: a page of the cache's {pages}",
                    row[i]
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{split_of, Tiling};
    use crate::attention::decode::problem::{Decode, KvLayout};
    use crate::attention::Heads;
    use half::f16;
    use tilus::lowp::F8E4M3;

    /// The host API's split: a cache of the attention's type over the multiprocessors, a cache
    /// of codes over twice as many slots (two blocks a multiprocessor overlap its longer
    /// steps: 16 x 4096 e4m3 in two splits, not one); a split asked for is taken as asked.
    #[test]
    fn caches_of_codes_split_for_two_blocks_a_multiprocessor() {
        let call = Decode {
            batch: 16,
            queries: 1,
            heads: Heads::new(32, 8, 128),
            layout: KvLayout::Contiguous { capacity: 4096 },
            max_context: 4096,
        };
        let own = split_of::<f16, f16>(&call, Tiling::default(), 132).unwrap();
        let codes = split_of::<f16, F8E4M3>(&call, Tiling::default(), 132).unwrap();
        assert_eq!(own, call.split::<f16>(132));
        assert_eq!(codes, call.split_in(264));
        assert_ne!(own.0, codes.0, "{own:?} {codes:?}");
        let asked = Tiling {
            splits: Some(3),
            ..Tiling::default()
        };
        assert_eq!(split_of::<f16, F8E4M3>(&call, asked, 132).unwrap().0, 3);
    }
}
