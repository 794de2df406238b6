//! WGMMA: the verifier's rules (warp-group scope, K-major operands, shapes and dtypes, the
//! accumulator read before the wait that covers it), NVRTC compiles of both operand sources,
//! and on the GPU both variants against a CPU reference.

use half::f16;
use tilus::prelude::*;
use tilus::runtime::Device;
use tilus::Error;

/// `C[64·bm, N] = A · Bᵀ` for one block: A and B in shared memory (or A in registers), one
/// K step of `k` (16, 32 or 64), C stored as f32.
#[derive(Clone, Debug)]
struct OneTile<C = f32> {
    m: i32,
    n: i32,
    k: i32,
    a_in_registers: bool,
    warps: u32,
    b_transposed: bool,
    read_early: bool,
    acc: std::marker::PhantomData<C>,
}

// by hand: the element marker carries no data (and f16 has no Hash)
impl<C> std::hash::Hash for OneTile<C> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (
            self.m,
            self.n,
            self.k,
            self.a_in_registers,
            self.warps,
            self.b_transposed,
            self.read_early,
        )
            .hash(h);
        std::any::type_name::<C>().hash(h);
    }
}

impl<C> OneTile<C> {
    fn new(m: i32, n: i32, k: i32) -> OneTile<C> {
        OneTile {
            m,
            n,
            k,
            a_in_registers: false,
            warps: 4,
            b_transposed: true,
            read_early: false,
            acc: std::marker::PhantomData,
        }
    }
}

impl<C: tilus::lang::Element + std::fmt::Debug> Script for OneTile<C> {
    type Args = (Ptr<f16>, Ptr<f16>, PtrMut<C>);
    fn body(&self, k: &mut Kernel, (a_ptr, b_ptr, c_ptr): Handles<Self::Args>) {
        let s = self;
        k.warps(s.warps);
        let ga = k.global_view::<f16>(a_ptr, [s.m, s.k]);
        let gb = k.global_view::<f16>(b_ptr, [s.n, s.k]);
        let sa = k.shared_tensor::<f16>([s.m, s.k]);
        let sb = k.shared_tensor::<f16>([s.n, s.k]);
        // f32 accumulation, or f16 accumulation when C is f16
        let acc = k.register_tensor::<C>([s.m, s.n], 0.0);
        let bar = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            k.mbarrier()
                .arrive_and_expect_tx(bar[0], sa.nbytes() + sb.nbytes());
            k.tma().global_to_shared(&ga, &sa, [0, 0], bar[0]);
            k.tma().global_to_shared(&gb, &sb, [0, 0], bar[0]);
        });
        k.mbarrier().wait(bar[0], 0u32);
        let b = if s.b_transposed { sb.transpose() } else { sb };
        k.wgmma().fence();
        if s.a_in_registers {
            let a = k.load_shared(&sa);
            k.wgmma().mma(&a, &b, &acc);
        } else {
            k.wgmma().mma(&sa, &b, &acc);
        }
        k.wgmma().commit_group();
        let gc = k.global_view::<C>(c_ptr, [s.m, s.n]);
        if s.read_early {
            k.store_global(&gc, &acc, [0, 0]);
        }
        k.wgmma().wait_group(0);
        k.store_global(&gc, &acc, [0, 0]);
    }
}

fn diagnostics<C: tilus::lang::Element + std::fmt::Debug>(
    s: &OneTile<C>,
) -> Vec<tilus::Diagnostic> {
    let p = tilus::trace(s, &[]).unwrap();
    match tilus::passes::compile_program(p) {
        Err(Error::Script(d)) => d,
        Err(e) => panic!("{e}"),
        Ok(_) => vec![],
    }
}

fn has(d: &[tilus::Diagnostic], phrase: &str) -> bool {
    d.iter()
        .any(|d| d.message.contains(phrase) && d.loc.file.ends_with("wgmma.rs"))
}

#[test]
fn f16_accumulation_is_accepted_with_f16_inputs() {
    assert!(diagnostics(&OneTile::<f16>::new(64, 128, 64)).is_empty());
}

#[test]
fn a_valid_tile_checks_clean() {
    assert!(diagnostics(&OneTile::<f32>::new(64, 128, 64)).is_empty());
    assert!(diagnostics(&OneTile {
        a_in_registers: true,
        ..OneTile::<f32>::new(128, 64, 32)
    })
    .is_empty());
}

#[test]
fn wgmma_outside_a_warp_group_is_an_error() {
    let d = diagnostics(&OneTile {
        warps: 8,
        ..OneTile::<f32>::new(64, 128, 64)
    });
    assert!(has(&d, "runs on a warp group"), "{d:#?}");
}

#[test]
fn b_must_be_k_major() {
    let d = diagnostics(&OneTile {
        b_transposed: false,
        n: 64,
        ..OneTile::<f32>::new(64, 64, 64)
    });
    assert!(has(&d, "operand b must be K-major"), "{d:#?}");
}

#[test]
fn reading_the_accumulator_before_its_wait_is_an_error() {
    let d = diagnostics(&OneTile {
        read_early: true,
        ..OneTile::<f32>::new(64, 128, 64)
    });
    assert!(has(&d, "is used while the wgmma at"), "{d:#?}");
    assert_eq!(d.len(), 1, "only the early read: {d:#?}");
}

#[test]
fn shapes_the_instruction_cannot_cover_are_errors() {
    // M = 32 is not a multiple of 64
    let d = diagnostics(&OneTile::<f32>::new(32, 128, 64));
    assert!(has(&d, "must be a positive multiple of 64"), "{d:#?}");
    // 256-byte rows fit no swizzle
    let d = diagnostics(&OneTile::<f32>::new(64, 64, 128));
    assert!(
        d.iter()
            .any(|d| d.message.contains("K-major rows of 32, 64 or 128 bytes")),
        "{d:#?}"
    );
}

fn compiles_to<C: tilus::lang::Element + std::fmt::Debug>(s: &OneTile<C>, needle: &str) {
    let c = tilus::build(s, &[]).unwrap_or_else(|e| panic!("{s:?}: {e}"));
    assert_eq!(c.report.spill_stores, 0, "{s:?}");
    assert!(c.source.contains(needle), "{s:?}: no `{needle}`");
}

#[test]
fn both_operand_sources_and_both_accumulators_compile_to_wgmma() {
    for (m, n, k) in [(64, 128, 64), (128, 128, 32), (64, 256, 32), (64, 8, 16)] {
        compiles_to(
            &OneTile::<f32>::new(m, n, k),
            &format!("tilus_wgmma_m64n{n}k16_f16_ss("),
        );
        let rs = OneTile::<f32> {
            a_in_registers: true,
            ..OneTile::<f32>::new(m, n, k)
        };
        compiles_to(&rs, &format!("tilus_wgmma_m64n{n}k16_f16_rs("));
        compiles_to(
            &OneTile::<f16>::new(m, n, k),
            &format!("m64n{n}k16.f16.f16.f16"),
        );
    }
}

fn random(len: usize, seed: u64) -> Vec<f16> {
    let mut x = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            f16::from_f64(((x >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.25)
        })
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn both_operand_sources_and_both_accumulators_compute_the_product() {
    let device = Device::open(0).expect("a Hopper GPU");
    let stream = device.stream();
    for (i, (m, n, k)) in [(64, 128, 64), (64, 256, 32), (64, 8, 16), (128, 64, 64)]
        .into_iter()
        .enumerate()
    {
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        let a = random(mu * ku, 2 * i as u64 + 1);
        let b = random(nu * ku, 2 * i as u64 + 2);
        let want = |r: usize, col: usize| -> f64 {
            (0..ku)
                .map(|x| a[r * ku + x].to_f64() * b[col * ku + x].to_f64())
                .sum()
        };
        let da = stream.clone_htod(&a).unwrap();
        let db = stream.clone_htod(&b).unwrap();
        for a_in_registers in [false, true] {
            let s = OneTile::<f32> {
                a_in_registers,
                ..OneTile::<f32>::new(m, n, k)
            };
            let mut dc = stream.clone_htod(&vec![f32::NAN; mu * nu]).unwrap();
            tilus::Jit::new(s.clone(), &device)
                .launch(stream, (&da, &db, &mut dc))
                .unwrap();
            let c = stream.clone_dtoh(&dc).unwrap();
            for r in 0..mu {
                for col in 0..nu {
                    let (got, w) = (c[r * nu + col] as f64, want(r, col));
                    assert!(
                        (got - w).abs() <= 1e-4 + 1e-4 * w.abs(),
                        "{s:?} ({r},{col}): {got} vs {w}"
                    );
                }
            }
        }
        // f16 accumulation rounds every partial sum to 11 bits
        let s = OneTile::<f16>::new(m, n, k);
        let mut dc = stream.clone_htod(&vec![f16::NAN; mu * nu]).unwrap();
        tilus::Jit::new(s.clone(), &device)
            .launch(stream, (&da, &db, &mut dc))
            .unwrap();
        let c = stream.clone_dtoh(&dc).unwrap();
        for r in 0..mu {
            for col in 0..nu {
                let (got, w) = (c[r * nu + col].to_f64(), want(r, col));
                assert!(
                    (got - w).abs() <= 2e-3 + 2e-3 * w.abs(),
                    "{s:?} ({r},{col}): {got} vs {w}"
                );
            }
        }
    }
}
