//! The first kernels against their host references: on the interpreter (CI), through NVRTC
//! (CI: every configuration compiles without spills) and on the GPU (ignored without one).

use first_kernels::causal_attention::{CausalAttention, D};
use first_kernels::row_argmax::RowArgmax;
use half::f16;

/// `len` pseudo-random values in `[lo, hi)` (xorshift, from `seed`).
fn random(len: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            lo + (hi - lo) * ((x >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

/// Rows with ties: values quantized to 1/4 in `[-4, 4)`, so maxima repeat.
fn scores(len: usize, seed: u64) -> Vec<f32> {
    random(len, seed, -4.0, 4.0)
        .iter()
        .map(|v| (v * 4.0).floor() as f32 / 4.0)
        .collect()
}

fn halves(len: usize, seed: u64) -> Vec<f16> {
    random(len, seed, -1.0, 1.0)
        .iter()
        .map(|&v| f16::from_f64(v))
        .collect()
}

const ARGMAX: [RowArgmax; 3] = [
    RowArgmax {
        rows: 4,
        cols: 32,
        warps: 1,
    },
    RowArgmax {
        rows: 16,
        cols: 64,
        warps: 4,
    },
    RowArgmax {
        rows: 8,
        cols: 128,
        warps: 2,
    },
];

/// Sequence lengths: one token, one block, a ragged second block, several blocks.
const SEQS: [usize; 4] = [1, 64, 70, 150];

fn attention_close(got: &[f32], want: &[f32], what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 2e-3 + 2e-3 * w.abs(),
            "{what} [{}, {}]: {g} vs {w}",
            i / D as usize,
            i % D as usize
        );
    }
}

mod interp {
    use super::*;

    #[test]
    fn the_row_argmax_finds_the_first_maximum_of_ragged_rows() {
        for s in ARGMAX {
            let m = 3 * s.rows as usize - 1;
            for n in [s.cols as usize, s.cols as usize - 5, 1] {
                let x = scores(m * n, (s.cols as u64) * 7 + n as u64);
                let mut out = vec![-1i32; m];
                tilus::interpret(&s, (m as i32, n as i32, &x[..], &mut out[..])).unwrap();
                assert_eq!(out, RowArgmax::reference(&x, m, n), "{s:?} n = {n}");
            }
        }
    }

    #[test]
    fn attention_matches_the_host_causal_or_not_at_ragged_lengths() {
        for causal in [true, false] {
            let s = CausalAttention { causal };
            for seq in SEQS {
                let n = seq * D as usize;
                let (q, k, v) = (halves(n, 1), halves(n, 2), halves(n, 3));
                let mut o = vec![f32::NAN; n];
                tilus::interpret(&s, (seq as i32, &q[..], &k[..], &v[..], &mut o[..])).unwrap();
                let want = CausalAttention::reference(&q, &k, &v, seq, causal);
                attention_close(&o, &want, &format!("{s:?} seq {seq}"));
            }
        }
    }
}

mod nvrtc {
    use super::*;

    #[test]
    fn every_first_kernel_compiles_without_spills() {
        for s in ARGMAX {
            let c = tilus::build(&s, &[]).unwrap();
            assert_eq!(c.report.spill_stores, 0, "{s:?}");
        }
        for causal in [true, false] {
            let s = CausalAttention { causal };
            let c = tilus::build(&s, &[]).unwrap();
            assert_eq!(c.report.spill_stores, 0, "{s:?}");
        }
    }
}

mod gpu {
    use super::*;
    use tilus::runtime::Device;

    fn seed() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn the_row_argmax_agrees_with_the_host() {
        let device = Device::open(0).expect("a Hopper GPU");
        for s in ARGMAX {
            let jit = tilus::Jit::new(s, &device);
            let m = 1000 * s.rows as usize + 3;
            for n in [s.cols as usize, s.cols as usize - 5, 1] {
                let x = scores(m * n, seed());
                let dx = device.stream().clone_htod(&x).unwrap();
                let mut out = device.stream().clone_htod(&vec![-1i32; m]).unwrap();
                jit.launch(device.stream(), (m as i32, n as i32, &dx, &mut out))
                    .unwrap();
                let got = device.stream().clone_dtoh(&out).unwrap();
                assert_eq!(got, RowArgmax::reference(&x, m, n), "{s:?} n = {n}");
            }
        }
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn attention_agrees_with_the_host() {
        let device = Device::open(0).expect("a Hopper GPU");
        for causal in [true, false] {
            let s = CausalAttention { causal };
            let jit = tilus::Jit::new(s, &device);
            for seq in [1, 70, 150, 1000] {
                let n = seq * D as usize;
                let (q, k, v) = (halves(n, seed()), halves(n, seed()), halves(n, seed()));
                let put = |x: &[f16]| device.stream().clone_htod(x).unwrap();
                let mut o = device.stream().clone_htod(&vec![f32::NAN; n]).unwrap();
                jit.launch(
                    device.stream(),
                    (seq as i32, &put(&q), &put(&k), &put(&v), &mut o),
                )
                .unwrap();
                let got = device.stream().clone_dtoh(&o).unwrap();
                let want = CausalAttention::reference(&q, &k, &v, seq, causal);
                attention_close(&got, &want, &format!("{s:?} seq {seq}"));
            }
        }
    }
}
