//! The host's decode attention in f64: the referee of the decode kernels' tests and
//! benchmarks, reading the cache through the same layout and block table.

use super::element::CacheElement;
use super::op::Cache;
use super::problem::{Decode, KvLayout};

/// The cache row of position `p` of sequence `b`.
fn cache_row(call: &Decode, table: Option<&[i32]>, b: usize, p: usize) -> usize {
    match call.layout {
        KvLayout::Contiguous { capacity } => b * capacity + p,
        KvLayout::Paged {
            page_size,
            pages_per_seq,
            ..
        } => {
            let table = table.expect("a paged cache has a block table");
            table[b * pages_per_seq + p / page_size] as usize * page_size + p % page_size
        }
    }
}

/// One row's exact output and natural log-sum-exp: new token `t` of sequence `b` at query
/// head `h`, over the keys up to its position (a cache of scaled codes read as each code's
/// value times its head's scale, exactly).
pub fn decode_row<T: CacheElement, C: CacheElement>(
    call: &Decode,
    scale: f64,
    q: &[T],
    cache: &Cache<'_, [C], [i32]>,
    (b, t, h): (usize, usize, usize),
) -> (Vec<f64>, f64) {
    let (hq, hkv, d) = (call.heads.q_heads, call.heads.kv_heads, call.heads.head_dim);
    let hk = h / (hq / hkv);
    let ctx = cache.lens[b] as usize;
    let last = ctx - call.queries + t;
    let qi = &q[((b * call.queries + t) * hq + h) * d..][..d];
    let (ks, vs) = match cache.scales {
        Some(s) => (s[hk] as f64, s[hkv + hk] as f64),
        None => (1.0, 1.0),
    };
    let keys = (0..=last).map(|p| {
        let at = (cache_row(call, cache.table, b, p) * hkv + hk) * d;
        (&cache.k[at..][..d], &cache.v[at..][..d])
    });
    super::super::reference::softmax_row(qi, keys, scale * ks, vs)
}

/// The exact decode step: `o` (`[batch, queries, q_heads, head_dim]`) and each row's
/// log-sum-exp (`[batch, queries, q_heads]`), in f64. Panics on a call the host API would
/// refuse (it is a test's tool).
pub fn decode<T: CacheElement, C: CacheElement>(
    call: &Decode,
    scale: f64,
    q: &[T],
    cache: &Cache<'_, [C], [i32]>,
) -> (Vec<f64>, Vec<f64>) {
    let (hq, d) = (call.heads.q_heads, call.heads.head_dim);
    let rows = call.batch * call.queries * hq;
    let mut o = vec![0.0; rows * d];
    let mut lse = vec![0.0; rows];
    for b in 0..call.batch {
        for t in 0..call.queries {
            for h in 0..hq {
                let r = (b * call.queries + t) * hq + h;
                let (out, l) = decode_row(call, scale, q, cache, (b, t, h));
                o[r * d..][..d].copy_from_slice(&out);
                lse[r] = l;
            }
        }
    }
    (o, lse)
}
