//! What a decode call describes (the batch, its new tokens, the heads, the cache's layout),
//! checked before anything is launched, and the split of the context it is run with.

use super::super::Heads;
use super::kernel::{DecodeAttention, BLOCK_ROWS};
use crate::Error;
use tilus::lang::Element;

pub(crate) const NAME: &str = "attention::decode";

/// The most splits of one sequence's context (the merge reads them as one tile).
pub const MAX_SPLITS: usize = 32;

/// Where the keys and values of a sequence lie in the cache (`k` and `v` alike).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KvLayout {
    /// `[batch, capacity, kv_heads, head_dim]`: position `p` of sequence `b` is row
    /// `b · capacity + p`.
    Contiguous {
        /// Positions per sequence.
        capacity: usize,
    },
    /// `[pages, page_size, kv_heads, head_dim]` with a block table `[batch, pages_per_seq]`
    /// of `i32` page numbers: position `p` of sequence `b` is row `p % page_size` of page
    /// `table[b][p / page_size]`. Pages of 8, 16, 32 or 64 rows, or any multiple of 64.
    Paged {
        /// Rows per page.
        page_size: usize,
        /// Pages in the cache.
        pages: usize,
        /// Entries per sequence in the block table.
        pages_per_seq: usize,
    },
}

/// One decode step of a batch: each sequence brings `queries` new tokens (their keys and
/// values already in the cache, at the end of its context) and reads its whole context.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decode {
    /// Sequences.
    pub batch: usize,
    /// New tokens per sequence, 1 to 8 (speculative decoding's drafts): token `t` sits at
    /// position `context − queries + t` and sees the keys up to it.
    pub queries: usize,
    /// The heads (query heads a multiple of the key-value heads, at most 64 per key-value
    /// head).
    pub heads: Heads,
    /// The cache's layout.
    pub layout: KvLayout,
    /// The longest context in the batch, or a bound of it: the split of the contexts is
    /// chosen by it. Every context length (the new tokens included) must lie in `queries ..=
    /// max_context`; the interpreter's entry checks them, the device's cannot without a copy
    /// (keys past `max_context` are not read).
    pub max_context: usize,
}

/// A checked call: the values the kernels take.
pub(crate) struct Checked {
    pub hq: i32,
    pub hkv: i32,
    pub d: i32,
    /// `page_size` of the kernel's arguments (a contiguous cache's capacity).
    pub page_size: i32,
    pub pages_per_seq: i32,
    pub rows_cache: i32,
    /// The output's rows: batch · queries · query heads.
    pub rows: usize,
    /// The table's length (0 for a contiguous cache).
    pub table_len: usize,
}

fn bad(message: String) -> Error {
    Error::Shape {
        kernel: NAME,
        message,
    }
}

impl Decode {
    /// The call's values, or the rule it breaks.
    pub(crate) fn checked(&self, scale: f32) -> crate::Result<Checked> {
        if !(scale > 0.0 && scale.is_finite()) {
            return Err(bad(format!(
                "scale = {scale}: the softmax scale must be positive and finite"
            )));
        }
        let (hq, hkv, d) = self.heads.checked()?;
        if hq / hkv > BLOCK_ROWS {
            return Err(bad(format!(
                "{hq} query heads per {hkv} key-value heads: at most {BLOCK_ROWS} query heads \
                 share one"
            )));
        }
        if !(1..=8).contains(&self.queries) {
            return Err(bad(format!(
                "queries = {}: 1 to 8 new tokens per sequence",
                self.queries
            )));
        }
        crate::host::dim(NAME, "batch", self.batch, 1)?;
        let (page_size, pages_per_seq, rows_cache, reach) = match self.layout {
            KvLayout::Contiguous { capacity } => {
                let rows = crate::host::elements(NAME, self.batch, capacity)?;
                (capacity, 1, rows, capacity)
            }
            KvLayout::Paged {
                page_size,
                pages,
                pages_per_seq,
            } => {
                let fits = (page_size >= 8 && 64 % page_size == 0)
                    || (page_size > 0 && page_size % 64 == 0);
                if !fits {
                    return Err(bad(format!(
                        "page_size = {page_size}: pages of 8, 16, 32 or 64 rows, or a multiple \
                         of 64"
                    )));
                }
                crate::host::dim(NAME, "pages", pages, 1)?;
                let rows = crate::host::elements(NAME, pages, page_size)?;
                let reach = crate::host::elements(NAME, pages_per_seq, page_size)?;
                (page_size, pages_per_seq, rows, reach)
            }
        };
        if self.max_context < self.queries || self.max_context > reach {
            return Err(bad(format!(
                "max_context = {}: at least the {} new tokens, at most the {reach} positions a \
                 sequence's cache holds",
                self.max_context, self.queries
            )));
        }
        let e = |a, b| crate::host::elements(NAME, a, b);
        let rows = e(e(self.batch, self.queries)?, hq as usize)?;
        let q_len = e(rows, d as usize)?;
        let kv_len = e(e(rows_cache, hkv as usize)?, d as usize)?;
        // the views' extents are i32 arguments
        crate::host::dim(NAME, "batch · queries · q_heads · head_dim", q_len, 0)?;
        crate::host::dim(NAME, "cache rows · kv_heads · head_dim", kv_len, 0)?;
        crate::host::dim(
            NAME,
            "batch · queries · q_heads · splits",
            rows * MAX_SPLITS,
            0,
        )?;
        let table_len = match self.layout {
            KvLayout::Contiguous { .. } => 0,
            KvLayout::Paged { .. } => e(self.batch, pages_per_seq)?,
        };
        crate::host::dim(NAME, "batch · pages_per_seq", table_len, 0)?;
        Ok(Checked {
            hq,
            hkv,
            d,
            page_size: crate::host::dim(NAME, "page_size", page_size, 1)?,
            pages_per_seq: crate::host::dim(NAME, "pages_per_seq", pages_per_seq, 1)?,
            rows_cache: crate::host::dim(NAME, "cache rows", rows_cache, 1)?,
            rows,
            table_len,
        })
    }

    /// The decode kernel's configuration for this call, over a cache of `C`.
    pub fn kernel<T: Element, C: Element>(&self) -> DecodeAttention<T, C> {
        let page = match self.layout {
            KvLayout::Contiguous { .. } => None,
            KvLayout::Paged { page_size, .. } => Some(page_size as i32),
        };
        let group = (self.heads.q_heads / self.heads.kv_heads.max(1)) as i32;
        DecodeAttention::new(self.heads.head_dim as i32, self.queries as i32, group, page)
    }

    /// The rows of the partial slots of a launch in `splits` splits: 64 per block.
    pub fn partial_rows<T>(&self, splits: usize) -> usize {
        let blocks = self.batch * self.heads.kv_heads * self.steps_kernel().row_blocks() as usize;
        blocks * splits * BLOCK_ROWS as usize
    }

    /// The kernel's steps and blocks of rows, which no element type changes.
    fn steps_kernel(&self) -> DecodeAttention<half::f16> {
        self.kernel::<half::f16, half::f16>()
    }

    /// The split of the contexts on `multiprocessors`: `(splits, keys per split)`. The
    /// blocks of one split are `batch · kv_heads · row blocks`; each split adds as many, each
    /// with a share of the keys. The count minimizes waves × (steps per split + 2), the 2 a
    /// block's fixed cost (Q, the first stages' latency, the stores) in steps: at batch 1 the
    /// context is split until the machine is full, at large batches not at all.
    pub fn split<T>(&self, multiprocessors: usize) -> (usize, usize) {
        self.split_in(multiprocessors)
    }

    /// [`Decode::split`] over `slots` blocks running at once: the multiprocessors times the
    /// blocks each keeps busy. A cache of the attention's type is read at the memory's speed
    /// by one block a multiprocessor (a second, from a split, measured 2-4% slower at 16 ×
    /// 4096 on an H100), so its slots are the multiprocessors; a converted cache's steps are
    /// longer and two blocks a multiprocessor overlap them (e4m3 at 16 × 4096: 82.4 µs in
    /// two splits against 122.4 in one; docs/perf.md), so its slots are twice as many.
    pub(crate) fn split_in(&self, slots: usize) -> (usize, usize) {
        let kernel = self.steps_kernel();
        let bkv = kernel.block_kv as usize;
        let blocks = self.batch * self.heads.kv_heads * kernel.row_blocks() as usize;
        let steps = self.max_context.div_ceil(bkv).max(1);
        let most = MAX_SPLITS.min(steps.div_ceil(2)).max(1);
        let cost = |s: usize| (blocks * s).div_ceil(slots.max(1)) * (steps.div_ceil(s) + 2);
        let splits = (1..=most).min_by_key(|&s| (cost(s), s)).unwrap_or(1);
        let split_keys = steps.div_ceil(splits) * bkv;
        (steps.div_ceil(split_keys / bkv), split_keys)
    }
}

#[cfg(test)]
mod tests {
    use super::{Decode, KvLayout};
    use crate::attention::Heads;

    fn call(batch: usize, q_heads: usize, max_context: usize) -> Decode {
        Decode {
            batch,
            queries: 1,
            heads: Heads::new(q_heads, 8, 128),
            layout: KvLayout::Contiguous {
                capacity: max_context,
            },
            max_context,
        }
    }

    /// The split the host API picks on 132 multiprocessors: a batch of one split until the
    /// machine is full (16 ways of 8 heads: 128 blocks, the fastest measured), the measured
    /// batches from 16 up not at all; the keys per split a whole number of steps.
    #[test]
    fn the_split_fills_the_machine_at_small_batches_only() {
        assert_eq!(call(1, 32, 8192).split::<u8>(132), (16, 512));
        assert_eq!(call(16, 32, 4096).split::<u8>(132), (1, 4096));
        assert_eq!(call(64, 32, 4096).split::<u8>(132), (1, 4096));
        // a context shorter than a step: one split
        assert_eq!(call(1, 32, 10).split::<u8>(132), (1, 64));
    }

    /// Two blocks a multiprocessor (a converted cache): 16 × 4096 in two splits (256 blocks
    /// run at once), 64 × 4096 still in one, a batch of one split as far as it goes.
    #[test]
    fn two_blocks_a_multiprocessor_split_the_middle_batches_in_two() {
        assert_eq!(call(16, 32, 4096).split_in(264), (2, 2048));
        assert_eq!(call(64, 32, 4096).split_in(264), (1, 4096));
        assert_eq!(call(1, 32, 8192).split_in(264), (32, 256));
    }

    /// At most 64 query heads share a key-value head (the block's rows): 64 is taken, 72 is
    /// refused with the rule.
    #[test]
    fn a_group_of_64_query_heads_is_the_most() {
        assert!(call(1, 64 * 8, 100).checked(0.1).is_ok());
        let Err(e) = call(1, 72 * 8, 100).checked(0.1) else {
            panic!("a group of 72 taken")
        };
        let e = e.to_string();
        assert!(e.contains("at most 64 query heads"), "{e}");
    }
}
