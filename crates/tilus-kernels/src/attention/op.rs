//! The host API of [`FlashForward`]: the batch, the heads and the buffers checked before
//! anything is launched.

use super::sequences::Offsets;
use super::{AttentionElement, FlashForward, FlashForwardWs, FlashKernel, Heads, Sequences};
use crate::host::length;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tilus::cudarc::driver::{CudaSlice, CudaStream};
use tilus::runtime::Device;

const NAME: &str = "flash_forward";

/// The buffers' lengths a call needs, checked; the kernel's integer arguments.
struct Checked {
    off: Offsets,
    hq: i32,
    hkv: i32,
}

fn checked(
    (seqs, heads, scale): (&Sequences, Heads, f32),
    (q, k, v): (usize, usize, usize),
    (o, lse): (usize, usize),
) -> crate::Result<Checked> {
    // the kernels keep each row's maximum of raw scores, the maximum of scaled ones only
    // where the scale is positive
    if !(scale > 0.0 && scale.is_finite()) {
        return Err(crate::Error::Shape {
            kernel: NAME,
            message: format!("scale = {scale}: the softmax scale must be positive and finite"),
        });
    }
    let (hq, hkv, d) = heads.checked()?;
    let off = seqs.offsets()?;
    let e = |a, b| crate::host::elements(NAME, a, b);
    let (rows_q, rows_kv) = (off.rows_q(), off.rows_kv());
    let q_len = e(e(rows_q, hq as usize)?, d as usize)?;
    let kv_len = e(e(rows_kv, hkv as usize)?, d as usize)?;
    // the views' extents are i32 arguments
    crate::host::dim(NAME, "rows_q · q_heads · head_dim", q_len, 0)?;
    crate::host::dim(NAME, "rows_kv · kv_heads · head_dim", kv_len, 0)?;
    length(NAME, "q", q, q_len)?;
    length(NAME, "k", k, kv_len)?;
    length(NAME, "v", v, kv_len)?;
    length(NAME, "o", o, q_len)?;
    length(NAME, "lse", lse, rows_q * hq as usize)?;
    Ok(Checked { off, hq, hkv })
}

/// Kernels of other tiles, by their configuration.
type Kept<T> = HashMap<FlashForwardWs<T>, Arc<tilus::Jit<FlashForwardWs<T>>>>;

/// The kernels' arguments on device buffers.
type DeviceArgs<'b, T> = (
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    f32,
    &'b CudaSlice<T>,
    &'b CudaSlice<T>,
    &'b CudaSlice<T>,
    &'b CudaSlice<i32>,
    &'b CudaSlice<i32>,
    &'b mut CudaSlice<T>,
    &'b mut CudaSlice<f32>,
);

/// A batch's offsets and their copies on the device (`cu_q`, `cu_kv`).
type Uploaded = (Offsets, CudaSlice<i32>, CudaSlice<i32>);

/// Flash attention forward on device buffers of `T` (f16 or bf16): `o = softmax(scale ·
/// q·kᵀ) · v` per head and sequence, and `lse`, each row's natural log-sum-exp of its scaled
/// scores. Layouts: `q` and `o` `[rows_q, q_heads, head_dim]`, `k` and `v` `[rows_kv,
/// kv_heads, head_dim]`, `lse` `[q_heads, rows_q]`.
///
/// ```no_run
/// use half::f16;
/// use tilus_kernels::attention::{FlashForwardOp, Heads, Sequences};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let device = tilus::runtime::Device::open(0)?;
/// let stream = device.stream();
/// let (batch, seq, heads) = (2, 1024, Heads::new(32, 8, 128));
/// let seqs = Sequences::Fixed { batch, seq_q: seq, seq_kv: seq };
/// let n = batch * seq * heads.q_heads * heads.head_dim;
/// let nkv = batch * seq * heads.kv_heads * heads.head_dim;
/// let q = stream.clone_htod(&vec![f16::from_f32(0.1); n])?;
/// let (k, v) = (stream.clone_htod(&vec![f16::ONE; nkv])?, stream.clone_htod(&vec![f16::ONE; nkv])?);
/// let mut o = stream.alloc_zeros::<f16>(n)?;
/// let mut lse = stream.alloc_zeros::<f32>(batch * seq * heads.q_heads)?;
/// let op = FlashForwardOp::<f16>::new(&device);
/// op.run(stream, &seqs, heads, 1.0 / 128f32.sqrt(), true, (&q, &k, &v), (&mut o, &mut lse))?;
/// # Ok(()) }
/// ```
///
/// The same on the CPU interpreter, on host slices:
///
/// ```
/// use half::f16;
/// use tilus_kernels::attention::{FlashForward, FlashForwardOp, Heads, Sequences};
/// let heads = Heads::new(2, 1, 64);
/// let seqs = Sequences::Packed { cu_q: vec![0, 3, 70], cu_kv: vec![0, 5, 72] };
/// let (q, kv) = (vec![f16::ONE; 70 * 2 * 64], vec![f16::ONE; 72 * 64]);
/// let (mut o, mut lse) = (vec![f16::NAN; 70 * 2 * 64], vec![f32::NAN; 2 * 70]);
/// let config = FlashForward::<f16>::new(64, false);
/// FlashForwardOp::interpret(&config, &seqs, heads, 0.125, (&q, &kv, &kv), (&mut o, &mut lse))?;
/// // equal scores: every row averages its values (ones), over 5 keys in the first sequence
/// assert!(o.iter().all(|&x| x == f16::ONE));
/// assert!((lse[0] - (8.0 + 5f32.ln())).abs() < 1e-4);
/// # Ok::<(), tilus_kernels::Error>(())
/// ```
pub struct FlashForwardOp<T: AttentionElement> {
    /// The plain kernels by head dimension (64, 128, 256), causal and not.
    plain: [[tilus::Jit<FlashForward<T>>; 2]; 3],
    /// The warp-specialized kernels by head dimension, causal and not, and schedule
    /// ([`Variant::schedule_index`]).
    specialized: [[[tilus::Jit<FlashForwardWs<T>>; 4]; 2]; 3],
    /// The last batch's offsets as uploaded (a batch of the same shape reuses them).
    offsets: Mutex<Option<Uploaded>>,
    /// Kernels of other tiles, by their configuration ([`FlashForwardOp::run_specialized`]).
    kept: Mutex<Kept<T>>,
    device: Device,
}

/// Which kernel runs: [`FlashForwardOp::run`] takes [`Variant::for_head_dim`] (the fastest
/// measured, docs/perf.md); [`FlashForwardOp::run_variant`] any of them (the tutorial's
/// ablation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// [`FlashForward`]: one warp group, no specialization.
    Plain,
    /// [`FlashForwardWs`] with its schedule.
    Specialized {
        /// The softmax under the products.
        overlap: bool,
        /// The consumers' products in turns.
        ping_pong: bool,
    },
}

impl Variant {
    /// The whole schedule: specialization, the softmax under the products, ping-pong.
    pub const DEFAULT: Variant = Variant::Specialized {
        overlap: true,
        ping_pong: true,
    };

    /// What [`FlashForwardOp::run`] launches for heads of `head_dim`, by the measurements of
    /// docs/perf.md ("Flash attention forward, first measurements"): the plain kernel at
    /// head dimension 64, where a step's products are too short for the specialized one's
    /// hand-offs; elsewhere the specialized one with the softmax under the products, without
    /// ping-pong (whose turns cost 1–3% there).
    pub fn for_head_dim(head_dim: usize) -> Variant {
        if head_dim <= 64 {
            Variant::Plain
        } else {
            Variant::Specialized {
                overlap: true,
                ping_pong: false,
            }
        }
    }

    /// Every variant, simplest first.
    pub const ALL: [Variant; 5] = [
        Variant::Plain,
        Variant::Specialized {
            overlap: false,
            ping_pong: false,
        },
        Variant::Specialized {
            overlap: true,
            ping_pong: false,
        },
        Variant::Specialized {
            overlap: false,
            ping_pong: true,
        },
        Variant::DEFAULT,
    ];

    /// A short name: `plain`, `ws`, `ws+overlap`, `ws+pingpong`, `ws+overlap+pingpong`.
    pub fn name(&self) -> &'static str {
        match self {
            Variant::Plain => "plain",
            Variant::Specialized {
                overlap: false,
                ping_pong: false,
            } => "ws",
            Variant::Specialized {
                overlap: true,
                ping_pong: false,
            } => "ws+overlap",
            Variant::Specialized {
                overlap: false,
                ping_pong: true,
            } => "ws+pingpong",
            Variant::Specialized { .. } => "ws+overlap+pingpong",
        }
    }

    fn schedule_index(overlap: bool, ping_pong: bool) -> usize {
        overlap as usize + 2 * ping_pong as usize
    }
}

impl<T: AttentionElement> FlashForwardOp<T> {
    /// The kernels bound to `device` (each compiled on its first use).
    pub fn new(device: &Device) -> Self {
        let plain = |d, causal| tilus::Jit::new(FlashForward::<T>::new(d, causal), device);
        let ws = |d, causal| {
            [(false, false), (true, false), (false, true), (true, true)].map(|(o, p)| {
                let c = FlashForwardWs::<T>::new(d, causal).with_schedule(o, p);
                tilus::Jit::new(c, device)
            })
        };
        FlashForwardOp {
            plain: [64, 128, 256].map(|d| [plain(d, false), plain(d, true)]),
            specialized: [64, 128, 256].map(|d| [ws(d, false), ws(d, true)]),
            offsets: Mutex::new(None),
            kept: Mutex::new(HashMap::new()),
            device: device.clone(),
        }
    }

    /// `o`, `lse` of `q`, `k`, `v` for the batch `seqs` on `stream` (see the type's doc), by
    /// [`Variant::for_head_dim`].
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &self,
        stream: &Arc<CudaStream>,
        seqs: &Sequences,
        heads: Heads,
        scale: f32,
        causal: bool,
        inputs: (&CudaSlice<T>, &CudaSlice<T>, &CudaSlice<T>),
        outputs: (&mut CudaSlice<T>, &mut CudaSlice<f32>),
    ) -> crate::Result<()> {
        let v = Variant::for_head_dim(heads.head_dim);
        self.run_variant(v, stream, seqs, heads, scale, causal, inputs, outputs)
    }

    /// [`FlashForwardOp::run`] by the kernel `variant`.
    #[allow(clippy::too_many_arguments)]
    pub fn run_variant(
        &self,
        variant: Variant,
        stream: &Arc<CudaStream>,
        seqs: &Sequences,
        heads: Heads,
        scale: f32,
        causal: bool,
        inputs: (&CudaSlice<T>, &CudaSlice<T>, &CudaSlice<T>),
        outputs: (&mut CudaSlice<T>, &mut CudaSlice<f32>),
    ) -> crate::Result<()> {
        self.launch(
            stream,
            (seqs, heads, scale),
            inputs,
            outputs,
            |i, args| match variant {
                Variant::Plain => self.plain[i][causal as usize].launch(stream, args),
                Variant::Specialized { overlap, ping_pong } => {
                    let s = Variant::schedule_index(overlap, ping_pong);
                    self.specialized[i][causal as usize][s].launch(stream, args)
                }
            },
        )
    }

    /// [`FlashForwardOp::run`] by the warp-specialized kernel `config` (any tiles and
    /// schedule; its head dimension and causality are the config's). Each config is compiled
    /// once and kept.
    pub fn run_specialized(
        &self,
        config: &FlashForwardWs<T>,
        stream: &Arc<CudaStream>,
        (seqs, heads, scale): (&Sequences, Heads, f32),
        inputs: (&CudaSlice<T>, &CudaSlice<T>, &CudaSlice<T>),
        outputs: (&mut CudaSlice<T>, &mut CudaSlice<f32>),
    ) -> crate::Result<()> {
        fits(heads, config.head_dim)?;
        let jit = {
            let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            kept.entry(config.clone())
                .or_insert_with(|| Arc::new(tilus::Jit::new(config.clone(), &self.device)))
                .clone()
        };
        self.launch(stream, (seqs, heads, scale), inputs, outputs, |_, args| {
            jit.launch(stream, args)
        })
    }

    /// Checks the call, uploads the batch's offsets if they changed, and launches by
    /// `launch` (given the head dimension's index among 64, 128, 256 and the arguments).
    fn launch(
        &self,
        stream: &Arc<CudaStream>,
        (seqs, heads, scale): (&Sequences, Heads, f32),
        (q, k, v): (&CudaSlice<T>, &CudaSlice<T>, &CudaSlice<T>),
        (o, lse): (&mut CudaSlice<T>, &mut CudaSlice<f32>),
        launch: impl FnOnce(usize, DeviceArgs<'_, T>) -> tilus::Result<()>,
    ) -> crate::Result<()> {
        let lens = (q.len(), k.len(), v.len());
        let c = checked((seqs, heads, scale), lens, (o.len(), lse.len()))?;
        if c.off.max_q == 0 {
            return Ok(());
        }
        let mut cache = self.offsets.lock().unwrap_or_else(|e| e.into_inner());
        if cache.as_ref().map(|(off, ..)| off) != Some(&c.off) {
            let up = |x: &[i32]| {
                stream.clone_htod(x).map_err(|e| tilus::Error::Driver {
                    call: "cuMemcpyHtoD",
                    message: format!("flash_forward's sequence offsets: {e}"),
                })
            };
            *cache = Some((c.off.clone(), up(&c.off.cu_q)?, up(&c.off.cu_kv)?));
        }
        // (the lock is held until the launch is queued)
        let (_, cu_q, cu_kv) = cache.as_ref().expect("uploaded above");
        let i = [64, 128, 256]
            .iter()
            .position(|&d| d == heads.head_dim)
            .expect("checked head dimension");
        let args = (
            c.off.batch() as i32,
            c.hq,
            c.hkv,
            c.off.max_q,
            c.off.rows_q() as i32,
            c.off.rows_kv() as i32,
            scale * std::f32::consts::LOG2_E,
            q,
            k,
            v,
            cu_q,
            cu_kv,
            o,
            lse,
        );
        Ok(launch(i, args)?)
    }

    /// The computation by the kernel `config` ([`FlashForward`] or [`FlashForwardWs`]) on
    /// the CPU interpreter (its head dimension and causality are the config's).
    pub fn interpret<S: FlashKernel<T>>(
        config: &S,
        seqs: &Sequences,
        heads: Heads,
        scale: f32,
        (q, k, v): (&[T], &[T], &[T]),
        (o, lse): (&mut [T], &mut [f32]),
    ) -> crate::Result<()> {
        let c = checked(
            (seqs, heads, scale),
            (q.len(), k.len(), v.len()),
            (o.len(), lse.len()),
        )?;
        fits(heads, config.head_dim())?;
        if c.off.max_q == 0 {
            return Ok(());
        }
        let args = (
            c.off.batch() as i32,
            c.hq,
            c.hkv,
            c.off.max_q,
            c.off.rows_q() as i32,
            c.off.rows_kv() as i32,
            scale * std::f32::consts::LOG2_E,
            q,
            k,
            v,
            &c.off.cu_q[..],
            &c.off.cu_kv[..],
            o,
            lse,
        );
        tilus::interpret(config, args)?;
        Ok(())
    }
}

/// Whether a kernel for `head_dim` takes these heads.
fn fits(heads: Heads, head_dim: i32) -> crate::Result<()> {
    if heads.head_dim as i32 != head_dim {
        return Err(crate::Error::Shape {
            kernel: NAME,
            message: format!("head_dim = {}, a kernel for {head_dim}", heads.head_dim),
        });
    }
    Ok(())
}
