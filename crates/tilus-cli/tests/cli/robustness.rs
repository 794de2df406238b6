//! Every subcommand of `tilus` with malformed, empty, negative, huge and repeated arguments,
//! and with its output going to a reader that closes early: it exits 0, 1 or 2 with a message,
//! and never panics or aborts. No GPU is visible to the commands; those that need one fail
//! with a message. Sizes are chosen so that nothing runs for long.

use crate::common::{tilus, Reader, V0, V1};

/// Argument lists: every subcommand, with bad values of every kind.
fn cases() -> Vec<Vec<String>> {
    let max = i32::MAX;
    let long = "x".repeat(100_000);
    let huge_size = format!("{max}x{max}x{max}");
    let mut c: Vec<Vec<&str>> = vec![
        vec![],
        vec!["--bogus"],
        vec!["help"],
        vec!["--help"],
        vec!["--version"],
        vec!["frobnicate"],
        vec!["list"],
        vec!["list", "extra"],
        vec!["doctor"],
        vec!["doctor", "--x"],
        // cache
        vec!["cache"],
        vec!["cache", "ls"],
        vec!["cache", "ls", "x"],
        vec!["cache", "show"],
        vec!["cache", "show", ""],
        vec!["cache", "show", " "],
        vec!["cache", "show", "nope"],
        vec!["cache", "show", &long],
        vec!["cache", "clean"],
        vec!["cache", "frob"],
        // check (sizes that fail fast: every configuration is rejected before NVRTC)
        vec!["check"],
        vec!["check", ""],
        vec!["check", "nope"],
        vec!["check", V0, "--size", ""],
        vec!["check", V0, "--size", "abc"],
        vec!["check", V0, "--size=-1x1x1"],
        vec!["check", V0, "--size", "99999999999x256x256"],
        vec!["check", V0, "--size", "100x100x4095"],
        vec!["check", V1, "--size", "100x100x4095"],
        vec!["check", V0, "--size", "100x100x4095", "--size", "8x8x8"],
        // run (small sizes; the GPU-less default falls back to the interpreter)
        vec!["run"],
        vec!["run", ""],
        vec!["run", "nope"],
        vec!["run", V0, "--size", "abc"],
        vec!["run", V0, "--size=0x8x8"],
        vec!["run", V0, "--size=-64x128x64"],
        vec!["run", V0, "--size", "64x128"],
        vec!["run", V0, "--size", "99999999999x256x256"],
        vec![
            "run",
            V0,
            "--interpret",
            "--size",
            "2147483647x2147483647x2147483640",
        ],
        vec!["run", V0, "--interpret", "--size", "1x2147483647x8"],
        vec!["run", V0, "--interpret", "--size", "64x128x20"],
        vec![
            "run",
            V0,
            "--interpret",
            "--size",
            "64x128x64",
            "--seed",
            "-1",
        ],
        vec![
            "run",
            V0,
            "--interpret",
            "--seed",
            "99999999999999999999999",
        ],
        vec!["run", V0, "--size", "64x128x64"],
        vec![
            "run",
            V1,
            "--interpret",
            "--size",
            "64x128x64",
            "--sequential",
        ],
        vec![
            "run",
            V0,
            "--interpret",
            "--size",
            "64x128x64",
            "--set",
            "block_m=64",
            "--set",
            "block_m=128",
        ],
        vec![
            "run",
            V0,
            "--interpret",
            "--size",
            "64x128x64",
            "--set",
            "block_m=3",
        ],
        vec![
            "run",
            V0,
            "--interpret",
            "--size",
            "64x128x64",
            "--set",
            "nope=1",
        ],
        // bench
        vec!["bench"],
        vec!["bench", "nope"],
        vec!["bench", "matmul"],
        vec!["bench", "matmul", "--versions", ""],
        vec!["bench", "matmul", "--versions", "v9"],
        vec!["bench", "matmul", "--versions", "v0,v0"],
        vec!["bench", "matmul", "--versions", ",,"],
        vec!["bench", "matmul", "--sizes", ""],
        vec!["bench", "matmul", "--sizes", "1x2"],
        vec!["bench", "matmul", "--sizes", "8x8x8,"],
        vec!["bench", "matmul", "--sizes", "99999999999x256x256"],
        vec!["bench", "matmul", "--rounds", "0"],
        vec!["bench", "matmul", "--rounds", "-1"],
        vec!["bench", "matmul", "--timing", "warm"],
        vec!["bench", "epilogue", "--timing", ""],
        vec!["bench", "memory", "--timing", "Flushed"],
        vec!["bench", "matmul", "--warmup", "99999999999999999999999"],
        vec![
            "bench",
            "matmul",
            "--set",
            "block_m=64",
            "--set",
            "block_m=128",
        ],
        vec!["bench", "matmul", "--set", "nope=1"],
        vec!["bench", "matmul", "--versions", "v0", "--versions", "v1"],
        // run from the crate's directory, which has no docs/perf: refused before the GPU
        vec!["bench", "matmul", "--record"],
        vec!["bench", "matmul", "--record-to", ""],
        vec!["bench", "matmul", "--record-to", "/"],
        vec!["bench", "matmul", "--record-to", "/no/such/dir/results.csv"],
        vec!["bench", "memory"],
        vec!["bench", "memory", "--kernels", ""],
        vec!["bench", "memory", "--kernels", "softmax,softmax"],
        vec!["bench", "memory", "--kernels", V0],
        vec!["bench", "memory", "--sizes", "1x2x3"],
        vec!["bench", "memory", "--sizes", "65536x65536"],
        vec!["bench", "memory", "--rounds", "0"],
        vec!["bench", "memory", "--set", "block_q=1"],
        vec![
            "bench",
            "memory",
            "--kernels",
            "vector_add",
            "--set",
            "block=0",
        ],
        vec!["run", "vector_add", "--interpret", "--size", "0"],
        vec!["run", "vector_add", "--interpret", "--size", "2x2"],
        vec!["run", "softmax", "--interpret", "--size", "3"],
        vec![
            "run",
            "layer_norm",
            "--interpret",
            "--size",
            "2x9",
            "--set",
            "warps=99",
        ],
        vec!["bench", "epilogue", "--set", "nope=1"],
        vec!["bench", "epilogue", "--set", "ping_pong"],
        vec!["bench", "epilogue", "--set", "ping_pong=x"],
        vec!["bench", "epilogue", "--act", "swish"],
        vec!["bench", "quant", "--dtypes", "i9"],
        vec!["bench", "quant", "--dtypes", ""],
        vec!["bench", "quant", "--sizes", "1x64"],
        vec!["bench", "quant", "--sizes", &huge_size],
        vec!["bench", "quant", "--rounds", "0"],
        vec!["bench", "quant", "--group", "-1"],
        vec!["bench", "quant", "--sizes", "1x64x128", "--dtypes", "i4"],
        vec!["bench", "tune"],
        vec!["bench", "tune", "--size", "abc"],
        vec!["bench", "tune", "--size", "99999999999x256x256"],
        vec!["bench", "launch"],
        vec!["bench", "launch", "--launches", "0"],
        vec!["bench", "launch", "--size", ""],
        vec!["bench", "first-call", "--size", "abc"],
        vec!["bench", "first-call"],
        vec!["bench", "first-call", "--version", "v9"],
        vec!["bench", "tune", "--version", ""],
        vec!["bench", "tune", "--version", "v9"],
        vec!["bench", "tune", "--version", V0],
        // soak
        vec!["soak"],
        vec!["soak", "--max", "0"],
        vec!["soak", "--max", "7"],
        vec!["soak", "--max", "99999999999"],
        vec!["soak", "--max", "2147483647"],
        vec!["soak", "--max", "-8"],
        vec!["soak", "--pool", "0"],
        vec!["soak", "--launches", "-1"],
        vec!["soak", "--launches", "99999999999999999999999"],
    ];
    let mut owned: Vec<Vec<String>> = c
        .drain(..)
        .map(|v| v.into_iter().map(String::from).collect())
        .collect();
    // emit and ir take the same arguments
    for cmd in ["emit", "ir"] {
        let sizes = [
            "",
            " ",
            "abc",
            "1x2",
            "1x2x3x4",
            "0x8x8",
            "99999999999x256x256",
            &huge_size,
        ];
        owned.push(vec![cmd.into()]);
        owned.push(vec![cmd.into(), "".into()]);
        owned.push(vec![cmd.into(), "nope".into()]);
        owned.push(vec![cmd.into(), long.clone()]);
        owned.push(vec![cmd.into(), V0.into()]);
        owned.push(vec![cmd.into(), V1.into()]);
        for s in sizes {
            owned.push(vec![cmd.into(), V0.into(), "--size".into(), s.into()]);
        }
        owned.push(vec![cmd.into(), V0.into(), "--size=-5x8x8".into()]);
        owned.push(vec![
            cmd.into(),
            V0.into(),
            "--size".into(),
            format!("1x{long}"),
        ]);
        owned.push(vec![
            cmd.into(),
            V0.into(),
            "--size".into(),
            "8x8x8".into(),
            "--size".into(),
            "16x16x16".into(),
        ]);
        for set in [
            "",
            "block_m",
            "=1",
            "block_m=",
            "block_m=x",
            "block_m=-64",
            "block_m=0",
            "block_m=3",
            "block_m=99999999999999999999",
            "block_m=2147483647",
            "block_k=2147483647",
            "nope=1",
        ] {
            owned.push(vec![cmd.into(), V0.into(), "--set".into(), set.into()]);
            owned.push(vec![cmd.into(), V1.into(), "--set".into(), set.into()]);
        }
        owned.push(vec![cmd.into(), V0.into(), "--set".into()]);
        let mut repeated = vec![cmd.to_string(), V0.to_string()];
        for v in ["64", "128", "64"] {
            repeated.push("--set".into());
            repeated.push(format!("block_m={v}"));
        }
        owned.push(repeated);
        // many settings: distinct unknown names, then one name over and over
        let mut many = vec![cmd.to_string(), V0.to_string()];
        for i in 0..5000 {
            many.push(format!("--set=p{i}=1"));
        }
        owned.push(many);
        let mut same = vec![cmd.to_string(), V0.to_string()];
        same.extend((0..5000).map(|_| "--set=block_m=64".to_string()));
        owned.push(same);
    }
    owned
}

/// Runs `cases` on a few threads.
fn run_all(cases: Vec<Vec<String>>, reader: Reader, stderr_closed: bool) {
    let threads = 4;
    let chunks: Vec<Vec<Vec<String>>> = (0..threads)
        .map(|t| cases.iter().skip(t).step_by(threads).cloned().collect())
        .collect();
    std::thread::scope(|s| {
        for chunk in chunks {
            s.spawn(move || {
                for args in chunk {
                    let mut r = tilus(&args).reader(reader);
                    if stderr_closed {
                        r = r.stderr_closed();
                    }
                    r.go().assert_sane(stderr_closed);
                }
            });
        }
    });
}

#[test]
fn bad_arguments_of_every_kind_end_with_a_message_and_never_a_panic() {
    run_all(cases(), Reader::Whole, false);
}

#[test]
fn a_reader_that_goes_away_at_once_ends_every_command_quietly() {
    run_all(cases(), Reader::ClosedAtOnce, false);
}

#[test]
fn a_reader_that_takes_one_line_ends_every_command_quietly() {
    run_all(cases(), Reader::FirstLine, false);
}

#[test]
fn closed_stdout_and_stderr_are_not_worth_a_panic() {
    run_all(cases(), Reader::ClosedAtOnce, true);
}
