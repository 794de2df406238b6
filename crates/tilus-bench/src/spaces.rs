//! Tuning spaces in tests: a space's configurations, covering samples of spaces too large to
//! compile whole in CI, and what every configuration that compiles must show (they panic,
//! naming the configuration).

use std::collections::BTreeSet;
use std::fmt::Debug;
use tilus::compile::CompiledProgram;
use tilus::tune::{Binding, Tunable};

/// Every configuration of `S`'s search space, in the space's order.
pub fn configs<S: Tunable>() -> Vec<S> {
    S::space()
        .bindings()
        .iter()
        .map(|b| S::from_binding(b).unwrap_or_else(|e| panic!("{b:?}: {e}")))
        .collect()
}

/// Every `step`-th binding of `S`'s search space, checked to take every value of every
/// hyperparameter (a step prime to the space's axes does).
pub fn covering_sample<S: Tunable>(step: usize) -> Vec<Binding> {
    let space = S::space().bindings();
    let sample: Vec<Binding> = space.iter().step_by(step.max(1)).cloned().collect();
    let values = |bs: &[Binding]| -> BTreeSet<(String, i64)> {
        bs.iter().flat_map(|b| b.0.clone()).collect()
    };
    assert_eq!(
        values(&sample),
        values(&space),
        "every {step}th configuration does not cover the space"
    );
    sample
}

/// `S`'s configurations of a covering sample ([`covering_sample`]).
pub fn covering_configs<S: Tunable>(step: usize) -> Vec<S> {
    covering_sample::<S>(step)
        .iter()
        .map(|b| S::from_binding(b).unwrap_or_else(|e| panic!("{b:?}: {e}")))
        .collect()
}

/// A build of `config` that is fit to launch: no spills and no stack frame, no wgmma that
/// ptxas serialized, at most 255 registers per thread, within the 227 KiB of shared memory a
/// block can have.
pub fn assert_clean(config: &dyn Debug, c: &CompiledProgram) {
    assert_eq!(
        c.report.spill_stores, 0,
        "{config:?} spills: {:?}",
        c.report
    );
    assert_eq!(
        c.report.stack_frame, 0,
        "{config:?} uses a stack frame: {:?}",
        c.report
    );
    assert_eq!(
        c.report.serialized_wgmma, None,
        "{config:?}: ptxas serialized the wgmmas"
    );
    assert!(
        c.report.registers > 0 && c.report.registers <= 255,
        "{config:?}: {:?}",
        c.report
    );
    assert!(
        c.plan.smem_bytes <= 227 * 1024,
        "{config:?}: {} bytes of shared memory",
        c.plan.smem_bytes
    );
}

/// [`assert_clean`], and WGMMA in the PTX the cubin came from.
pub fn assert_clean_wgmma(config: &dyn Debug, c: &CompiledProgram) {
    assert_clean(config, c);
    assert!(
        c.source.contains("wgmma.mma_async.sync.aligned.m64n"),
        "{config:?}: no WGMMA"
    );
}
