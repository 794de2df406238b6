//! `tilus run <kernel> --interpret --size MxNxK`: random inputs as the seed draws them, one
//! run of the kernel on the CPU interpreter, and a check against the f64 CPU reference of
//! `hopper_matmul::harness`. Needs no GPU, so CI can run a kernel end to end.

use hopper_matmul::harness::{self, Rng};
use std::time::Instant;
use tilus::interp::{Backend, InterpValue, Options};

/// What `tilus run` was asked to do.
pub(crate) struct RunArgs {
    pub kernel: String,
    pub sets: Vec<(String, i64)>,
    pub size: (usize, usize, usize),
    pub interpret: bool,
    pub seed: u64,
    pub sequential: bool,
}

/// Runs a matmul kernel of the series (`(m, n, k, a, b, c)` arguments) and checks it; `Ok(false)`
/// when the output does not match the reference.
pub(crate) fn run(args: RunArgs) -> Result<bool, String> {
    let backend = if args.interpret {
        Backend::Interp
    } else {
        Backend::from_env().map_err(|e| e.to_string())?
    };
    if backend == Backend::Gpu {
        return Err(
            "`tilus run` interprets kernels on the CPU: pass --interpret (or set \
             TILUS_BACKEND=interp); on a GPU use `tilus bench matmul`"
                .into(),
        );
    }
    let e = crate::entry(&args.kernel)?;
    let script = (e.with)(&args.sets)?;
    let (m, n, k) = args.size;
    let to_i32 = |v: usize, what: &str| {
        i32::try_from(v).map_err(|_| format!("{what}={v} does not fit in i32"))
    };
    let (mi, ni, ki) = (to_i32(m, "m")?, to_i32(n, "n")?, to_i32(k, "k")?);
    let t0 = Instant::now();
    let program = script
        .trace(&(e.consts)(m, n, k))
        .map_err(|e| e.to_string())?;
    let (program, plan) = tilus::passes::compile_program(program).map_err(|e| e.to_string())?;
    let plan_time = t0.elapsed();

    let mut rng = Rng::new(args.seed);
    let a = harness::seed_inputs(m * k, k, &mut rng);
    let b = harness::seed_inputs(n * k, k, &mut rng);
    let mut c = vec![tilus::prelude::f16::NAN; m * n];
    let opts = Options {
        parallel: !args.sequential,
        ..Options::default()
    };
    let t1 = Instant::now();
    let report = {
        let mut values = vec![
            InterpValue::Int(mi as i64),
            InterpValue::Int(ni as i64),
            InterpValue::Int(ki as i64),
            InterpValue::buffer(&a),
            InterpValue::buffer(&b),
            InterpValue::buffer_mut(&mut c),
        ];
        tilus::interp::run_program(&program, &plan, &mut values, &opts)
            .map_err(|e| e.to_string())?
    };
    let run_time = t1.elapsed();

    let t2 = Instant::now();
    let expect = harness::cpu_reference(&a, &b, m, n, k);
    let check = harness::compare(&c, &expect);
    let ref_time = t2.elapsed();

    println!(
        "{} ({}) at {m}x{n}x{k}, interpreted on the CPU",
        e.name,
        script.config()
    );
    println!(
        "  trace + passes: {:.1} ms; interpreter: {:.1} ms ({} blocks, {} TMA copies, {} tensor-core \
         instructions, up to {} tasks per block, {}); CPU reference: {:.1} ms",
        plan_time.as_secs_f64() * 1e3,
        run_time.as_secs_f64() * 1e3,
        report.blocks,
        report.tma_copies,
        report.mma_instructions,
        report.max_tasks,
        if args.sequential {
            "blocks one after another"
        } else {
            "blocks in parallel"
        },
        ref_time.as_secs_f64() * 1e3,
    );
    println!(
        "  check against the CPU reference: {} ({} elements, {} non-finite, {} outside \
         tolerance, max |diff| {:.3e}, relative error {:.3e})",
        if check.passed() { "PASS" } else { "FAIL" },
        check.total,
        check.non_finite,
        check.mismatches,
        check.max_abs,
        check.rel_err
    );
    Ok(check.passed())
}
