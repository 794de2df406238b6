//! The new tokens' keys and values written into the cache in place, before the decode step
//! reads them: token `t` of sequence `b` goes to position `lens[b] − queries + t` (the
//! context lengths count the new tokens), a contiguous cache's row `b · capacity + position`
//! or a paged cache's row in the page its block table names.
//!
//! One block per new token copies its `kv_heads · d` elements of K and of V, 1024 at a time,
//! from the new rows to the cache row.

use super::super::forward::AttentionElement;
use std::marker::PhantomData;
use tilus::prelude::*;

/// Elements each block copies at a time (8 per thread).
const CHUNK: i32 = 1024;

/// The arguments: `batch`, `hkv · d` (the elements of a row), `page_size` (a contiguous
/// cache: its capacity), `pages_per_seq` (the table's row length), `rows_cache`, the new
/// keys and values `[batch · queries, hkv · d]`, `table [batch, pages_per_seq]`, `lens
/// [batch]`, the caches `k` and `v` `[rows_cache, hkv · d]`.
pub type AppendArgs<T> = (
    i32,
    i32,
    i32,
    i32,
    i32,
    Ptr<T>,
    Ptr<T>,
    Ptr<i32>,
    Ptr<i32>,
    PtrMut<T>,
    PtrMut<T>,
);

/// The append for elements of type `T`. Fields are compile-time hyperparameters.
pub struct DecodeAppend<T> {
    /// New tokens per sequence.
    pub queries: i32,
    /// A paged cache (the block table read); a contiguous one otherwise.
    pub paged: bool,
    _t: PhantomData<fn() -> T>,
}

impl<T> DecodeAppend<T> {
    /// The append of `queries` tokens per sequence into a paged cache or a contiguous one.
    pub fn new(queries: i32, paged: bool) -> DecodeAppend<T> {
        DecodeAppend {
            queries,
            paged,
            _t: PhantomData,
        }
    }
}

impl<T: AttentionElement> Script for DecodeAppend<T> {
    type Args = AppendArgs<T>;

    fn arg_names() -> &'static [&'static str] {
        &[
            "batch",
            "width",
            "page_size",
            "pages_per_seq",
            "rows_cache",
            "k_new",
            "v_new",
            "table",
            "lens",
            "k",
            "v",
        ]
    }

    fn name(&self) -> String {
        format!("decode_append_{}", T::NAME)
    }

    fn body(&self, k: &mut Kernel, args: Handles<Self::Args>) {
        let (batch, width, page_size, pages_per_seq, rows_cache) =
            (args.0, args.1, args.2, args.3, args.4);
        let nq = self.queries;
        k.blocks([Scalar::from(batch) * nq]);
        k.warps(4);
        let rows_new = Scalar::from(batch) * nq;
        let k_new = k.global_view::<T>(args.5, [rows_new.clone(), width.into()]);
        let v_new = k.global_view::<T>(args.6, [rows_new, width.into()]);
        let table = k.global_view::<i32>(args.7, [Scalar::from(batch), pages_per_seq.into()]);
        let lens = k.global_view::<i32>(args.8, [batch]);
        let kc = k.global_view::<T>(args.9, [Scalar::from(rows_cache), width.into()]);
        let vc = k.global_view::<T>(args.10, [Scalar::from(rows_cache), width.into()]);

        let row = k.let_i32(k.block_idx().x);
        let b = k.let_i32(row / nq);
        let len = k.load_global_scalar(&lens, [b]);
        let pos = k.let_i32(len - nq + row % nq);
        let at = if self.paged {
            let page = k.load_global_scalar(&table, (b, pos / page_size));
            k.let_i32(page * page_size + pos % page_size)
        } else {
            k.let_i32(b * page_size + pos)
        };
        k.for_range(0, cdiv(width, CHUNK), 1, |k, c| {
            let col = k.let_i32(c * CHUNK);
            for (src, dst) in [(&k_new, &kc), (&v_new, &vc)] {
                let x = k.load_global(src, (row, col), [1, CHUNK]);
                k.store_global(dst, &x, (at, col));
            }
        });
    }
}

impl<T> Clone for DecodeAppend<T> {
    fn clone(&self) -> Self {
        DecodeAppend {
            _t: PhantomData,
            ..*self
        }
    }
}

impl<T> PartialEq for DecodeAppend<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.queries, self.paged) == (o.queries, o.paged)
    }
}

impl<T> Eq for DecodeAppend<T> {}

impl<T> std::hash::Hash for DecodeAppend<T> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (self.queries, self.paged).hash(h);
    }
}

impl<T> std::fmt::Debug for DecodeAppend<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodeAppend")
            .field("queries", &self.queries)
            .field("paged", &self.paged)
            .finish()
    }
}
