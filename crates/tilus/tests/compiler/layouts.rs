//! The layout algebra against hand-written formulas: register layouts (primitives,
//! composition, permutation, validity), the mma.sync plan over warps, and the TMA swizzles of
//! shared layouts.

use proptest::prelude::*;
use std::collections::HashSet;
use tilus::layout::{MmaPlan, RegisterLayout, SharedLayout, Swizzle};

// ------------------------------------------------------------------------------------------
// Strategies.
// ------------------------------------------------------------------------------------------

/// A primitive register layout, kept as data so that failures print readably.
#[derive(Clone, Debug)]
enum Prim {
    Spatial(Vec<i64>),
    ColumnSpatial(Vec<i64>),
    Local(Vec<i64>),
    ColumnLocal(Vec<i64>),
    Replicate(usize, i64),
}

impl Prim {
    fn layout(&self) -> RegisterLayout {
        match self {
            Prim::Spatial(s) => RegisterLayout::spatial(s),
            Prim::ColumnSpatial(s) => RegisterLayout::column_spatial(s),
            Prim::Local(s) => RegisterLayout::local(s),
            Prim::ColumnLocal(s) => RegisterLayout::column_local(s),
            Prim::Replicate(rank, n) => RegisterLayout::replicate(*rank, *n),
        }
    }
}

/// Largest extent of one primitive's dimension, per rank (keeps products small).
fn max_dim(rank: usize) -> i64 {
    match rank {
        1 => 6,
        2 => 4,
        _ => 3,
    }
}

fn prim(rank: usize) -> impl Strategy<Value = Prim> {
    let dims = prop::collection::vec(1..=max_dim(rank), rank);
    prop_oneof![
        dims.clone().prop_map(Prim::Spatial),
        dims.clone().prop_map(Prim::ColumnSpatial),
        dims.clone().prop_map(Prim::Local),
        dims.prop_map(Prim::ColumnLocal),
        (1i64..=3).prop_map(move |n| Prim::Replicate(rank, n)),
    ]
}

/// Rank and `n` primitives of that rank.
fn prims(n: usize) -> impl Strategy<Value = (usize, Vec<Prim>)> {
    (1usize..=3).prop_flat_map(move |r| (Just(r), prop::collection::vec(prim(r), n)))
}

/// Rank and 1 to 3 primitives of that rank.
fn chain() -> impl Strategy<Value = (usize, Vec<Prim>)> {
    (1usize..=3).prop_flat_map(|r| (Just(r), prop::collection::vec(prim(r), 1..=3)))
}

fn compose_all(ps: &[Prim]) -> RegisterLayout {
    ps.iter()
        .map(Prim::layout)
        .reduce(|a, b| a.compose(&b))
        .expect("at least one primitive")
}

/// Every (thread, local) coordinate of a layout.
fn table(l: &RegisterLayout) -> Vec<Vec<i64>> {
    let mut out = vec![];
    for t in 0..l.num_threads() {
        for i in 0..l.local_size() {
            out.push(l.coords(t, i));
        }
    }
    out
}

/// Row-major unravel of `index` over `shape`.
fn unravel(mut index: i64, shape: &[i64]) -> Vec<i64> {
    let mut out = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        out[d] = index % shape[d];
        index /= shape[d];
    }
    out
}

/// Column-major unravel of `index` over `shape`.
fn unravel_col(mut index: i64, shape: &[i64]) -> Vec<i64> {
    let mut out = vec![0; shape.len()];
    for d in 0..shape.len() {
        out[d] = index % shape[d];
        index /= shape[d];
    }
    out
}

// ------------------------------------------------------------------------------------------
// Register layouts: the primitives by hand.
// ------------------------------------------------------------------------------------------

#[test]
fn primitives_match_their_definitions() {
    let shape = [3i64, 4, 2];
    let n: i64 = shape.iter().product();

    let s = RegisterLayout::spatial(&shape);
    assert_eq!((s.num_threads(), s.local_size()), (n, 1));
    let cs = RegisterLayout::column_spatial(&shape);
    assert_eq!((cs.num_threads(), cs.local_size()), (n, 1));
    let l = RegisterLayout::local(&shape);
    assert_eq!((l.num_threads(), l.local_size()), (1, n));
    let cl = RegisterLayout::column_local(&shape);
    assert_eq!((cl.num_threads(), cl.local_size()), (1, n));
    for i in 0..n {
        assert_eq!(s.coords(i, 0), unravel(i, &shape), "spatial thread {i}");
        assert_eq!(
            cs.coords(i, 0),
            unravel_col(i, &shape),
            "column_spatial {i}"
        );
        assert_eq!(l.coords(0, i), unravel(i, &shape), "local {i}");
        assert_eq!(cl.coords(0, i), unravel_col(i, &shape), "column_local {i}");
    }

    let r = RegisterLayout::replicate(2, 5);
    assert_eq!(r.shape(), &[1, 1]);
    assert_eq!((r.num_threads(), r.local_size()), (5, 1));
    for t in 0..5 {
        assert_eq!(r.coords(t, 0), vec![0, 0]);
    }
    for l in [s, cs, l, cl, r] {
        assert!(l.is_valid(), "{l}");
    }
}

#[test]
fn thread_and_local_parts_add_up() {
    let l = RegisterLayout::local(&[2, 1])
        .compose(&RegisterLayout::spatial(&[8, 4]))
        .compose(&RegisterLayout::local(&[1, 2]));
    for t in 0..l.num_threads() {
        for i in 0..l.local_size() {
            let sum: Vec<i64> = l
                .thread_coords(t)
                .iter()
                .zip(l.local_coords(i))
                .map(|(a, b)| a + b)
                .collect();
            assert_eq!(l.coords(t, i), sum);
            // the terms evaluate to the same coordinates
            let tt: Vec<i64> = l
                .thread_terms()
                .iter()
                .map(|ts| ts.iter().map(|x| x.eval(t)).sum())
                .collect();
            let lt: Vec<i64> = l
                .local_terms()
                .iter()
                .map(|ts| ts.iter().map(|x| x.eval(i)).sum())
                .collect();
            assert_eq!(tt, l.thread_coords(t));
            assert_eq!(lt, l.local_coords(i));
        }
    }
}

#[test]
fn same_mapping_sees_through_factorizations() {
    let a = RegisterLayout::local(&[2, 2]).compose(&RegisterLayout::local(&[1, 2]));
    assert!(a.same_mapping(&RegisterLayout::local(&[2, 4])));
    let b = RegisterLayout::spatial(&[4]).compose(&RegisterLayout::spatial(&[2]));
    assert!(b.same_mapping(&RegisterLayout::spatial(&[8])));
    // different mappings of the same shape and counts
    assert!(
        !RegisterLayout::spatial(&[2, 4]).same_mapping(&RegisterLayout::column_spatial(&[2, 4]))
    );
    assert!(!RegisterLayout::local(&[2, 4]).same_mapping(&RegisterLayout::column_local(&[2, 4])));
}

// ------------------------------------------------------------------------------------------
// Register layouts: properties of composition and permutation.
// ------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn composition_is_associative((_, ps) in prims(3)) {
        let (a, b, c) = (ps[0].layout(), ps[1].layout(), ps[2].layout());
        let left = a.compose(&b).compose(&c);
        let right = a.compose(&b.compose(&c));
        prop_assert_eq!(&left, &right);
        prop_assert!(left.same_mapping(&right), "{} vs {}", left, right);
        prop_assert_eq!(table(&left), table(&right));
    }

    #[test]
    fn counts_and_shapes_multiply_under_composition((_, ps) in prims(2)) {
        let (a, b) = (ps[0].layout(), ps[1].layout());
        let c = a.compose(&b);
        prop_assert_eq!(c.num_threads(), a.num_threads() * b.num_threads());
        prop_assert_eq!(c.local_size(), a.local_size() * b.local_size());
        let shape: Vec<i64> = a.shape().iter().zip(b.shape()).map(|(x, y)| x * y).collect();
        prop_assert_eq!(c.shape(), &shape[..]);
        prop_assert_eq!(c.rank(), a.rank());
    }

    #[test]
    fn compositions_of_primitives_are_valid((_, ps) in chain()) {
        let l = compose_all(&ps);
        prop_assert!(l.is_valid(), "{}", l);
        // every element is held, by `replication` threads in total
        let elems: i64 = l.shape().iter().product();
        prop_assert_eq!((l.num_threads() * l.local_size()) % elems, 0);
        let held: HashSet<Vec<i64>> = table(&l).into_iter().collect();
        prop_assert_eq!(held.len() as i64, elems);
    }

    /// `coords(C = A ∘ B)(t, l) = coords(A)(t / |B|_t, l / |B|_l) * shape(B)
    ///                          + coords(B)(t % |B|_t, l % |B|_l)`.
    #[test]
    fn composition_follows_the_kronecker_formula((_, ps) in prims(2)) {
        let (a, b) = (ps[0].layout(), ps[1].layout());
        let c = a.compose(&b);
        let (bt, bl) = (b.num_threads(), b.local_size());
        for t in 0..c.num_threads() {
            for l in 0..c.local_size() {
                let outer = a.coords(t / bt, l / bl);
                let inner = b.coords(t % bt, l % bl);
                let want: Vec<i64> = outer
                    .iter()
                    .zip(&inner)
                    .zip(b.shape())
                    .map(|((o, i), s)| o * s + i)
                    .collect();
                prop_assert_eq!(c.coords(t, l), want, "thread {} local {} of {}", t, l, c);
            }
        }
    }

    #[test]
    fn permuting_twice_with_a_transposition_is_the_identity(
        (rank, ps) in chain(),
        i in 0usize..3,
        j in 0usize..3,
    ) {
        let l = compose_all(&ps);
        let (i, j) = (i % rank, j % rank);
        let mut perm: Vec<usize> = (0..rank).collect();
        perm.swap(i, j);
        let p = l.permute(&perm);
        prop_assert_eq!(&p.permute(&perm), &l);
        prop_assert!(p.permute(&perm).same_mapping(&l));
        // the permuted layout's coordinates are the permuted coordinates
        let shape: Vec<i64> = perm.iter().map(|&d| l.shape()[d]).collect();
        prop_assert_eq!(p.shape(), &shape[..]);
        prop_assert_eq!((p.num_threads(), p.local_size()), (l.num_threads(), l.local_size()));
        for t in 0..l.num_threads() {
            for x in 0..l.local_size() {
                let c = l.coords(t, x);
                let want: Vec<i64> = perm.iter().map(|&d| c[d]).collect();
                prop_assert_eq!(p.coords(t, x), want);
            }
        }
        prop_assert!(p.is_valid(), "{}", p);
    }
}

// ------------------------------------------------------------------------------------------
// The mma.sync plan.
// ------------------------------------------------------------------------------------------

/// PTX ISA, mma.m16n8k16 with 16-bit A/B: element `i` (0..8) of lane `lane` in A.
fn ptx_a(lane: i64, i: i64) -> [i64; 2] {
    let (group, tig) = (lane / 4, lane % 4);
    [group + 8 * ((i / 2) % 2), tig * 2 + (i % 2) + 8 * (i / 4)]
}

/// Element `i` (0..4) of lane `lane` in B (`[k, n]`).
fn ptx_b(lane: i64, i: i64) -> [i64; 2] {
    let (group, tig) = (lane / 4, lane % 4);
    [tig * 2 + (i % 2) + 8 * (i / 2), group]
}

/// Element `i` (0..4) of lane `lane` in C/D (f32).
fn ptx_c(lane: i64, i: i64) -> [i64; 2] {
    let (group, tig) = (lane / 4, lane % 4);
    [group + 8 * (i / 2), tig * 2 + (i % 2)]
}

/// A product shape that can be tiled: warps, warps along M and the repeats.
fn tileable() -> impl Strategy<Value = (i64, i64, i64, i64, i64)> {
    prop::sample::select(vec![1i64, 2, 4, 8]).prop_flat_map(|warps| {
        let divisors: Vec<i64> = (1..=warps).filter(|d| warps % d == 0).collect();
        (
            Just(warps),
            prop::sample::select(divisors),
            1i64..=2,
            1i64..=2,
            1i64..=3,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn mma_plans_cover_their_tiles((warps, wm, rm, rn, rk) in tileable()) {
        let wn = warps / wm;
        let (m, n, k) = (16 * wm * rm, 8 * wn * rn, 16 * rk);
        let p = MmaPlan::choose(m, n, k, warps);
        prop_assert!(p.is_some(), "{}x{}x{} over {} warps", m, n, k, warps);
        let p = p.unwrap();
        prop_assert_eq!(p.warps_m * p.warps_n, warps);
        prop_assert_eq!(m, 16 * p.warps_m * p.rep_m);
        prop_assert_eq!(n, 8 * p.warps_n * p.rep_n);
        prop_assert_eq!(k, 16 * p.rep_k);
        // no other warp grid reads fewer operand rows and columns per warp
        for other_m in (1..=warps).filter(|d| warps % d == 0) {
            let other_n = warps / other_m;
            if m % (16 * other_m) == 0 && n % (8 * other_n) == 0 {
                prop_assert!(m / p.warps_m + n / p.warps_n <= m / other_m + n / other_n);
            }
        }

        let (a, b, c) = (p.a_layout(), p.b_layout(), p.c_layout());
        prop_assert_eq!(a.shape(), &[m, k][..]);
        prop_assert_eq!(b.shape(), &[k, n][..]);
        prop_assert_eq!(c.shape(), &[m, n][..]);
        for l in [&a, &b, &c] {
            prop_assert_eq!(l.num_threads(), 32 * warps);
            prop_assert!(l.is_valid(), "{}", l);
        }
        prop_assert_eq!(a.local_size(), p.rep_m * p.rep_k * 8);
        prop_assert_eq!(b.local_size(), p.rep_k * p.rep_n * 4);
        prop_assert_eq!(c.local_size(), p.rep_m * p.rep_n * 4);

        // Each warp (wm, wn) = (w / warps_n, w % warps_n) holds, for mma tile (mi, ni, ki), the
        // PTX fragments of rows (mi * warps_m + wm) * 16 and columns (ni * warps_n + wn) * 8.
        for w in 0..warps {
            let (wi, wj) = (w / p.warps_n, w % p.warps_n);
            for lane in 0..32 {
                let t = w * 32 + lane;
                for mi in 0..p.rep_m {
                    let row0 = (mi * p.warps_m + wi) * 16;
                    for ki in 0..p.rep_k {
                        for e in 0..8 {
                            let f = ptx_a(lane, e);
                            prop_assert_eq!(
                                a.coords(t, p.a_local(mi, ki) + e),
                                vec![row0 + f[0], ki * 16 + f[1]]
                            );
                        }
                    }
                    for ni in 0..p.rep_n {
                        let col0 = (ni * p.warps_n + wj) * 8;
                        for e in 0..4 {
                            let f = ptx_c(lane, e);
                            prop_assert_eq!(
                                c.coords(t, p.c_local(mi, ni) + e),
                                vec![row0 + f[0], col0 + f[1]]
                            );
                        }
                    }
                }
                for ki in 0..p.rep_k {
                    for ni in 0..p.rep_n {
                        let col0 = (ni * p.warps_n + wj) * 8;
                        for e in 0..4 {
                            let f = ptx_b(lane, e);
                            prop_assert_eq!(
                                b.coords(t, p.b_local(ki, ni) + e),
                                vec![ki * 16 + f[0], col0 + f[1]]
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn mma_plans_reject_untileable_shapes(
        warps in prop::sample::select(vec![1i64, 2, 4, 8]),
        m in 1i64..=64,
        n in 1i64..=64,
        k in 1i64..=64,
    ) {
        let p = MmaPlan::choose(m, n, k, warps);
        let possible = k % 16 == 0
            && (1..=warps).any(|wm| warps % wm == 0 && m % (16 * wm) == 0 && n % (8 * (warps / wm)) == 0);
        prop_assert_eq!(p.is_some(), possible, "{}x{}x{} over {} warps: {:?}", m, n, k, warps, p);
    }
}

#[test]
fn mma_plan_of_the_seed_tile() {
    let p = MmaPlan::choose(64, 128, 64, 4).unwrap();
    assert_eq!((p.warps_m, p.warps_n), (2, 2));
    assert_eq!((p.rep_m, p.rep_n, p.rep_k), (2, 8, 4));
    // the 128x256 accumulator over 4 warps: 256 f32 a thread
    let p = MmaPlan::choose(128, 256, 64, 4).unwrap();
    assert_eq!(p.c_layout().local_size(), 256);
}

// ------------------------------------------------------------------------------------------
// Shared layouts: the TMA swizzles.
// ------------------------------------------------------------------------------------------

/// The TMA swizzle, written from the row's point of view: a tile whose rows are exactly the
/// swizzle span `S` (32, 64 or 128 bytes) has `128 / S` rows per 128-byte line, and the
/// 16-byte chunk `c` of row `r` lands at chunk `c ^ ((r / (128 / S)) % (S / 16))` of its row.
fn tma_reference_row(span: u32, r: u32, col_byte: u32) -> u32 {
    let rows_per_line = 128 / span;
    let chunks = span / 16;
    let (chunk, within) = (col_byte / 16, col_byte % 16);
    r * span + ((chunk ^ ((r / rows_per_line) % chunks)) * 16) + within
}

/// The TMA swizzle, written on addresses (CUTLASS's `Swizzle<B, 4, 3>`): the `B` bits of the
/// 16-byte chunk index (bits 4..4+B) are XORed with the `B` bits above the 128-byte line
/// (bits 7..7+B), where `2^B = S / 16`.
fn tma_reference_addr(span: u32, offset: u32) -> u32 {
    let bits = (span / 16).trailing_zeros();
    let mask = (1u32 << bits) - 1;
    let line = (offset >> 7) & mask;
    offset ^ (line << 4)
}

fn span_of(s: Swizzle) -> Option<u32> {
    match s {
        Swizzle::None => None,
        Swizzle::B32 => Some(32),
        Swizzle::B64 => Some(64),
        Swizzle::B128 => Some(128),
    }
}

#[test]
fn the_widest_swizzle_whose_span_a_row_fills() {
    for (bytes, s) in [
        (128, Swizzle::B128),
        (64, Swizzle::B64),
        (32, Swizzle::B32),
        (16, Swizzle::None),
        (48, Swizzle::None),
        (96, Swizzle::None),
        (256, Swizzle::None),
    ] {
        assert_eq!(Swizzle::widest_for_row(bytes), s, "{bytes}-byte rows");
    }
    for s in [Swizzle::B32, Swizzle::B64, Swizzle::B128] {
        let span = span_of(s).unwrap();
        assert_eq!(s.span_bytes(), span);
        assert_eq!(s.mask() + 1, span / 16);
        // the pattern repeats every 8 lines of the span
        assert_eq!(s.alignment(), span * 8);
    }
    assert_eq!(Swizzle::B128.alignment(), 1024);
}

#[test]
fn swizzle_128_by_hand() {
    // f16 [8, 64]: element (r, c) is in chunk c / 8 of row r, which moves to chunk (c / 8) ^ r
    let l = SharedLayout::swizzled_for_tma(&[8, 64], 2);
    assert_eq!(l.swizzle, Swizzle::B128);
    for r in 0..8u32 {
        for c in 0..64u32 {
            let want = r * 128 + ((c / 8) ^ r) * 16 + (c % 8) * 2;
            assert_eq!(l.byte_offset(&[r as i64, c as i64]), want, "({r}, {c})");
        }
    }
    // f32 [4, 8] with 32-byte rows: rows 0..3 use chunk XOR 0, rows 4..7 XOR 1
    let l = SharedLayout::swizzled_for_tma(&[8, 8], 4);
    assert_eq!(l.swizzle, Swizzle::B32);
    assert_eq!(l.byte_offset(&[3, 4]), 3 * 32 + 16);
    assert_eq!(l.byte_offset(&[4, 0]), 4 * 32 + 16);
    assert_eq!(l.byte_offset(&[4, 4]), 4 * 32);
    // row-major without a swizzle
    let l = SharedLayout::row_major(&[3, 5], 4);
    assert_eq!(l.byte_offset(&[2, 3]), (2 * 5 + 3) * 4);
    assert_eq!(l.nbytes(), 60);
}

/// A tile for TMA: element size and row length in elements, and a row count.
fn tma_tile() -> impl Strategy<Value = (u32, i64, i64)> {
    (
        prop::sample::select(vec![2u32, 4]),
        prop::sample::select(vec![16u32, 32, 48, 64, 128, 256]),
        1i64..=40,
    )
        .prop_map(|(eb, row_bytes, rows)| (eb, (row_bytes / eb) as i64, rows))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn swizzles_are_bijections_within_the_tile((eb, cols, rows) in tma_tile()) {
        let l = SharedLayout::swizzled_for_tma(&[rows, cols], eb);
        prop_assert_eq!(l.swizzle, Swizzle::widest_for_row(cols as u32 * eb));
        prop_assert_eq!(l.nbytes(), rows as u32 * cols as u32 * eb);
        let mut seen = HashSet::new();
        for r in 0..rows {
            for c in 0..cols {
                let off = l.byte_offset(&[r, c]);
                prop_assert!(off + eb <= l.nbytes(), "({}, {}) at {} of {}", r, c, off, l.nbytes());
                prop_assert_eq!(off % eb, 0);
                prop_assert!(seen.insert(off), "({}, {}) collides at {}", r, c, off);
            }
        }
    }

    #[test]
    fn swizzles_agree_with_the_tma_reference(
        (eb, cols, rows) in tma_tile(),
        picks in prop::collection::vec((0i64..1 << 20, 0i64..1 << 20), 16),
    ) {
        let l = SharedLayout::swizzled_for_tma(&[rows, cols], eb);
        for (pr, pc) in picks {
            let (r, c) = (pr % rows, pc % cols);
            let off = l.byte_offset(&[r, c]);
            let linear = (r * cols + c) as u32 * eb;
            match span_of(l.swizzle) {
                None => prop_assert_eq!(off, linear),
                Some(span) => {
                    prop_assert_eq!(span, cols as u32 * eb);
                    prop_assert_eq!(off, tma_reference_row(span, r as u32, c as u32 * eb));
                    prop_assert_eq!(off, tma_reference_addr(span, linear));
                }
            }
        }
    }

    #[test]
    fn swizzles_permute_within_their_aligned_span(
        s in prop::sample::select(vec![Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128]),
        offset in 0u32..1 << 24,
    ) {
        let y = s.apply(offset);
        if let Some(span) = span_of(s) {
            prop_assert_eq!(y, tma_reference_addr(span, offset));
        } else {
            prop_assert_eq!(y, offset);
        }
        // an involution that keeps the element's byte within its 16-byte chunk and its
        // aligned span, and that repeats with the swizzle's alignment
        prop_assert_eq!(s.apply(y), offset);
        prop_assert_eq!(y % 16, offset % 16);
        prop_assert_eq!(y / s.alignment(), offset / s.alignment());
        prop_assert_eq!(s.apply(offset + s.alignment()), y + s.alignment());
    }
}

// ------------------------------------------------------------------------------------------
// Replicated copies and the layouts of tiles that move to and from global memory.
// ------------------------------------------------------------------------------------------

/// Exactly one thread holds the first copy of each element, whatever the replication and the
/// group size.
#[test]
fn every_element_has_one_first_copy() {
    let cases = [
        RegisterLayout::replicate(1, 4).compose(&RegisterLayout::spatial(&[32])),
        RegisterLayout::spatial(&[4]).compose(&RegisterLayout::replicate(1, 8)),
        RegisterLayout::spatial(&[2, 1])
            .compose(&RegisterLayout::replicate(2, 2))
            .compose(&RegisterLayout::spatial(&[8, 4]))
            .compose(&RegisterLayout::local(&[2, 2])),
        RegisterLayout::spatial(&[8, 16]),
    ];
    for l in cases {
        for group in [l.num_threads(), 2 * l.num_threads()] {
            let mut seen = HashSet::new();
            for t in 0..group {
                if !l.is_first_copy(t) {
                    continue;
                }
                for i in 0..l.local_size() {
                    assert!(
                        seen.insert(l.coords(t, i)),
                        "{l}: {:?} twice",
                        l.coords(t, i)
                    );
                }
            }
            assert_eq!(seen.len() as i64, l.shape().iter().product::<i64>(), "{l}");
        }
    }
}

/// The layouts of global tiles cover every element once, use every thread where the tile has
/// enough vectors, and give each thread up to 16 contiguous bytes along the innermost
/// dimension, consecutive threads on consecutive vectors.
#[test]
fn vectorized_layouts_are_valid_and_coalesced() {
    use tilus::passes::infer_layout::vectorized_layout;
    for (shape, threads, eb, v) in [
        (vec![16, 32], 128, 4, 4),
        (vec![64, 128], 128, 2, 8),
        (vec![16, 16], 128, 2, 2),
        (vec![32], 128, 4, 1),
        (vec![8, 6], 32, 4, 1),
        (vec![4, 8, 64], 128, 4, 4),
    ] {
        let l = vectorized_layout(&shape, threads, eb);
        assert!(l.is_valid(), "{l}");
        assert_eq!(l.num_threads(), threads, "{l}");
        let last = shape.len() - 1;
        for i in 0..v {
            assert_eq!(l.coords(0, i)[last], i, "{l}");
        }
        if shape.iter().product::<i64>() >= threads * v && v > 1 {
            assert_eq!(l.coords(1, 0)[last] - l.coords(0, 0)[last], v, "{l}");
        }
    }
}
