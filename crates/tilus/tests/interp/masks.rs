//! Index tiles and masks: `k.arange` in an mma accumulator's fragment layout (full-shape and
//! broadcast forms), and causal, length-masked row sums and maxima over tiles whose rows stay
//! in lanes, cross warps, or replicate, against the host on random scores.

use crate::common::inputs::{f16s, random_f32};
use crate::common::interp::run;
use crate::common::scripts::masks::{CausalRows, IndexOnAccumulator};

#[test]
fn an_index_grid_lands_on_every_element_of_an_accumulator() {
    for n8 in [1, 2, 4] {
        for broadcast in [false, true] {
            let s = IndexOnAccumulator { n8, broadcast };
            let n = 8 * n8 as usize;
            let (a, b) = (f16s(16 * 16), f16s(n * 16));
            let mut out = vec![f32::NAN; 16 * n];
            run(&s, (&a[..], &b[..], &mut out[..])).unwrap();
            let want = s.expected(&a, &b);
            for (i, (g, w)) in out.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-3 * w.abs().max(1.0),
                    "{s:?} [{i}]: {g} vs {w}"
                );
            }
        }
    }
}

/// `(q0, k0, len)`: the diagonal inside the tile, a tile wholly visible, wholly in the
/// future (every row empty), and a length that cuts the keys.
const MASKS: [(i32, i32, i32); 4] = [
    (0, 0, 1 << 20),
    (500, 0, 1 << 20),
    (0, 300, 1 << 20),
    (7, 3, 20),
];

#[test]
fn causal_and_length_masks_count_exactly_the_visible_keys() {
    for (rows, cols, warps) in crate::common::scripts::masks::ROW_SHAPES {
        let s = CausalRows { rows, cols, warps };
        let m = 3 * rows as usize - 1;
        let x = random_f32(m * cols as usize, (rows * 31 + cols) as u64);
        for mask in MASKS {
            let (q0, k0, len) = mask;
            let mut out = vec![f32::NAN; 2 * m];
            run(&s, (m as i32, q0, k0, len, &x[..], &mut out[..])).unwrap();
            let want = s.expected(&x, m, mask);
            for (i, (g, w)) in out.iter().zip(&want).enumerate() {
                let close = g == w || (g - w).abs() <= 1e-5 * w.abs().max(1.0);
                assert!(close, "{s:?} {mask:?} [{i}]: {g} vs {w}");
            }
        }
    }
}

/// Rows with repeated extremes: values quantized to 1/8 in `[-1, 1)`.
fn with_ties(len: usize, seed: u64) -> Vec<f32> {
    random_f32(len, seed)
        .iter()
        .map(|v| (v * 8.0).floor() / 8.0)
        .collect()
}

#[test]
fn argmax_and_argmin_give_each_rows_extreme_and_its_first_index() {
    use crate::common::scripts::masks::ArgExtremes;
    for (rows, cols, warps) in crate::common::scripts::masks::ROW_SHAPES {
        let s = ArgExtremes { rows, cols, warps };
        let m = 3 * rows as usize - 1;
        let x = with_ties(m * cols as usize, (rows * 7 + cols) as u64);
        let (mut vals, mut at) = (vec![f32::NAN; 2 * m], vec![-1i32; 2 * m]);
        run(&s, (m as i32, &x[..], &mut vals[..], &mut at[..])).unwrap();
        let (want_vals, want_at) = s.expected(&x, m);
        assert_eq!(vals, want_vals, "{s:?}");
        assert_eq!(at, want_at, "{s:?}");
    }
}

/// Philox random numbers at each element's row-major offset, in several layouts: the host's
/// bits exactly (the normal values too: the interpreter computes them as the host does).
#[test]
fn random_numbers_are_the_generators_at_each_elements_offset() {
    use crate::common::scripts::masks::RandomTiles;
    for (rows, cols, warps) in [(16, 64, 4), (64, 32, 4), (8, 128, 2), (4, 8, 4)] {
        let s = RandomTiles { rows, cols, warps };
        let m = 2 * rows as usize + 3;
        for seed in [0, 7, -123_456_789] {
            let n = m * cols as usize;
            let (mut u, mut z, mut i) = (vec![f32::NAN; n], vec![f32::NAN; n], vec![0u32; n]);
            run(&s, (seed, m as i32, &mut u[..], &mut z[..], &mut i[..])).unwrap();
            let (wu, wz, wi) = s.expected(seed, m);
            assert_eq!(i, wi, "{s:?} seed {seed}");
            assert_eq!(u, wu, "{s:?} seed {seed}");
            assert_eq!(z, wz, "{s:?} seed {seed}");
        }
    }
}

/// Running sums, products, maxima and minima along rows and columns, in registers where each
/// thread holds whole lines and through shared memory where lines span threads: the host's
/// bits (each line combined in order).
#[test]
fn scans_combine_each_line_in_order() {
    use crate::common::scripts::masks::Scans;
    let (mut in_registers, mut through_shared) = (0, 0);
    // rows of 4 f32 are one 16-byte vector per thread: whole lines along dimension 1
    for (rows, cols, warps) in Scans::SHAPES {
        for dim in [0, 1] {
            let s = Scans {
                rows,
                cols,
                warps,
                dim,
            };
            let traced = tilus::trace(&s, &[]).unwrap();
            let ir = tilus::ir::print_program(&tilus::passes::compile_program(traced).unwrap().0);
            in_registers += ir.matches(") in registers").count();
            through_shared += ir.matches(") through shared").count();
            let m = 2 * rows as usize + 3;
            let n = m * cols as usize;
            // products of values near 1 stay finite
            let x: Vec<f32> = random_f32(n, (rows + cols) as u64)
                .iter()
                .map(|v| 1.0 + v / 8.0)
                .collect();
            let xi: Vec<i32> = (0..n)
                .map(|i| (i as i32).wrapping_mul(2_654_435_761u32 as i32))
                .collect();
            let (mut out, mut outi) = (vec![f32::NAN; 5 * n], vec![0i32; n]);
            run(&s, (m as i32, &x[..], &xi[..], &mut out[..], &mut outi[..])).unwrap();
            let (want, wanti) = s.expected(&x, &xi, m);
            assert_eq!(outi, wanti, "{s:?}");
            for (j, (g, w)) in out.iter().zip(&want).enumerate() {
                assert_eq!(
                    g.to_bits(),
                    w.to_bits(),
                    "{s:?} result {} [{}]: {g} vs {w}",
                    j / n,
                    j % n
                );
            }
        }
    }
    assert!(
        in_registers > 0 && through_shared > 0,
        "{in_registers} {through_shared}"
    );
}

/// Bit views: f32 as u32, an integer step on the bits viewed back, f16 bits as bf16.
#[test]
fn views_keep_the_bits() {
    use crate::common::scripts::masks::BitViews;
    for (rows, cols, warps) in crate::common::scripts::masks::VIEW_SHAPES {
        let s = BitViews { rows, cols, warps };
        let m = 2 * rows as usize + 1;
        let n = m * cols as usize;
        let x = random_f32(n, 3);
        let h: Vec<half::f16> = random_f32(n, 4)
            .iter()
            .map(|&v| half::f16::from_f32(v * 100.0))
            .collect();
        let (mut bits, mut next) = (vec![0u32; n], vec![f32::NAN; n]);
        let mut hb = vec![half::bf16::ZERO; n];
        run(
            &s,
            (
                m as i32,
                &x[..],
                &h[..],
                &mut bits[..],
                &mut next[..],
                &mut hb[..],
            ),
        )
        .unwrap();
        let (wb, wn, wh) = BitViews::expected(&x, &h);
        assert_eq!(bits, wb, "{s:?}");
        assert_eq!(
            next.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            wn.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{s:?}"
        );
        assert_eq!(
            hb.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            wh.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{s:?}"
        );
    }
}

/// `annotate_layout` fixes a tile's layout: a whole row per thread keeps a row scan in
/// registers, where the loads' own layout sends it through shared memory; both give the host's
/// running sums.
#[test]
fn an_annotated_layout_keeps_a_row_scan_in_registers() {
    use crate::common::scripts::masks::AnnotatedScan;
    let x = random_f32(128 * 8, 11);
    let mut want = x.clone();
    for row in want.chunks_mut(8) {
        for j in 1..8 {
            row[j] += row[j - 1];
        }
    }
    for (annotate, how) in [(false, ") through shared"), (true, ") in registers")] {
        let s = AnnotatedScan { annotate };
        let traced = tilus::trace(&s, &[]).unwrap();
        let ir = tilus::ir::print_program(&tilus::passes::compile_program(traced).unwrap().0);
        assert!(ir.contains(how), "{s:?}: {ir}");
        assert_eq!(annotate, ir.contains("annotate_layout("), "{ir}");
        let mut out = vec![f32::NAN; 128 * 8];
        run(&s, (&x[..], &mut out[..])).unwrap();
        assert_eq!(out, want, "{s:?}");
    }
}

/// An assumed multiple is checked with the arguments before anything runs: a copy whose
/// stride breaks the promise is refused, naming the argument and the line; one that keeps it
/// copies exactly.
#[test]
fn a_broken_assumption_is_refused_before_anything_runs() {
    use crate::common::scripts::masks::AssumedRows;
    for n in [128usize, 132, 8] {
        let x = random_f32(40 * n, n as u64);
        let mut out = vec![f32::NAN; 40 * n];
        run(
            &AssumedRows { assume: true },
            (40, n as i32, &x[..], &mut out[..]),
        )
        .unwrap();
        assert_eq!(out, x, "n = {n}");
    }
    let x = random_f32(40 * 130, 1);
    let mut out = vec![f32::NAN; 40 * 130];
    let e = run(
        &AssumedRows { assume: true },
        (40, 130, &x[..], &mut out[..]),
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("`n` is a multiple of 4") && msg.contains("it is 130"),
        "{msg}"
    );
    assert!(msg.contains("masks.rs"), "{msg}");
    assert!(out.iter().all(|v| v.is_nan()), "nothing ran");
    // without the promise, any stride
    run(
        &AssumedRows { assume: false },
        (40, 130, &x[..], &mut out[..]),
    )
    .unwrap();
    assert_eq!(out, x);
}

#[test]
fn a_masked_store_writes_exactly_the_kept_elements() {
    use crate::common::inputs::{fresh_seed, random_f16};
    use crate::common::scripts::masks::MaskedStore;
    let cases = MaskedStore::CASES
        .into_iter()
        .flat_map(|c| [(c, false), (c, true)]);
    for (((rows, cols, warps), (m, n), (shift, len)), rows_only) in cases {
        // rows of whole 16-byte vectors: vectorized where the mask keeps a vector
        let aligned = n % 8 == 0;
        let s = MaskedStore {
            rows,
            cols,
            warps,
            aligned,
            rows_only,
        };
        let x = random_f16(m * n, fresh_seed());
        let before = random_f16(m * n, fresh_seed());
        let mut out = before.clone();
        let args = (m as i32, n as i32, shift, len, &x[..], &mut out[..]);
        run(&s, args).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        let want = s.expected(&x, &before, n, (shift, len));
        let bits = |v: &[half::f16]| v.iter().map(|h| h.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&out),
            bits(&want),
            "{s:?} {m}x{n} shift {shift} len {len}"
        );
    }
}

/// A mask of whole rows over a tile as wide as its view: rows past `len` (and past the
/// matrix) keep what the host put there.
#[test]
fn a_store_masked_by_rows_writes_exactly_the_kept_rows() {
    use crate::common::inputs::{fresh_seed, random_f16};
    use crate::common::scripts::masks::RowMaskedStore;
    for ((rows, warps), m, len, cols) in RowMaskedStore::CASES {
        let s = RowMaskedStore { rows, warps, cols };
        let n = cols as usize;
        let x = random_f16(m * n, fresh_seed());
        let before = random_f16(m * n, fresh_seed());
        let mut out = before.clone();
        run(&s, (m as i32, len, &x[..], &mut out[..])).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        let want = s.expected(&x, &before, len as usize);
        let bits = |v: &[half::f16]| v.iter().map(|h| h.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&out), bits(&want), "{s:?} {m} rows, len {len}");
    }
}
