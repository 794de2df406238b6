//! The decode workload ([`tilus_kernels::attention::decode`]): one new token of each of
//! `batch` sequences over a contiguous cache of `context` positions (f16, or e4m3 codes with
//! a scale per key-value head: [`DECODE_E4M3`]), f16 queries, 8 query heads over 2
//! key-value heads of 128 (the registry entry's default configuration), the decode kernel in
//! one split written to the partial slots (neither direct nor merged: each block's slot holds
//! its rows' outputs and, in column 128, their log-sum-exp); the
//! reference is the exact f64 step on the host (on both backends: a decode step has no
//! library peer in this process).

use crate::alloc;
use crate::buffers::{download, drv, poisoned, ptr, upload};
use crate::compare::{compare_within, Check, Tolerance};
use crate::harness::Rng;
use crate::size::Size;
use crate::workload::{DeviceCase, HostCase, Workload};
use crate::Result;
use half::f16;
use std::marker::PhantomData;
use std::sync::Arc;
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::interp::InterpValue;
use tilus::lang::HostValue;
use tilus::lowp::F8E4M3;
use tilus_kernels::attention::decode::{reference, Cache, CacheElement, Decode, KvLayout};
use tilus_kernels::attention::Heads;

/// The dimensions of the workload's size.
pub const DIMS: &[&str] = &["batch", "context"];

/// The heads of every case: 4 query heads per key-value head, as the default kernel's slot.
const HEADS: Heads = Heads {
    q_heads: 8,
    kv_heads: 2,
    head_dim: 128,
};

/// A decode step of one token per sequence over a contiguous cache of `C`.
pub struct DecodeWorkload<C>(PhantomData<fn() -> C>);

/// The workload of the registry's decode entry.
pub static DECODE: DecodeWorkload<f16> = DecodeWorkload(PhantomData);

/// The workload of the registry's decode entry over a cache of e4m3 codes.
pub static DECODE_E4M3: DecodeWorkload<F8E4M3> = DecodeWorkload(PhantomData);

/// The compile-time constants: none.
pub fn consts(_: &Size) -> Vec<i64> {
    Vec::new()
}

/// The call, the inputs (Q, K, V, context lengths, a cache of codes' scales) of a case.
struct Inputs<C> {
    call: Decode,
    q: Vec<f16>,
    k: Vec<C>,
    v: Vec<C>,
    lens: Vec<i32>,
    /// The keys' scale of each key-value head, then the values' (one unread value for a
    /// cache of f16).
    scales: Vec<f32>,
}

const SCALE: f32 = 0.088388;

/// A partial slot row's elements: the output's 128, the log-sum-exp, padding to 16 bytes.
const WIDTH: usize = 128 + 4;

fn inputs<C: CacheElement>(what: &str, size: &Size, seed: u64) -> Result<Inputs<C>> {
    let [batch, context] = size.dims()?;
    let d = HEADS.head_dim;
    let kv = alloc::elements(what, &[batch, context, HEADS.kv_heads, d])?;
    alloc::ensure(what, 4 * kv as u128)?;
    let mut rng = Rng::new(seed);
    let mut unit = move || rng.next_f64() * 2.0 - 1.0;
    let q: Vec<f16> = (0..batch * HEADS.q_heads * d)
        .map(|_| f16::from_f64(unit()))
        .collect();
    // codes over the format's range for a cache of codes (values about (-1, 1) after the
    // scales: the keys' growing with the head, the values' shrinking)
    let top = C::code_range();
    let mut draw = |n: usize| -> Vec<C> { (0..n).map(|_| C::from_f64(unit() * top)).collect() };
    let scales = if C::SCALED {
        let ks = (0..HEADS.kv_heads).map(|h| ((1.0 + h as f64) / top) as f32);
        let vs = (0..HEADS.kv_heads).map(|h| (1.0 / ((1.0 + h as f64) * top)) as f32);
        ks.chain(vs).collect()
    } else {
        vec![f32::NAN]
    };
    let call = Decode {
        batch,
        queries: 1,
        heads: HEADS,
        layout: KvLayout::Contiguous { capacity: context },
        max_context: context,
    };
    Ok(Inputs {
        q,
        k: draw(kv),
        v: draw(kv),
        scales,
        // ragged: the first sequence's context is a third of the others'
        lens: (0..batch)
            .map(|b| if b == 0 { context.div_ceil(3) } else { context } as i32)
            .collect(),
        call,
    })
}

impl<C: CacheElement> Inputs<C> {
    /// The partial slots' rows of the outputs (one split: block `b · 2 + hk`, rows 0..4),
    /// and the partial slots' length.
    fn slot_row(&self, r: usize) -> usize {
        let (b, h) = (r / HEADS.q_heads, r % HEADS.q_heads);
        let group = HEADS.q_heads / HEADS.kv_heads;
        (b * HEADS.kv_heads + h / group) * 64 + h % group
    }

    fn slots(&self) -> usize {
        self.call.batch * HEADS.kv_heads * 64
    }

    /// The kernel's arguments but the buffers, in order: batch, hq, hkv, splits, keys per
    /// split, capacity, table row length, cache rows, scale in base 2.
    fn scalars(&self) -> [i64; 8] {
        let context = self.call.max_context;
        [
            self.call.batch as i64,
            HEADS.q_heads as i64,
            HEADS.kv_heads as i64,
            1,
            (context.div_ceil(64) * 64) as i64,
            context as i64,
            1,
            (self.call.batch * context) as i64,
        ]
    }

    /// The outputs and log-sum-exp in the partial slots against the exact step.
    fn check(&self, part: &[f32]) -> Check {
        let cache = Cache {
            k: &self.k[..],
            v: &self.v[..],
            table: None,
            lens: &self.lens[..],
            scales: C::SCALED.then_some(&self.scales[..]),
        };
        let (want_o, want_lse) = reference::decode(&self.call, SCALE as f64, &self.q, &cache);
        let d = HEADS.head_dim;
        let rows = self.call.batch * HEADS.q_heads;
        let got = (0..rows).flat_map(|r| {
            let s = self.slot_row(r);
            part[s * WIDTH..][..d]
                .iter()
                .map(|&x| x as f64)
                .chain(std::iter::once(part[s * WIDTH + d] as f64))
        });
        let want = (0..rows).flat_map(|r| {
            want_o[r * d..][..d]
                .iter()
                .copied()
                .chain(std::iter::once(want_lse[r]))
        });
        // P rounded to f16 before its product with V: a few f16 steps of error
        compare_within(
            got,
            want,
            Tolerance {
                rtol: 2e-3,
                atol: 2e-3,
            },
        )
    }
}

struct OnHost<C> {
    inputs: Inputs<C>,
    part: Vec<f32>,
    counts: Vec<i32>,
    unused: (Vec<f16>, Vec<f32>),
}

impl<C: CacheElement> HostCase for OnHost<C> {
    fn args(&mut self) -> Vec<InterpValue<'_>> {
        let mut args: Vec<InterpValue<'_>> = self
            .inputs
            .scalars()
            .into_iter()
            .map(InterpValue::Int)
            .collect();
        args.extend([
            InterpValue::Float(SCALE as f64 * std::f64::consts::LOG2_E),
            InterpValue::buffer(&self.inputs.q),
            InterpValue::buffer(&self.inputs.k),
            InterpValue::buffer(&self.inputs.v),
            InterpValue::buffer(&self.inputs.lens),
            InterpValue::buffer(&self.inputs.lens),
            InterpValue::buffer(&self.inputs.scales),
            InterpValue::buffer_mut(&mut self.part),
            InterpValue::buffer_mut(&mut self.counts),
            // the output of a direct kernel, which the registry's (split) never writes
            InterpValue::buffer_mut(&mut self.unused.0),
            InterpValue::buffer_mut(&mut self.unused.1),
        ]);
        args
    }

    fn check(&self) -> Result<Check> {
        Ok(self.inputs.check(&self.part))
    }
}

struct OnDevice<C> {
    inputs: Inputs<C>,
    q: CudaSlice<f16>,
    k: CudaSlice<C>,
    v: CudaSlice<C>,
    lens: CudaSlice<i32>,
    part: CudaSlice<f32>,
    counts: CudaSlice<i32>,
    unused: (CudaSlice<f16>, CudaSlice<f32>),
    scales: CudaSlice<f32>,
}

impl<C: CacheElement + crate::buffers::Sample> DeviceCase for OnDevice<C> {
    fn args(&mut self, stream: &Arc<CudaStream>) -> Vec<HostValue> {
        let mut args: Vec<HostValue> = self
            .inputs
            .scalars()
            .into_iter()
            .map(HostValue::Int)
            .collect();
        args.extend([
            HostValue::Float(SCALE as f64 * std::f64::consts::LOG2_E),
            ptr(&self.q, stream),
            ptr(&self.k, stream),
            ptr(&self.v, stream),
            ptr(&self.lens, stream),
            ptr(&self.lens, stream),
            ptr(&self.scales, stream),
            ptr(&self.part, stream),
            ptr(&self.counts, stream),
            ptr(&self.unused.0, stream),
            ptr(&self.unused.1, stream),
        ]);
        args
    }

    fn reference(&mut self, _: &Arc<CudaStream>) -> Result<()> {
        Ok(())
    }

    fn check(&self, stream: &Arc<CudaStream>) -> Result<Check> {
        let what = "the decode step's partial slots";
        let part = download(stream, what, &self.part)?;
        Ok(self.inputs.check(&part))
    }
}

impl<C: CacheElement + crate::buffers::Sample> Workload for DecodeWorkload<C> {
    fn dims(&self) -> &'static [&'static str] {
        DIMS
    }

    fn host_case(&self, size: &Size, seed: u64) -> Result<Box<dyn HostCase>> {
        let what = format!("a {size} decode step on the host");
        let inputs = inputs::<C>(&what, size, seed)?;
        let slots = inputs.slots();
        Ok(Box::new(OnHost {
            part: alloc::try_vec(&what, slots * WIDTH, f32::NAN)?,
            counts: vec![0; slots / 64],
            unused: (vec![f16::NAN], vec![f32::NAN]),
            inputs,
        }))
    }

    fn device_case(
        &self,
        stream: &Arc<CudaStream>,
        size: &Size,
        seed: u64,
    ) -> Result<Box<dyn DeviceCase>> {
        let what = format!("a {size} decode step");
        let inputs = inputs::<C>(&what, size, seed)?;
        let slots = inputs.slots();
        Ok(Box::new(OnDevice {
            q: upload(stream, &inputs.q)?,
            k: upload(stream, &inputs.k)?,
            v: upload(stream, &inputs.v)?,
            lens: stream
                .clone_htod(&inputs.lens)
                .map_err(drv("cuMemcpyHtoD"))?,
            part: poisoned::<f32>(stream, &what, slots * WIDTH)?,
            counts: stream
                .alloc_zeros::<i32>(slots / 64)
                .map_err(drv("cuMemAlloc"))?,
            unused: (upload(stream, &[f16::NAN])?, upload(stream, &[f32::NAN])?),
            scales: upload(stream, &inputs.scales)?,
            inputs,
        }))
    }

    fn device_reference(&self) -> &'static str {
        "the exact step on the host"
    }
}
