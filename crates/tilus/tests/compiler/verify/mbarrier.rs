//! mbarriers: allocation, arrival counts, transaction bytes, indices.

use super::{tma_setup, InF16, OutF32};
use crate::common::{at, check};
use tilus::prelude::*;

#[test]
fn mbarrier_alloc_inside_a_loop_or_group() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        k.for_range(0, 4, 1, |k, _| {
            at(line!(), k.mbarrier().alloc([1]));
        });
    })
    .fails_once("mbarrier.alloc must run once in the whole block: outside loops and thread groups");

    check::<OutF32>(|k, _| {
        k.warps(1);
        k.single_thread(|k| {
            at(line!(), k.mbarrier().alloc([1]));
        });
    })
    .fails_once("mbarrier.alloc must run once in the whole block");
}

#[test]
fn mbarrier_alloc_counts() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        at(line!(), k.mbarrier().alloc([1, 0]));
    })
    .fails_once("mbarrier.alloc: every count must be between 1 and 2^20 - 1, got [1, 0]");

    check::<OutF32>(|k, _| {
        k.warps(1);
        at(line!(), k.mbarrier().alloc([1 << 20]));
    })
    .fails_once("every count must be between 1 and 2^20 - 1, got [1048576]");

    check::<OutF32>(|k, _| {
        k.warps(1);
        at(line!(), k.mbarrier().alloc([]));
    })
    .fails_once("every count must be between 1 and 2^20 - 1, got []");
}

#[test]
fn more_threads_arrive_than_the_barrier_counts() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        let b = k.mbarrier().alloc([1]);
        at(line!(), k.mbarrier().arrive_and_expect_tx(b[0], 0));
    })
    .fails_once(
        "mbarrier.arrive_and_expect_tx: 128 threads arrive on `bar0[0]`, which expects 1 arrival \
         per phase; wrap it in single_thread() or raise the count",
    );

    check::<OutF32>(|k, _| {
        k.warps(4);
        let b = k.mbarrier().alloc([128, 16]);
        k.single_warp(3, |k| {
            at(line!(), k.mbarrier().arrive(b[1]));
        });
    })
    .fails_once(
        "mbarrier.arrive: 32 threads arrive on `bar0[1]`, which expects 16 arrivals per phase",
    );
}

#[test]
fn arrivals_with_a_count_fit_the_barrier() {
    // one thread standing for a warp
    check::<OutF32>(|k, _| {
        k.warps(1);
        let b = k.mbarrier().alloc([32]);
        k.single_thread(|k| k.mbarrier().arrive_count(b[0], 32));
        k.mbarrier().wait(b[0], 0u32);
    })
    .compiles("one thread arriving 32 times completes a barrier of 32");

    check::<OutF32>(|k, _| {
        k.warps(4);
        let b = k.mbarrier().alloc([128]);
        k.single_warp(1, |k| {
            at(line!(), k.mbarrier().arrive_count(b[0], 8));
        });
    })
    .fails_once(
        "mbarrier.arrive_count: 32 threads arriving 8 times each make 256 arrivals on `bar0[0]`, \
         which expects 128 arrivals per phase; arrive from fewer threads, lower the count or \
         raise the barrier's",
    );

    check::<OutF32>(|k, _| {
        k.warps(1);
        let b = k.mbarrier().alloc([4]);
        k.single_thread(|k| {
            at(line!(), k.mbarrier().arrive_count(b[0], 0));
        });
    })
    .fails_once("mbarrier.arrive_count: a count of 0 is outside 1 to 2^20 - 1");
}

/// The arrival count is only checked for constant indices; with a variable index every
/// barrier of the array expects one arrival, so 128 arrivals are wrong whichever it is.
#[test]
fn more_threads_arrive_than_the_barrier_counts_at_a_variable_index() {
    check::<OutF32>(|k, _| {
        k.warps(4);
        let b = k.mbarrier().alloc([1, 1]);
        k.for_range(0, 2, 1, |k, i| {
            at(line!(), k.mbarrier().arrive(b.at(i)));
        });
    })
    .fails_once("128 threads arrive on `bar0");
}

#[test]
fn transaction_bytes_out_of_range() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let b = k.mbarrier().alloc([1]);
        k.single_thread(|k| {
            at(line!(), k.mbarrier().arrive_and_expect_tx(b[0], 1 << 20));
        });
    })
    // No copy delivers the bytes either, which is reported at the same call.
    .fails("arrive_and_expect_tx: 1048576 bytes is outside the barrier's transaction range");
}

#[test]
fn transaction_bytes_that_do_not_match_the_copies() {
    // declares one tile, copies two
    check::<InF16>(|k, (a,)| {
        k.warps(4);
        let (g, s, b) = tma_setup(k, a);
        let s2: SharedTensor<f16> = k.shared_tensor([64, 64]);
        k.single_thread(|k| {
            at(line!(), k.mbarrier().arrive_and_expect_tx(b[0], s.nbytes()));
            k.tma().global_to_shared(&g, &s, [0, 0], b[0]);
            k.tma().global_to_shared(&g, &s2, [0, 64], b[0]);
            k.mbarrier().wait(b[0], 0u32);
        });
    })
    .fails_once(
        "arrive_and_expect_tx declares 8192 bytes on `bar0[0]`, but the TMA copies issued on it \
         before the wait deliver 16384 bytes; the wait would return early or fault",
    );

    // declares two tiles, copies one
    check::<InF16>(|k, (a,)| {
        k.warps(4);
        let (g, s, b) = tma_setup(k, a);
        k.single_thread(|k| {
            let n = 2 * s.nbytes();
            at(line!(), k.mbarrier().arrive_and_expect_tx(b[0], n));
            k.tma().global_to_shared(&g, &s, [0, 0], b[0]);
            k.mbarrier().wait(b[0], 0u32);
        });
    })
    .fails_once(
        "declares 16384 bytes on `bar0[0]`, but the TMA copies issued on it before the wait \
         deliver 8192 bytes; the wait would never return",
    );
}

#[test]
fn barrier_index_out_of_range() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let b = k.mbarrier().alloc([1, 1]);
        k.single_thread(|k| {
            at(line!(), k.mbarrier().wait(b.at(Val::constant(2)), 0u32));
        });
    })
    .fails_once("barrier index 2 or higher is out of range: `bar0` has 2 barrier(s)");

    check::<(Const<i32>,)>(|k, (i,)| {
        k.warps(1);
        let b = k.mbarrier().alloc([1, 1]);
        k.single_thread(|k| {
            at(line!(), k.mbarrier().arrive(b.at(i)));
        });
    })
    .consts(&[-1])
    .fails_once("barrier index -1 is out of range: `bar0` has 2 barrier(s)");
}

/// `Barriers` is indexed with `[]` as well as `at`; an index past the end panics in
/// `Index::index` instead of producing the diagnostic.
#[test]
fn barrier_index_out_of_range_with_brackets() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let b = k.mbarrier().alloc([1, 1]);
        k.single_thread(|k| {
            at(line!(), k.mbarrier().arrive(b[2]));
        });
    })
    .fails_once("barrier index 2 or higher is out of range");
}

/// `Pipeline`'s misuse the types cannot rule out is reported at the call in the script, not
/// inside the library: here the whole block of 256 threads releases stages counted for 128.
#[test]
fn pipeline_misuse_is_reported_at_the_scripts_call() {
    check::<OutF32>(|k, _| {
        k.warps(8);
        let pipe = Pipeline::new(k, 2, 128);
        k.for_range(0, 4, 1, |k, i| {
            let slot = pipe.consumer_acquire(k, i);
            at(line!(), pipe.consumer_release(k, slot));
        });
    })
    .fails_once("256 threads arrive on `bar1`, which expects 128 arrivals per phase");

    check::<OutF32>(|k, _| {
        k.warps(8);
        let pipe = Pipeline::new(k, 2, 128);
        k.for_range(0, 4, 1, |k, i| {
            let _slot = pipe.consumer_acquire(k, i);
            at(line!(), pipe.consumer_release_step(k, i - 1));
        });
    })
    .fails_once("256 threads arrive on `bar1`");
}

#[test]
fn a_remote_arrival_needs_clusters() {
    check::<OutF32>(|k, _| {
        k.warps(1);
        let bar = k.mbarrier().alloc([1]);
        at(line!(), k.mbarrier().arrive_remote(bar[0], 1));
    })
    .fails_once("mbarrier.arrive_remote in a kernel without clusters");
}
