//! Tensor-core layouts: the mma.sync m16n8k16 fragments and their arrangement over warps.

use super::RegisterLayout;

/// Shape of one mma.sync instruction (`m16n8k16`).
pub const MMA_M: i64 = 16;
/// See [`MMA_M`].
pub const MMA_N: i64 = 8;
/// See [`MMA_M`].
pub const MMA_K: i64 = 16;

/// The A fragment of `mma.sync.m16n8k16` for 16-bit inputs: `[16, 16]` over one warp,
/// 8 elements a thread (registers a0..a3, two halves each).
pub fn mma_a_fragment() -> RegisterLayout {
    RegisterLayout::column_local(&[2, 2])
        .compose(&RegisterLayout::spatial(&[8, 4]))
        .compose(&RegisterLayout::local(&[1, 2]))
}

/// The B fragment (`[K=16, N=8]`), 4 elements a thread (b0, b1).
pub fn mma_b_fragment() -> RegisterLayout {
    RegisterLayout::local(&[2, 1])
        .compose(&RegisterLayout::column_spatial(&[4, 8]))
        .compose(&RegisterLayout::local(&[2, 1]))
}

/// The C/D fragment (`[16, 8]`, f32), 4 elements a thread (c0..c3).
pub fn mma_c_fragment() -> RegisterLayout {
    RegisterLayout::local(&[2, 1])
        .compose(&RegisterLayout::spatial(&[8, 4]))
        .compose(&RegisterLayout::local(&[1, 2]))
}

/// How a block-level `dot` of `[M, K] x [K, N]` is cut into mma.sync instructions: the warps
/// form a `warps_m x warps_n` grid, and each warp repeats the instruction
/// `rep_m x rep_n x rep_k` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MmaPlan {
    /// Warps along M.
    pub warps_m: i64,
    /// Warps along N.
    pub warps_n: i64,
    /// mma tiles per warp along M.
    pub rep_m: i64,
    /// mma tiles per warp along N.
    pub rep_n: i64,
    /// mma tiles along K.
    pub rep_k: i64,
}

impl MmaPlan {
    /// Picks the warp grid that minimizes the operand bytes each warp reads, for a product
    /// of `[m, k] x [k, n]` over `warps` warps. `None` when the shape cannot be tiled.
    pub fn choose(m: i64, n: i64, k: i64, warps: i64) -> Option<MmaPlan> {
        if k % MMA_K != 0 {
            return None;
        }
        let mut best: Option<(i64, MmaPlan)> = None;
        for warps_m in (1..=warps).filter(|w| warps % w == 0) {
            let warps_n = warps / warps_m;
            if m % (warps_m * MMA_M) != 0 || n % (warps_n * MMA_N) != 0 {
                continue;
            }
            let (wm, wn) = (m / warps_m, n / warps_n);
            let cost = wm + wn;
            let plan = MmaPlan {
                warps_m,
                warps_n,
                rep_m: wm / MMA_M,
                rep_n: wn / MMA_N,
                rep_k: k / MMA_K,
            };
            // Ties go to the squarer warp grid.
            if best.is_none_or(|(c, p)| {
                cost < c || (cost == c && (warps_m - warps_n).abs() < (p.warps_m - p.warps_n).abs())
            }) {
                best = Some((cost, plan));
            }
        }
        best.map(|(_, p)| p)
    }

    /// Layout of the `[M, K]` operand.
    pub fn a_layout(&self) -> RegisterLayout {
        RegisterLayout::local(&[self.rep_m, self.rep_k])
            .compose(&RegisterLayout::spatial(&[self.warps_m, 1]))
            .compose(&RegisterLayout::replicate(2, self.warps_n))
            .compose(&mma_a_fragment())
    }

    /// Layout of the `[K, N]` operand.
    pub fn b_layout(&self) -> RegisterLayout {
        RegisterLayout::local(&[self.rep_k, self.rep_n])
            .compose(&RegisterLayout::replicate(2, self.warps_m))
            .compose(&RegisterLayout::spatial(&[1, self.warps_n]))
            .compose(&mma_b_fragment())
    }

    /// Layout of the `[M, N]` accumulator.
    pub fn c_layout(&self) -> RegisterLayout {
        RegisterLayout::local(&[self.rep_m, self.rep_n])
            .compose(&RegisterLayout::spatial(&[self.warps_m, self.warps_n]))
            .compose(&mma_c_fragment())
    }

    /// First local index of the A fragment of mma tile `(mi, ki)`; 8 consecutive elements.
    pub fn a_local(&self, mi: i64, ki: i64) -> i64 {
        (mi * self.rep_k + ki) * 8
    }

    /// First local index of the B fragment of mma tile `(ki, ni)`; 4 consecutive elements.
    pub fn b_local(&self, ki: i64, ni: i64) -> i64 {
        (ki * self.rep_n + ni) * 4
    }

    /// First local index of the C fragment of mma tile `(mi, ni)`; 4 consecutive elements.
    pub fn c_local(&self, mi: i64, ni: i64) -> i64 {
        (mi * self.rep_n + ni) * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The PTX ISA's tables for m16n8k16 with 16-bit A/B and f32 C, written out by hand.
    #[test]
    fn fragments_match_the_ptx_tables() {
        let a = mma_a_fragment();
        let b = mma_b_fragment();
        let c = mma_c_fragment();
        assert_eq!((a.num_threads(), a.local_size()), (32, 8));
        assert_eq!((b.num_threads(), b.local_size()), (32, 4));
        assert_eq!((c.num_threads(), c.local_size()), (32, 4));
        for lane in 0..32i64 {
            let (group, tig) = (lane / 4, lane % 4);
            for i in 0..8i64 {
                let row = group + 8 * ((i / 2) % 2);
                let col = tig * 2 + (i % 2) + 8 * (i / 4);
                assert_eq!(a.coords(lane, i), vec![row, col], "A lane {lane} a{i}");
            }
            for i in 0..4i64 {
                let krow = tig * 2 + (i % 2) + 8 * (i / 2);
                assert_eq!(b.coords(lane, i), vec![krow, group], "B lane {lane} b{i}");
                let crow = group + 8 * (i / 2);
                let ccol = tig * 2 + (i % 2);
                assert_eq!(c.coords(lane, i), vec![crow, ccol], "C lane {lane} c{i}");
            }
        }
    }

    #[test]
    fn plan_for_the_seed_tile() {
        let p = MmaPlan::choose(64, 128, 64, 4).unwrap();
        assert_eq!(
            (p.warps_m, p.warps_n, p.rep_m, p.rep_n, p.rep_k),
            (2, 2, 2, 8, 4)
        );
        for l in [p.a_layout(), p.b_layout(), p.c_layout()] {
            assert_eq!(l.num_threads(), 128);
            assert!(l.is_valid(), "{l}");
        }
        assert_eq!(p.c_layout().local_size(), 64);
        assert_eq!(p.a_layout().local_size(), 2 * 4 * 8);
    }

    /// Simulates the block-level dot the way the hardware runs it: for each warp and each mma
    /// tile, the 32 lanes' registers (found through the plan's layouts and local-index rules)
    /// are assembled into 16x16 / 16x8 tiles by the fragment tables, multiplied, and the result
    /// scattered back. The outcome must equal a plain triple loop.
    #[test]
    fn plan_indices_compute_the_product() {
        for (m, n, k, warps) in [
            (64, 128, 32, 4),
            (32, 16, 16, 1),
            (128, 64, 16, 8),
            (64, 256, 64, 4),
        ] {
            let p = MmaPlan::choose(m, n, k, warps).unwrap();
            let av = |r: i64, c: i64| ((r * 7 + c * 3) % 11 - 5) as f64;
            let bv = |r: i64, c: i64| ((r * 5 + c * 2) % 13 - 6) as f64;
            let (al, bl, cl) = (p.a_layout(), p.b_layout(), p.c_layout());
            let (fa, fb, fc) = (mma_a_fragment(), mma_b_fragment(), mma_c_fragment());
            // per-thread accumulators
            let mut acc = vec![vec![0f64; cl.local_size() as usize]; (warps * 32) as usize];
            for w in 0..warps {
                for mi in 0..p.rep_m {
                    for ni in 0..p.rep_n {
                        for ki in 0..p.rep_k {
                            let mut ta = [[0f64; 16]; 16];
                            let mut tb = [[0f64; 8]; 16];
                            let mut tc = [[0f64; 8]; 16];
                            for lane in 0..32 {
                                let t = w * 32 + lane;
                                for e in 0..8 {
                                    let g = al.coords(t, p.a_local(mi, ki) + e);
                                    let f = fa.coords(lane, e);
                                    ta[f[0] as usize][f[1] as usize] = av(g[0], g[1]);
                                }
                                for e in 0..4 {
                                    let g = bl.coords(t, p.b_local(ki, ni) + e);
                                    let f = fb.coords(lane, e);
                                    tb[f[0] as usize][f[1] as usize] = bv(g[0], g[1]);
                                    let f = fc.coords(lane, e);
                                    tc[f[0] as usize][f[1] as usize] =
                                        acc[t as usize][(p.c_local(mi, ni) + e) as usize];
                                }
                            }
                            for lane in 0..32 {
                                let t = w * 32 + lane;
                                for e in 0..4 {
                                    let f = fc.coords(lane, e);
                                    let (r, c) = (f[0] as usize, f[1] as usize);
                                    let d: f64 = tc[r][c]
                                        + (0..16).map(|kk| ta[r][kk] * tb[kk][c]).sum::<f64>();
                                    acc[t as usize][(p.c_local(mi, ni) + e) as usize] = d;
                                }
                            }
                        }
                    }
                }
            }
            let mut out = vec![f64::NAN; (m * n) as usize];
            for t in 0..warps * 32 {
                for l in 0..cl.local_size() {
                    let c = cl.coords(t, l);
                    out[(c[0] * n + c[1]) as usize] = acc[t as usize][l as usize];
                }
            }
            for r in 0..m {
                for c in 0..n {
                    let want: f64 = (0..k).map(|kk| av(r, kk) * bv(kk, c)).sum();
                    assert_eq!(out[(r * n + c) as usize], want, "({r},{c}) of {m}x{n}x{k}");
                }
            }
        }
    }
}
