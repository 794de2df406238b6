//! The fused epilogue on the CPU interpreter against its f64 reference, in each of its forms:
//! D and the bias staged by TMA in four buffers that are refilled within a tile (128 × 256
//! tiles), in two (256 × 128), in as many as the tile has chunks (128 × 128, in pairs of
//! blocks), loaded from global memory (`tma_store = 0`, and C's rows not a multiple of 16
//! bytes), in Hilbert order, and on ping-pong warp groups (128 × 128 tiles, staged and
//! loaded; 64 × 256 ones, staged), and the small tiles with rings of eight stages (128 × 64,
//! and 64 × 128 in ping-pong). The interpreter models four multiprocessors, so each block
//! walks several tiles: the buffers' barriers run through several phases.

use tilus_bench::checks::entry_on_interpreter;
use tilus_bench::registry::{entries, Entry};
use tilus_bench::size::Size;

fn entry(name: &str) -> Entry {
    entries()
        .into_iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no entry {name}"))
}

fn check(e: &Entry, settings: &[(&str, i64)], size: &[i64], seed: u64) {
    let settings: Vec<(String, i64)> = settings.iter().map(|&(n, v)| (n.into(), v)).collect();
    let script = (e.configure)(&settings).expect("a configuration");
    let size = Size::new(e.workload.dims(), size).expect("a size");
    entry_on_interpreter(e, script.as_ref(), &size, seed);
}

/// Several tiles per block with edges in M and N (rows of 2000 bytes: the staged forms),
/// and rows of 600 bytes (loaded from global memory whatever the configuration).
const SIZES: [&[i64]; 2] = [&[520, 1000, 200], &[200, 300, 136]];

#[test]
fn every_form_of_the_gelu_epilogue_passes() {
    tilus_bench::test_cache!();
    let e = entry("matmul_epilogue_gelu");
    let forms: [&[(&str, i64)]; 10] = [
        &[],
        &[("block_m", 256), ("block_n", 128)],
        &[("block_n", 128), ("stages", 3), ("cluster_m", 2)],
        &[("tma_store", 0)],
        &[("hilbert", 1), ("group_m", 2)],
        &[("ping_pong", 1), ("block_n", 128)],
        &[("ping_pong", 1), ("block_n", 128), ("tma_store", 0)],
        &[("ping_pong", 1), ("block_m", 64)],
        &[("block_n", 64), ("stages", 8)],
        &[
            ("ping_pong", 1),
            ("block_m", 64),
            ("block_n", 128),
            ("stages", 8),
        ],
    ];
    for (i, form) in forms.iter().enumerate() {
        for (j, size) in SIZES.iter().enumerate() {
            check(&e, form, size, 80 + (i * 2 + j) as u64);
        }
    }
}

#[test]
fn identity_and_relu_pass_staged_and_loaded() {
    tilus_bench::test_cache!();
    for name in ["matmul_epilogue_identity", "matmul_epilogue_relu"] {
        let e = entry(name);
        for (j, size) in SIZES.iter().enumerate() {
            check(&e, &[], size, 90 + j as u64);
        }
    }
}
