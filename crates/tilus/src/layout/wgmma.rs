//! Warp-group MMA (wgmma) layouts: the accumulator and register-A fragments, how a block-level
//! product is cut into `m64nNk16` instructions, and the shared-memory matrix descriptors.

use super::mma::{mma_a_fragment, mma_c_fragment};
use super::{RegisterLayout, SharedLayout, Swizzle};

/// Rows of one wgmma instruction.
pub const WGMMA_M: i64 = 64;
/// Depth of one wgmma instruction for 16-bit inputs.
pub const WGMMA_K: i64 = 16;
/// Depth of one wgmma instruction for 8-bit (FP8) inputs: the same 32 bytes of K.
pub const WGMMA_K_FP8: i64 = 32;
/// Widest N of one instruction.
pub const WGMMA_MAX_N: i64 = 256;

/// How a warp group's `[M, K] x [K, N]` product is cut into `m64nNk16` instructions (`k32`
/// for FP8): `rep_m` row blocks of 64, `n_chunks` column chunks of `n` (a multiple of 8, at
/// most 256), `k_steps` steps of `k_inst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WgmmaPlan {
    /// Row blocks of 64.
    pub rep_m: i64,
    /// Columns per instruction.
    pub n: i64,
    /// Instructions along N.
    pub n_chunks: i64,
    /// Steps of `k_inst` along K.
    pub k_steps: i64,
    /// Depth of one instruction: 16 (16-bit inputs) or 32 (FP8).
    pub k_inst: i64,
}

impl WgmmaPlan {
    /// The plan for `[m, k] x [k, n]` of 16-bit inputs, or why there is none.
    pub fn choose(m: i64, n: i64, k: i64) -> Result<WgmmaPlan, String> {
        Self::choose_deep(m, n, k, WGMMA_K)
    }

    /// The plan for `[m, k] x [k, n]` with instructions `k_inst` deep (16, or 32 for FP8).
    pub fn choose_deep(m: i64, n: i64, k: i64, k_inst: i64) -> Result<WgmmaPlan, String> {
        if m % WGMMA_M != 0 || m <= 0 {
            return Err(format!("M = {m} must be a positive multiple of 64"));
        }
        if k % k_inst != 0 || k <= 0 {
            return Err(format!("K = {k} must be a positive multiple of {k_inst}"));
        }
        if n % 8 != 0 || n <= 0 {
            return Err(format!("N = {n} must be a positive multiple of 8"));
        }
        // the widest instruction (multiple of 8, <= 256) that divides N
        let inst_n = (8..=WGMMA_MAX_N.min(n))
            .rev()
            .step_by(8)
            .find(|c| n % c == 0)
            .unwrap_or(8);
        Ok(WgmmaPlan {
            rep_m: m / WGMMA_M,
            n: inst_n,
            n_chunks: n / inst_n,
            k_steps: k / k_inst,
            k_inst,
        })
    }

    /// Total columns.
    pub fn total_n(&self) -> i64 {
        self.n * self.n_chunks
    }

    /// The accumulator `[M, N]` over the 128 threads of the warp group: warp `w` holds rows
    /// `16w .. 16w + 16` of each 64-row block, as four mma.sync C fragments per 8 columns.
    pub fn d_layout(&self) -> RegisterLayout {
        RegisterLayout::local(&[self.rep_m, self.total_n() / 8])
            .compose(&RegisterLayout::spatial(&[4, 1]))
            .compose(&mma_c_fragment())
    }

    /// First local index of the accumulator registers of instruction `(mi, chunk)`; `n / 2`
    /// consecutive f32 elements.
    pub fn d_local(&self, mi: i64, chunk: i64) -> i64 {
        mi * (self.total_n() / 2) + chunk * (self.n / 2)
    }

    /// The `[M, K]` operand in registers: per 64x16 block, warp `w` holds rows `16w .. 16w+16`
    /// as an mma.sync A fragment (4 registers of two halves).
    pub fn a_layout(&self) -> RegisterLayout {
        RegisterLayout::local(&[self.rep_m, self.k_steps])
            .compose(&RegisterLayout::spatial(&[4, 1]))
            .compose(&mma_a_fragment())
    }

    /// First local index of the register-A fragment of instruction `(mi, ki)`; 8 elements.
    pub fn a_local(&self, mi: i64, ki: i64) -> i64 {
        (mi * self.k_steps + ki) * 8
    }
}

/// Why a shared tile cannot be a wgmma operand, if it cannot. A K-major operand (K
/// contiguous: `[M, K]` or `[N, K]` as stored) needs rows of exactly 32, 64 or 128 bytes and
/// the matching swizzle; an MN-major one (`[K, M]` or `[K, N]` as stored, `mn_major`) needs
/// runs of one swizzle span along M or N: rows of 32, 64 or 128 bytes, or column blocks of
/// 128 bytes ([`SharedLayout::column_blocked`]), and rows (K) in groups of 8.
pub fn check_operand_layout(l: &SharedLayout, mn_major: bool) -> Result<(), String> {
    if l.shape.len() != 2 {
        return Err("wgmma operands are 2-D tiles".into());
    }
    let run = l.row_span() as u32 * l.elem_bytes;
    if l.swizzle == Swizzle::None || run != l.swizzle.span_bytes() {
        let (what, runs) = if mn_major {
            ("an MN-major", "M- or N-contiguous runs")
        } else {
            ("a K-major", "K-major rows")
        };
        return Err(format!(
            "{what} wgmma operand tile needs {runs} of 32, 64 or 128 bytes with the matching swizzle; \
             this one has {run}-byte runs and swizzle {}",
            l.swizzle.name()
        ));
    }
    if mn_major && l.shape[0] % 8 != 0 {
        return Err(format!(
            "an MN-major wgmma operand tile needs rows of K in groups of 8; this one has {}",
            l.shape[0]
        ));
    }
    if l.col_block.is_some() && !mn_major {
        return Err(
            "a K-major wgmma operand tile cannot be stored in column blocks (an MN-major layout)"
                .into(),
        );
    }
    Ok(())
}

/// Where the start address goes in a shared-memory matrix descriptor: bits 0..14 hold
/// `address >> 4`.
pub const DESC_ADDR_SHIFT: u32 = 4;
/// Mask of the start-address field (after the shift).
pub const DESC_ADDR_MASK: u64 = 0x3fff;

/// The 64-bit shared-memory matrix descriptor of a swizzled operand starting at shared
/// address `addr` (which must be 16-byte aligned, inside a tile aligned to its swizzle): start
/// address, leading-byte offset, stride-byte offset, swizzle mode ([`descriptor_fields`]).
/// Every descriptor bit is encoded here: the generated code ORs [`descriptor_fields`] with the
/// address field.
pub fn descriptor(addr: u32, l: &SharedLayout, mn_major: bool) -> u64 {
    ((addr as u64 >> DESC_ADDR_SHIFT) & DESC_ADDR_MASK) | descriptor_fields(l, mn_major)
}

/// Every field of the descriptor but the start address. K-major: the leading-byte offset is
/// unused for swizzled operands (1), the stride-byte offset is 8 rows (from one group of 8
/// rows of M or N to the next). MN-major: the leading-byte offset is the distance from one
/// swizzle span of M or N to the next (a column block), the stride-byte offset 8 rows of K.
pub fn descriptor_fields(l: &SharedLayout, mn_major: bool) -> u64 {
    let run_bytes = l.row_span() as u64 * l.elem_bytes as u64;
    let sbo = 8 * run_bytes;
    let lbo = if mn_major {
        let rows = l
            .block_rows
            .unwrap_or_else(|| l.shape.len().checked_sub(2).map_or(1, |d| l.shape[d]))
            as u64;
        rows * run_bytes
    } else {
        16
    };
    let mode: u64 = match l.swizzle {
        Swizzle::None => 0,
        Swizzle::B128 => 1,
        Swizzle::B64 => 2,
        Swizzle::B32 => 3,
    };
    (((lbo >> DESC_ADDR_SHIFT) & DESC_ADDR_MASK) << 16)
        | (((sbo >> DESC_ADDR_SHIFT) & DESC_ADDR_MASK) << 32)
        | (mode << 62)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_cut_n_into_the_widest_instruction() {
        let p = WgmmaPlan::choose(128, 256, 64).unwrap();
        assert_eq!((p.rep_m, p.n, p.n_chunks, p.k_steps), (2, 256, 1, 4));
        let p = WgmmaPlan::choose(64, 384, 32).unwrap();
        assert_eq!((p.n, p.n_chunks), (192, 2));
        assert!(WgmmaPlan::choose(32, 128, 64).is_err());
        assert!(WgmmaPlan::choose(64, 12, 64).is_err());
        assert!(WgmmaPlan::choose(64, 128, 40).is_err());
    }

    /// The accumulator of m64nNk16 as the PTX ISA draws it: thread t of warp w holds, for each
    /// 8-column chunk i, d[4i + e] at row 16w + t/4 + 8(e/2), column 8i + 2(t%4) + e%2.
    #[test]
    fn accumulator_matches_the_ptx_figure() {
        let p = WgmmaPlan::choose(64, 32, 16).unwrap();
        let l = p.d_layout();
        assert_eq!((l.num_threads(), l.local_size()), (128, 16));
        for t in 0..128i64 {
            let (w, lane) = (t / 32, t % 32);
            for r in 0..16i64 {
                let (i, e) = (r / 4, r % 4);
                let want = vec![
                    16 * w + lane / 4 + 8 * (e / 2),
                    8 * i + 2 * (lane % 4) + e % 2,
                ];
                assert_eq!(l.coords(t, r), want, "thread {t} d{r}");
            }
        }
        assert!(l.is_valid());
    }

    #[test]
    fn two_row_blocks_put_each_instruction_on_64_rows() {
        let p = WgmmaPlan::choose(128, 64, 16).unwrap();
        let l = p.d_layout();
        for t in 0..128 {
            for chunk_local in 0..32 {
                let c0 = l.coords(t, p.d_local(0, 0) + chunk_local);
                let c1 = l.coords(t, p.d_local(1, 0) + chunk_local);
                assert!(c0[0] < 64 && c1[0] >= 64, "{c0:?} {c1:?}");
                assert_eq!(c1[0] - c0[0], 64);
            }
        }
        assert!(p.a_layout().is_valid());
    }

    #[test]
    fn descriptors_encode_address_strides_and_swizzle() {
        let l128 = SharedLayout::swizzled_for_tma(&[64, 64], 2);
        let d = descriptor(0x4400, &l128, false);
        assert_eq!(d & 0x3fff, 0x4400 >> 4);
        assert_eq!((d >> 16) & 0x3fff, 1);
        assert_eq!((d >> 32) & 0x3fff, 1024 >> 4);
        assert_eq!(d >> 62, 1);
        let l64 = SharedLayout::swizzled_for_tma(&[128, 32], 2);
        let d = descriptor(0x1000, &l64, false);
        assert_eq!(((d >> 32) & 0x3fff, d >> 62), (512 >> 4, 2));
        let l32 = SharedLayout::swizzled_for_tma(&[64, 16], 2);
        let d = descriptor(0x200, &l32, false);
        assert_eq!(
            ((d >> 32) & 0x3fff, d >> 62, d & 0x3fff),
            (256 >> 4, 3, 0x20)
        );
        assert!(
            check_operand_layout(&SharedLayout::swizzled_for_tma(&[64, 128], 2), false).is_err()
        );
        assert!(check_operand_layout(&l128, false).is_ok());
    }

    /// An MN-major `[K, N]` tile of 64 rows and 256 columns: four column blocks of 64
    /// columns, each 64 rows of 128 bytes (8 KiB) with the 128-byte swizzle; the descriptor
    /// steps 8 KiB from one block of N to the next and 1 KiB from 8 rows of K to the next.
    #[test]
    fn mn_major_descriptors_step_over_column_blocks() {
        let l = SharedLayout::column_blocked(&[64, 256], 2);
        assert_eq!((l.col_block, l.swizzle), (Some(64), Swizzle::B128));
        assert!(check_operand_layout(&l, true).is_ok());
        assert!(check_operand_layout(&l, false).is_err());
        let d = descriptor(0x8000, &l, true);
        assert_eq!((d >> 16) & 0x3fff, 8192 >> 4);
        assert_eq!((d >> 32) & 0x3fff, 1024 >> 4);
        assert_eq!(d >> 62, 1);
        // element (k, n) of block n / 64 is row k of that block, swizzled within it
        assert_eq!(l.byte_offset(&[0, 64]), 8192);
        // (row 1 swaps 16-byte chunks 0 and 1 of its 128 bytes)
        assert_eq!(l.byte_offset(&[1, 65]), 8192 + 128 + 16 + 2);
        assert_eq!(l.byte_offset(&[1, 8]), 128);
        // a tile one span wide is the plain swizzled layout, and so is a wider one whose rows
        // are no whole number of spans (192 bytes: no column blocks of 128)
        assert_eq!(
            SharedLayout::column_blocked(&[64, 64], 2),
            SharedLayout::swizzled_for_tma(&[64, 64], 2)
        );
        assert_eq!(
            SharedLayout::column_blocked(&[64, 96], 2),
            SharedLayout::swizzled_for_tma(&[64, 96], 2)
        );
        assert_eq!(SharedLayout::column_blocked(&[64, 96], 2).col_block, None);
    }
}
