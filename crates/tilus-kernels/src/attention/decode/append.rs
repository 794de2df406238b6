//! The new tokens' keys and values written into the cache in place, before the decode step
//! reads them: token `t` of sequence `b` goes to position `lens[b] − queries + t` (the
//! context lengths count the new tokens), a contiguous cache's row `b · capacity + position`
//! or a paged cache's row in the page its block table names.
//!
//! One block per new token copies its `kv_heads · d` elements of K and of V, 1024 at a time,
//! from the new rows to the cache row; into a cache of another type, a head at a time,
//! converted (divided by the head's scale first, for a cache of scaled codes).

use super::super::forward::AttentionElement;
use super::element::CacheElement;
use std::marker::PhantomData;
use tilus::prelude::*;

/// Elements each block copies at a time (8 per thread).
const CHUNK: i32 = 1024;

/// The arguments: `batch`, `hkv · d` (the elements of a row), `page_size` (a contiguous
/// cache: its capacity), `pages_per_seq` (the table's row length), `rows_cache`, the new
/// keys and values `[batch · queries, hkv · d]`, `table [batch, pages_per_seq]`, `lens
/// [batch]`, `scales [2, hkv]` (the keys' and values' scales of a cache of scaled codes; any
/// buffer otherwise), the caches `k` and `v` `[rows_cache, hkv · d]`.
pub type AppendArgs<T, C = T> = (
    i32,
    i32,
    i32,
    i32,
    i32,
    Ptr<T>,
    Ptr<T>,
    Ptr<i32>,
    Ptr<i32>,
    Ptr<f32>,
    PtrMut<C>,
    PtrMut<C>,
);

/// The append of new keys and values of type `T` into a cache of `C`. Fields are
/// compile-time hyperparameters.
pub struct DecodeAppend<T, C = T> {
    /// New tokens per sequence.
    pub queries: i32,
    /// A paged cache (the block table read); a contiguous one otherwise.
    pub paged: bool,
    /// The head dimension (a cache of another type is written a head at a time).
    pub head_dim: i32,
    _t: PhantomData<fn() -> (T, C)>,
}

impl<T, C> DecodeAppend<T, C> {
    /// The append of `queries` tokens per sequence of heads of `head_dim` into a paged cache
    /// or a contiguous one.
    pub fn new(queries: i32, paged: bool, head_dim: i32) -> DecodeAppend<T, C> {
        DecodeAppend {
            queries,
            paged,
            head_dim,
            _t: PhantomData,
        }
    }

    fn key(&self) -> (i32, bool, i32) {
        (self.queries, self.paged, self.head_dim)
    }
}

impl<T: AttentionElement, C: CacheElement> Script for DecodeAppend<T, C> {
    type Args = AppendArgs<T, C>;

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
            "scales",
            "k",
            "v",
        ]
    }

    fn name(&self) -> String {
        if <C as Element>::DTYPE == <T as Element>::DTYPE {
            format!("decode_append_{}", T::NAME)
        } else {
            format!("decode_append_{}_{}_cache", T::NAME, C::NAME)
        }
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
        let kc = k.global_view::<C>(args.10, [Scalar::from(rows_cache), width.into()]);
        let vc = k.global_view::<C>(args.11, [Scalar::from(rows_cache), width.into()]);

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
        if let (Some(kc), Some(vc)) = (kc.as_type::<T>(), vc.as_type::<T>()) {
            k.for_range(0, cdiv(width, CHUNK), 1, |k, c| {
                let col = k.let_i32(c * CHUNK);
                for (src, dst) in [(&k_new, &kc), (&v_new, &vc)] {
                    let x = k.load_global(src, (row, col), [1, CHUNK]);
                    k.store_global(dst, &x, (at, col));
                }
            });
            return;
        }
        let d = self.head_dim;
        let hkv = k.let_i32(width / d);
        let scales = k.global_view::<f32>(args.9, [Scalar::from(width) / d * 2]);
        k.for_range(0, hkv, 1, |k, h| {
            let col = k.let_i32(h * d);
            for (src, dst, which) in [(&k_new, &kc, 0), (&v_new, &vc, 1)] {
                let x = k.load_global(src, (row, col), [1, d]);
                let x = k.cast::<f32>(&x);
                let x = if C::SCALED {
                    let scale = k.load_global_scalar(&scales, [hkv * which + h]);
                    k.compute(x / scale)
                } else {
                    x
                };
                let x = k.cast::<C>(&x);
                k.store_global(dst, &x, (at, col));
            }
        });
    }
}

impl<T, C> Clone for DecodeAppend<T, C> {
    fn clone(&self) -> Self {
        DecodeAppend {
            _t: PhantomData,
            ..*self
        }
    }
}

impl<T, C> PartialEq for DecodeAppend<T, C> {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}

impl<T, C> Eq for DecodeAppend<T, C> {}

impl<T, C> std::hash::Hash for DecodeAppend<T, C> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.key().hash(h);
    }
}

impl<T, C> std::fmt::Debug for DecodeAppend<T, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodeAppend")
            .field("queries", &self.queries)
            .field("paged", &self.paged)
            .field("head_dim", &self.head_dim)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::DecodeAppend;
    use half::f16;
    use std::collections::HashSet;
    use tilus::lowp::F8E4M3;

    /// The host API keeps one compiled append per configuration: configurations that differ
    /// in any hyperparameter are distinct keys, equal ones the same.
    #[test]
    fn appends_that_differ_are_kept_apart() {
        let kept: HashSet<DecodeAppend<f16, F8E4M3>> = [
            DecodeAppend::new(1, false, 128),
            DecodeAppend::new(2, false, 128),
            DecodeAppend::new(1, true, 128),
            DecodeAppend::new(1, false, 64),
            DecodeAppend::new(1, false, 128),
        ]
        .into_iter()
        .collect();
        assert_eq!(kept.len(), 4);
        assert!(kept.contains(&DecodeAppend::new(1, true, 128)));
        assert!(!kept.contains(&DecodeAppend::new(1, true, 256)));
    }

    /// The kernel's name says the cache's type where it is not the tokens' (profiles and
    /// launch errors name the kernel so).
    #[test]
    fn the_name_says_the_caches_type() {
        use tilus::Script;
        assert_eq!(
            DecodeAppend::<f16, f16>::new(1, false, 128).name(),
            "decode_append_f16"
        );
        assert_eq!(
            DecodeAppend::<f16, F8E4M3>::new(1, true, 128).name(),
            "decode_append_f16_e4m3_cache"
        );
    }

    /// The generated code names the kernel's parameters as the arguments' documentation does
    /// (a profile or a launch error names them so).
    #[test]
    fn the_parameters_carry_their_names() {
        let src = tilus::emit(&DecodeAppend::<f16, F8E4M3>::new(1, true, 128), &[]).unwrap();
        let at = src.find("__global__").expect("a kernel");
        let head = &src[at..at + src[at..].find('{').expect("a body")];
        for name in ["width", "k_new", "v_new", "table", "lens", "scales"] {
            assert!(head.contains(name), "{name} in {head}");
        }
    }
}
