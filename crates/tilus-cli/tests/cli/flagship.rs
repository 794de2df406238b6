//! `tilus flagship`, the README's main job (`scripts/run`): without a GPU it says so, runs every
//! kernel it shows on the CPU interpreter against its reference and compiles each with NVRTC,
//! one table at the end; bad sizes are usage errors before anything runs; on a GPU it verifies
//! and times everything beside cuBLAS and a copy, and draws the chart.

use super::common::{tilus, TempDir};

/// The kernels the main job shows, as they are named in its table.
const KERNELS: &[&str] = &[
    "hopper_matmul_v0",
    "hopper_matmul_v1",
    "hopper_matmul_v2",
    "hopper_matmul_v3",
    "hopper_matmul_v4",
    "hopper_matmul_v5",
    "hopper_matmul_v6",
    "hopper_matmul_split_k",
    "vector_add",
    "softmax",
    "layer_norm",
    "rms_norm",
];

#[test]
fn without_a_gpu_every_kernel_is_interpreted_against_its_reference_and_compiled() {
    let run = tilus(&["flagship"]).go();
    run.assert_code(0)
        .assert_stderr("no GPU here")
        .assert_stdout("kernel    interpreted     check");
    for k in KERNELS {
        run.assert_stdout(&format!("interpret {k} ["))
            .assert_stdout(&format!("compile   {k} at "));
    }
    let passed = run.stdout.matches(": PASS (rel. error").count();
    assert_eq!(passed, KERNELS.len(), "{}", run.stdout);
    let compiled = run.stdout.matches(": ok (").count();
    assert_eq!(compiled, KERNELS.len(), "{}", run.stdout);
    assert!(run.stdout.contains("0 bytes spilled"), "{}", run.stdout);
    assert!(!run.stdout.contains("FAIL"), "{}", run.stdout);
}

#[test]
fn bad_sizes_are_usage_errors_before_anything_runs() {
    for (args, says) in [
        (&["flagship", "--matmul", "4096x4096"][..], "MxNxK"),
        (&["flagship", "--matmul", "0x8x8"][..], "not positive"),
        (&["flagship", "--memory", "abc"][..], "ROWSxCOLS"),
        (
            &["flagship", "--rounds", "0"][..],
            "--rounds must be at least 1",
        ),
    ] {
        let run = tilus(args).go();
        run.assert_code(2).assert_stderr(says);
        assert!(
            !run.stdout.contains("interpret"),
            "{args:?} ran: {}",
            run.stdout
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn on_a_gpu_everything_is_verified_timed_and_drawn() {
    let work = TempDir::new("flagship");
    let chart = work.0.join("flagship.svg");
    let chart_arg = chart.to_string_lossy().into_owned();
    let run = tilus(&[
        "flagship",
        "--matmul",
        "1024x1024x1024",
        "--memory",
        "1024x4096",
        "--rounds",
        "3",
        "--plot",
        &chart_arg,
    ])
    .with_gpu()
    .go();
    run.assert_code(0)
        .assert_stdout("reference: cuBLAS")
        .assert_stdout("chart: ");
    for name in ["v0", "v6", "matmul", "vector_add", "rms_norm"] {
        run.assert_stdout(&format!("{name:>14} "));
    }
    assert!(!run.stdout.contains("FAIL"), "{}", run.stdout);
    let svg = std::fs::read_to_string(&chart).expect("the chart is written");
    assert!(svg.contains("<svg"), "{svg}");
}
