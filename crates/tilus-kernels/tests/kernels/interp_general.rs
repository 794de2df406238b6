//! The general GEMM on the CPU interpreter against an f64 reference: A and B in every order
//! (C row- and column-major), leading dimensions wider than the rows, batches with an
//! operand shared by every product (batch stride 0), `alpha` and `beta` (C read only where
//! beta is not 0), edges in M and N; and its refusals, before anything runs.

use half::{bf16, f16};
use tilus_kernels::gemm::general::{GemmGeneral, GemmProblem, Layout, MatmulGeneral, Order};
use tilus_kernels::gemm::persistent::MatmulPersistent;
use tilus_kernels::gemm::Matmuls;
use tilus_kernels::{Error, Operand};

/// `len` values in `[-1, 1)` on a grid of 1/64 (exact in f16 and bf16), from `seed`.
pub(crate) fn values(len: usize, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) % 128) as f64 / 64.0 - 1.0
        })
        .collect()
}

/// The f64 result of problem `p` on `a`, `b` and C's old values `c0`, at every element C's
/// layout addresses (the rest keep `c0`), and which elements those are.
pub(crate) fn reference(
    p: &GemmProblem,
    a: &[f64],
    b: &[f64],
    c0: &[f64],
) -> (Vec<f64>, Vec<bool>) {
    let mut c = c0.to_vec();
    let mut is_c = vec![false; c0.len()];
    let at = |l: &Layout, bt: usize, i: usize, j: usize| bt * l.batch_stride + l.offset(i, j);
    for bt in 0..p.batch {
        for i in 0..p.m {
            for j in 0..p.n {
                let dot: f64 = (0..p.k)
                    .map(|x| a[at(&p.a, bt, i, x)] * b[at(&p.b, bt, x, j)])
                    .sum();
                let o = at(&p.c, bt, i, j);
                let old = if p.beta == 0.0 {
                    0.0
                } else {
                    c0[o] * p.beta as f64
                };
                c[o] = p.alpha as f64 * dot + old;
                is_c[o] = true;
            }
        }
    }
    (c, is_c)
}

/// The rounding of an output of `T` relative to its value: 2⁻¹⁰ for f16, 2⁻⁷ for bf16.
pub(crate) fn eps<T: Operand>() -> f64 {
    if T::NAME == "bf16" {
        1.0 / 128.0
    } else {
        1.0 / 1024.0
    }
}

/// Inputs of problem `p` from `seed`: A, B and C's old values (NaN where beta is 0: they
/// must not be read), as f64 and in `T`.
pub(crate) struct Inputs<T> {
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    pub c0: Vec<f64>,
    pub ta: Vec<T>,
    pub tb: Vec<T>,
    pub tc: Vec<T>,
}

pub(crate) fn inputs<T: Operand>(p: &GemmProblem, seed: u64) -> Inputs<T> {
    let (la, lb, lc) = p.lengths().unwrap();
    let (a, b) = (values(la, seed), values(lb, seed + 1));
    let c0: Vec<f64> = values(lc, seed + 2)
        .into_iter()
        .map(|v| if p.beta == 0.0 { f64::NAN } else { v })
        .collect();
    let to = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
    Inputs {
        ta: to(&a),
        tb: to(&b),
        tc: to(&c0),
        a,
        b,
        c0,
    }
}

/// The elements of `got` (C's buffer after the run) that are wrong: C's elements beyond
/// `T`'s rounding of the f64 result, and any other element that changed.
pub(crate) fn wrong<T: Operand>(p: &GemmProblem, x: &Inputs<T>, got: &[T]) -> Vec<String> {
    let (want, is_c) = reference(p, &x.a, &x.b, &x.c0);
    let mut bad = vec![];
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let g = g.to_f64();
        let ok = if is_c[i] {
            (g - w).abs() <= eps::<T>() * w.abs() + 1e-3
        } else {
            // not an element of C: untouched
            g == T::from_f64(*w).to_f64() || (g.is_nan() && w.is_nan())
        };
        if !ok {
            bad.push(format!("element {i}: {g}, want {w}"));
        }
    }
    bad
}

/// Runs `p` on the interpreter in `T` with `config` and checks every element of C's buffer.
fn check<T: Matmuls>(config: &MatmulGeneral, p: &GemmProblem, seed: u64) {
    check_with::<T>(config, p, seed, true)
}

/// [`check`], operands TMA cannot read staged or (`staging` false) loaded by the kernel's
/// threads.
fn check_with<T: Matmuls>(config: &MatmulGeneral, p: &GemmProblem, seed: u64, staging: bool) {
    let mut x = inputs::<T>(p, seed);
    let mut c = std::mem::take(&mut x.tc);
    if staging {
        GemmGeneral::<T>::interpret(config, p, &x.ta, &x.tb, &mut c).unwrap();
    } else {
        GemmGeneral::<T>::interpret_without_staging(config, p, &x.ta, &x.tb, &mut c).unwrap();
    }
    let bad = wrong(p, &x, &c);
    assert!(
        bad.is_empty(),
        "{p:?} ({config:?}): {:?}",
        &bad[..bad.len().min(4)]
    );
}

/// A 128 × 128 cooperative tile (two consumer warp groups of 64 rows).
fn tile() -> MatmulGeneral {
    MatmulGeneral {
        tile: MatmulPersistent {
            block_m: 128,
            block_n: 128,
            stages: 3,
            ..MatmulPersistent::default()
        },
    }
}

/// Row- or column-major storage of an `r × c` matrix, `pad` elements wider than it needs.
pub(crate) fn stored(order: Order, (r, c): (usize, usize), pad: usize) -> Layout {
    match order {
        Order::RowMajor => Layout::row_major(c + pad),
        Order::ColMajor => Layout::col_major(r + pad),
    }
}

#[test]
fn every_order_of_a_and_b_with_either_c() {
    tilus_bench::test_cache!();
    let (m, n, k) = (136, 144, 96);
    let orders = [Order::RowMajor, Order::ColMajor];
    let mut seed = 200;
    for oa in orders {
        for ob in orders {
            for oc in orders {
                let p = GemmProblem::new(1, (m, n, k))
                    .a(stored(oa, (m, k), 8))
                    .b(stored(ob, (k, n), 16))
                    .c(stored(oc, (m, n), 8));
                check::<f16>(&tile(), &p, seed);
                seed += 3;
            }
        }
    }
}

#[test]
fn batches_share_an_operand_of_stride_zero_and_scale() {
    tilus_bench::test_cache!();
    let (m, n, k) = (72, 136, 64);
    let a = stored(Order::ColMajor, (m, k), 8);
    let a = a.batched(a.ld * k + 64);
    // one B for every product
    let b = stored(Order::RowMajor, (k, n), 8);
    let c = Layout::row_major(n + 8).batched((n + 8) * m + 8);
    let p = GemmProblem::new(3, (m, n, k)).a(a).b(b).c(c);
    check::<f16>(&tile(), &p, 300);
    check::<f16>(&tile(), &p.scales(0.5, -1.5), 310);
    // ping-pong warp groups, bf16, alpha only
    let pp = MatmulGeneral {
        tile: MatmulPersistent {
            ping_pong: 1,
            ..tile().tile
        },
    };
    check::<bf16>(&pp, &p.scales(2.0, 0.0), 320);
    // C stored from registers
    let regs = MatmulGeneral {
        tile: MatmulPersistent {
            tma_store: 0,
            ..tile().tile
        },
    };
    check::<bf16>(&regs, &p.scales(1.0, 1.0), 330);
}

/// Leading dimensions and batch strides whose rows do not start at multiples of 16 bytes
/// (odd K, odd M, N): those operands are staged into workspaces TMA can read, or loaded by
/// the kernel's threads; C is stored from registers; every order, and an aligned operand
/// beside one that is not.
#[test]
fn operands_without_16_byte_rows_are_staged_or_loaded_by_threads() {
    tilus_bench::test_cache!();
    let orders = [Order::RowMajor, Order::ColMajor];
    let mut seed = 400;
    for (m, n, k) in [(131, 137, 95), (64, 200, 129)] {
        for oa in orders {
            for ob in orders {
                let p = GemmProblem::new(2, (m, n, k))
                    .a(stored(oa, (m, k), 1).batched(m * k + 2 * k + 3))
                    .b(stored(ob, (k, n), 0).batched(0))
                    .c(Layout::row_major(n + 3).batched((n + 3) * m + 5));
                check_with::<f16>(&tile(), &p, seed, seed % 2 == 0);
                seed += 3;
            }
        }
    }
    // A aligned (TMA), B not, ping-pong, bf16, scaled: staged, and loaded
    let (m, n, k) = (136, 144, 99);
    let p = GemmProblem::new(1, (m, n, k))
        .a(Layout::row_major(104))
        .b(Layout::col_major(99))
        .scales(0.5, 1.0);
    let pp = MatmulGeneral {
        tile: MatmulPersistent {
            ping_pong: 1,
            ..tile().tile
        },
    };
    check_with::<bf16>(&pp, &p, 450, true);
    check_with::<bf16>(&pp, &p, 460, false);
}

#[test]
fn problems_that_do_not_fit_are_refused_before_anything_runs() {
    let shape = |e: Error| match e {
        Error::Shape { message, .. } => message,
        e => panic!("not a shape error: {e}"),
    };
    let (a, b) = (vec![f16::ONE; 64 * 80], vec![f16::ONE; 64 * 80]);
    let mut c = vec![f16::NAN; 64 * 64];
    let run = |p: &GemmProblem, c: &mut [f16]| {
        GemmGeneral::<f16>::interpret(&tile(), p, &a, &b, c).map_err(shape)
    };
    let p = GemmProblem::new(1, (64, 64, 64));
    let cases = [
        (GemmProblem::new(1, (64, 64, 0)), "k = 0"),
        (
            p.a(Layout::row_major(32)),
            "leading dimension 32 is shorter",
        ),
        (p.c(Layout::row_major(68)), "needs at least"),
        (
            GemmProblem::new(2, (32, 32, 32)).c(Layout::row_major(32).batched(16)),
            "overwrite each other",
        ),
    ];
    for (q, why) in cases {
        let e = run(&q, &mut c).unwrap_err();
        assert!(e.contains(why), "{q:?}: {e}");
    }
    assert!(c.iter().all(|v| v.is_nan()), "nothing ran");
    run(&p, &mut c).unwrap();
    assert!(c.iter().all(|&v| v == f16::from_f32(64.0)), "{:?}", &c[..4]);
}

/// C is stored by TMA only where its leading dimension, batch stride and rows are whole
/// 16-byte granules: a TMA store writes a row's last granule whole, past the view's last
/// column (the interpreter does not model it; the GPU test and the layouts soak do).
#[test]
fn c_is_stored_by_tma_only_in_whole_granules() {
    use tilus_kernels::gemm::general::{specialization, Form};
    let form = |p: &GemmProblem| {
        let [_, _, bits] = specialization(p, 2, true).unwrap();
        Form::from_bits(bits as i32)
    };
    let p = GemmProblem::new(2, (241, 184, 252));
    assert!(form(&p).c_tma);
    // rows of 180 elements (360 bytes) 184 apart: from registers
    let q = GemmProblem::new(2, (241, 180, 252)).c(Layout::row_major(184).batched(184 * 241));
    assert!(!form(&q).c_tma);
    // a column-major C of 180 rows is a row-major Cᵀ of rows of 180 elements
    let r = GemmProblem::new(1, (180, 64, 64)).c(Layout::col_major(184));
    assert!(!form(&r).c_tma);
    assert!(form(&r.c(Layout::col_major(184)).scales(1.0, 0.0)).a_tma);
}

/// The lengths a problem's buffers need (the checks before any launch, on the GPU or the
/// interpreter): C's products may follow each other with no gap, `(rows - 1) · ld + cols`
/// apart, and no closer.
#[test]
fn interp_checks_accept_products_of_c_without_a_gap_and_refuse_overlapping_ones() {
    let one_c = 240 * 184 + 180;
    let p = |stride| GemmProblem::new(2, (241, 180, 252)).c(Layout::row_major(184).batched(stride));
    let (_, _, lc) = p(one_c)
        .lengths()
        .expect("products side by side are a problem");
    assert_eq!(lc, 2 * one_c);
    let err = p(one_c - 1).lengths().unwrap_err();
    assert!(err.contains("shorter than one product's"), "{err}");
}

/// Every configuration of the space comes back from its binding as itself (the autotuner's
/// cache and `--set` go through it), and the binding of a configuration is its own.
#[test]
fn interp_every_configuration_round_trips_through_its_binding() {
    use tilus::tune::Tunable;
    let space = MatmulGeneral::space();
    let mut seen = 0;
    for b in space.bindings() {
        let c = MatmulGeneral::from_binding(&b).unwrap();
        assert_eq!(c.to_binding().as_ref(), Some(&b), "{c:?}");
        seen += 1;
    }
    assert!(seen > 1);
}
