//! Arithmetic: every case of `common::arith` (elementwise IEEE operations, transcendental
//! functions, row and column reductions broadcast back, softmax, integers, 16-bit floats,
//! booleans) on tile shapes whose reductions stay in lanes, cross warps, or replicate, against
//! its CPU reference on random inputs that are not a multiple of the tile.

use crate::common::arith::{input, max_rel_diff, reference, ArithCase, ArithTile, SHAPES};
use crate::common::interp::run;

#[test]
fn every_case_matches_its_reference_on_every_shape() {
    for (rows, cols, warps) in SHAPES {
        for case in ArithCase::ALL {
            // one partial tile in each direction
            let (m, n) = (3 * rows as usize - 1, 2 * cols as usize + 4);
            let x = input(m, n, (rows * 1000 + cols) as u64);
            let mut out = vec![f32::NAN; m * n];
            let script = ArithTile::new(case, (rows, cols, warps));
            run(&script, (m as i32, n as i32, &x[..], &mut out[..]))
                .unwrap_or_else(|e| panic!("{case:?} on {rows}x{cols}, {warps} warps: {e}"));
            let want = reference(case, &x, m, n, rows as usize, cols as usize);
            let d = max_rel_diff(&out, &want);
            assert!(
                d <= case.interp_tolerance(),
                "{case:?} on {rows}x{cols}, {warps} warps: relative difference {d}"
            );
        }
    }
}

/// Tiles carried through a runtime loop with `assign_tile` (a sum, a maximum, a decayed sum
/// that reads its destination), bit-exact against the host in the kernel's order, for several
/// trip counts including none.
#[test]
fn assigned_tiles_carry_running_statistics_through_a_runtime_loop() {
    use crate::common::inputs::random_f32;
    use crate::common::scripts::RunningStats;
    let (rows, cols) = (RunningStats::ROWS, RunningStats::COLS);
    for blocks in [0usize, 1, 5] {
        let x = random_f32(rows * cols * blocks.max(1), 77 + blocks as u64);
        let mut out = vec![f32::NAN; 3 * rows * cols];
        run(&RunningStats, (blocks as i32, &x[..], &mut out[..])).unwrap();
        let want = RunningStats::expected(&x, blocks);
        assert_eq!(
            out.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{blocks} blocks"
        );
    }
}
