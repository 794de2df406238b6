//! A batch's shape: its sequences (one length each, or packed by cumulative offsets) and its
//! heads, checked before anything is launched.

use crate::Error;

const NAME: &str = "flash_forward";

/// The query and key heads and the head dimension. `q` is `[rows_q, q_heads, head_dim]`, `k`
/// and `v` `[rows_kv, kv_heads, head_dim]`; query head `h` reads key head
/// `h / (q_heads / kv_heads)` (GQA; MQA is one key head).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Heads {
    /// Query heads: a multiple of `kv_heads`.
    pub q_heads: usize,
    /// Key and value heads.
    pub kv_heads: usize,
    /// The head dimension: 64, 128 or 256.
    pub head_dim: usize,
}

impl Heads {
    /// `q_heads` query heads over `kv_heads` key heads of `head_dim`.
    pub fn new(q_heads: usize, kv_heads: usize, head_dim: usize) -> Heads {
        Heads {
            q_heads,
            kv_heads,
            head_dim,
        }
    }

    /// The heads as the kernel takes them, or why not.
    pub(crate) fn checked(&self) -> crate::Result<(i32, i32, i32)> {
        let bad = |message: String| Error::Shape {
            kernel: NAME,
            message,
        };
        if ![64, 128, 256].contains(&self.head_dim) {
            return Err(bad(format!(
                "head_dim = {}: the kernel takes 64, 128 and 256",
                self.head_dim
            )));
        }
        if self.kv_heads == 0 || self.q_heads == 0 || !self.q_heads.is_multiple_of(self.kv_heads) {
            return Err(bad(format!(
                "{} query heads over {} key heads: the query heads must be a positive multiple \
                 of the key heads",
                self.q_heads, self.kv_heads
            )));
        }
        let hq = crate::host::dim(NAME, "q_heads", self.q_heads, 1)?;
        let hkv = crate::host::dim(NAME, "kv_heads", self.kv_heads, 1)?;
        Ok((hq, hkv, self.head_dim as i32))
    }
}

/// The sequences of a batch: `batch` of one length each, or packed one after another, the
/// rows of sequence `b` being `cu_q[b] .. cu_q[b + 1]` of Q (and `cu_kv[b] .. cu_kv[b + 1]`
/// of K and V).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sequences {
    /// `batch` sequences of `seq_q` queries and `seq_kv` keys.
    Fixed {
        /// Sequences.
        batch: usize,
        /// Queries per sequence.
        seq_q: usize,
        /// Keys per sequence.
        seq_kv: usize,
    },
    /// Sequences of their own lengths, packed: cumulative offsets from 0, one more than the
    /// sequences, never decreasing.
    Packed {
        /// The queries' offsets.
        cu_q: Vec<i32>,
        /// The keys' offsets.
        cu_kv: Vec<i32>,
    },
}

/// A batch's offsets as the kernel reads them, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Offsets {
    pub cu_q: Vec<i32>,
    pub cu_kv: Vec<i32>,
    /// The longest sequence of queries.
    pub max_q: i32,
}

impl Offsets {
    pub fn batch(&self) -> usize {
        self.cu_q.len() - 1
    }
    pub fn rows_q(&self) -> usize {
        *self.cu_q.last().expect("checked offsets are never empty") as usize
    }
    pub fn rows_kv(&self) -> usize {
        *self.cu_kv.last().expect("checked offsets are never empty") as usize
    }
}

impl Sequences {
    /// The batch's offsets, or why they cannot be.
    pub(crate) fn offsets(&self) -> crate::Result<Offsets> {
        let bad = |message: String| Error::Shape {
            kernel: NAME,
            message,
        };
        let (cu_q, cu_kv) = match self {
            Sequences::Fixed {
                batch,
                seq_q,
                seq_kv,
            } => {
                crate::host::dim(NAME, "batch", *batch, 1)?;
                let rows_q = crate::host::elements(NAME, *batch, *seq_q)?;
                let rows_kv = crate::host::elements(NAME, *batch, *seq_kv)?;
                crate::host::dim(NAME, "batch · seq_q", rows_q, 0)?;
                crate::host::dim(NAME, "batch · seq_kv", rows_kv, 0)?;
                let cu = |s: usize| (0..=*batch).map(|b| (b * s) as i32).collect::<Vec<_>>();
                (cu(*seq_q), cu(*seq_kv))
            }
            Sequences::Packed { cu_q, cu_kv } => {
                for (name, cu) in [("cu_q", cu_q), ("cu_kv", cu_kv)] {
                    if cu.len() < 2 || cu[0] != 0 {
                        return Err(bad(format!(
                            "`{name}` must start at 0 and hold one more offset than there are \
                             sequences (it is {cu:?})"
                        )));
                    }
                    if let Some(b) = cu.windows(2).position(|w| w[1] < w[0]) {
                        return Err(bad(format!(
                            "`{name}` decreases after sequence {b}: {} then {}",
                            cu[b],
                            cu[b + 1]
                        )));
                    }
                }
                if cu_q.len() != cu_kv.len() {
                    return Err(bad(format!(
                        "`cu_q` has {} offsets, `cu_kv` {}: one per sequence and one more each",
                        cu_q.len(),
                        cu_kv.len()
                    )));
                }
                (cu_q.clone(), cu_kv.clone())
            }
        };
        let max_q = cu_q.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
        Ok(Offsets { cu_q, cu_kv, max_q })
    }
}
