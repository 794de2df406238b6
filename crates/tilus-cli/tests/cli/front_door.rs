//! What a new user meets on a machine without a GPU, one behavior at a time: closed pipes,
//! huge sizes, one size rule, repeated settings, checks that compile nothing, `run` without a
//! GPU, results files that cannot take a run's rows, ambiguous cache names, and the messages
//! and docs around them.

use crate::common::{tilus, Reader, TempDir, V0, V1};

/// The commands whose output is worth reading piecemeal, each of which succeeds here.
fn succeeding() -> Vec<Vec<&'static str>> {
    vec![
        vec!["list"],
        vec!["doctor"],
        vec!["--help"],
        vec!["bench", "--help"],
        vec!["emit", V0],
        vec!["ir", V1],
        vec!["run", V0, "--interpret", "--size", "64x128x64"],
        vec!["cache", "ls"],
    ]
}

#[test]
fn a_closed_pipe_ends_a_command_quietly_with_status_0() {
    for args in succeeding() {
        for reader in [Reader::ClosedAtOnce, Reader::FirstLine] {
            let o = tilus(&args).reader(reader).go();
            o.assert_code(0);
            assert!(o.stderr.is_empty(), "{args:?}: {}", o.stderr);
        }
    }
    // the reported cases: `tilus check hopper_matmul_v0 | head -1`, `tilus cache ls | head -1`
    let o = tilus(&["check", V0, "--size", "100x100x4095"])
        .reader(Reader::ClosedAtOnce)
        .go();
    o.assert_sane(false);
    if !o.stderr.contains("NVRTC is not available") {
        o.assert_code(0);
    }
    let o = tilus(&["cache", "ls"]).reader(Reader::FirstLine).go();
    o.assert_code(0);
    assert!(o.stdout.starts_with("cache: "), "{}", o.stdout);
}

#[test]
fn a_closed_stderr_is_not_worth_a_panic() {
    let o = tilus(&["emit", "nope"]).stderr_closed().go();
    o.assert_sane(true);
    assert_eq!(o.code(), Some(2));
    let o = tilus(&["bench", "tune"])
        .reader(Reader::ClosedAtOnce)
        .stderr_closed()
        .go();
    o.assert_sane(true);
    assert_eq!(o.code(), Some(1));
}

/// `bench epilogue --set` names v6's hyperparameters: an unknown one is a usage error (exit
/// 2, naming it) before any device is opened, so it reads the same with or without a GPU.
#[test]
fn a_bad_epilogue_setting_is_refused_before_the_device() {
    let o = tilus(&["bench", "epilogue", "--set", "ping_pongg=1"]).go();
    o.assert_sane(true);
    o.assert_code(2);
    assert!(o.stderr.contains("ping_pongg"), "{}", o.stderr);
    assert!(!o.stderr.contains("GPU"), "{}", o.stderr);
}

#[test]
fn sizes_too_large_for_this_machine_are_refused_before_allocating() {
    // past what the kernel's 32-bit indices can address: said when the script is traced
    tilus(&[
        "run",
        V0,
        "--interpret",
        "--size",
        "2147483647x2147483647x2147483640",
    ])
    .go()
    .assert_code(1)
    .assert_stderr("outside the 32-bit integers the kernel computes with");
    // within them, but past the host's memory
    tilus(&[
        "run",
        V0,
        "--interpret",
        "--size",
        "1073741824x1073741824x64",
    ])
    .go()
    .assert_code(1)
    .assert_stderr("of host memory");
    // bench's and the soak's host buffers (checked before the GPU is looked for)
    for args in [
        vec![
            "bench",
            "matmul",
            "--sizes",
            "8x8x8,2147483647x2147483647x2147483640",
        ],
        vec![
            "bench",
            "tune",
            "--size",
            "2147483647x2147483647x2147483640",
        ],
        vec![
            "bench",
            "launch",
            "--size",
            "2147483647x2147483647x2147483640",
        ],
    ] {
        tilus(&args)
            .go()
            .assert_code(1)
            .assert_stderr("of host memory");
    }
    tilus(&["soak", "--max", "2147483647"])
        .go()
        .assert_code(1)
        .assert_stderr("of host memory");
}

#[test]
fn an_address_space_limit_is_respected() {
    // 65536x65536x8 needs 16 GiB for C and its reference; `ulimit -v` allows about 8 GB
    let o = tilus(&["run", V0, "--interpret", "--size=65536x65536x8"])
        .through_shell("ulimit -v 8000000")
        .go();
    if o.stderr.contains("ulimit") && o.code() == Some(2) && o.stdout.is_empty() {
        // the shell could not set the limit: nothing to test here
        return;
    }
    o.assert_code(1).assert_stderr("of host memory");
}

#[test]
fn check_fails_when_no_configuration_compiles() {
    for kernel in [V0, V1] {
        let o = tilus(&["check", kernel, "--size", "100x100x4095"]).go();
        o.assert_code(1);
        if !o.stderr.contains("NVRTC is not available") {
            o.assert_stdout("0 of")
                .assert_stderr(&format!("no configuration of {kernel} compiles"));
        }
    }
}

#[test]
fn run_without_a_gpu_says_so_and_interprets_at_the_entrys_small_size() {
    tilus(&["run", V0])
        .go()
        .assert_code(0)
        .assert_stderr("running on the CPU interpreter instead")
        .assert_stdout("at 256x256x256, interpreted on the CPU")
        .assert_stdout("check against the CPU reference: PASS");
    tilus(&["run", V1, "--interpret", "--size", "64x128x64"])
        .go()
        .assert_code(0)
        .assert_stdout("interpreted on the CPU");
    // a size the verifier rejects is an error naming the kernel's line
    tilus(&["run", V0, "--interpret", "--size", "64x128x20"])
        .go()
        .assert_code(1)
        .assert_stderr("v0.rs:");
}

/// The fused-epilogue kernels run on the interpreter at their default size (ragged in M and
/// N) and pass against the f64 reference.
#[test]
fn the_epilogue_kernels_interpret_and_pass() {
    for act in ["identity", "relu", "gelu"] {
        tilus(&["run", &format!("matmul_epilogue_{act}"), "--interpret"])
            .go()
            .assert_code(0)
            .assert_stdout("at 192x320x128, interpreted on the CPU")
            .assert_stdout("check against the CPU reference: PASS");
    }
}

/// A cache with two programs of one kernel and one of another.
fn cache_with_programs() -> TempDir {
    let dir = TempDir::new("cache");
    for name in [
        "matmul_tma-aaaa1111",
        "matmul_tma-aaaa2222",
        "matmul_wgmma-bbbb",
    ] {
        std::fs::create_dir_all(dir.0.join("programs").join(name)).unwrap();
    }
    dir
}

#[test]
fn the_memory_bound_kernels_pass_on_the_interpreter_at_their_small_sizes() {
    for (kernel, size) in [
        ("vector_add", "at 10000, interpreted on the CPU"),
        ("vector_add_f32", "at 10000, interpreted on the CPU"),
        ("softmax", "at 37x1000, interpreted on the CPU"),
        ("layer_norm", "at 37x1000, interpreted on the CPU"),
    ] {
        tilus(&["run", kernel, "--interpret"])
            .go()
            .assert_code(0)
            .assert_stdout(size)
            .assert_stdout("check against the CPU reference: PASS");
    }
}

/// Every kernel `tilus list` names runs on the interpreter at its small size and passes its
/// check: an entry whose inputs are prepared in another layout than its kernel reads (the
/// prepacked weights' scales, say) fails here.
#[test]
fn every_listed_kernel_passes_on_the_interpreter_at_its_small_size() {
    let list = tilus(&["list"]).go();
    list.assert_code(0);
    let names: Vec<&str> = list
        .stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(names.len() >= 20, "{}", list.stdout);
    for name in names {
        tilus(&["run", name, "--interpret"])
            .go()
            .assert_code(0)
            .assert_stdout("interpreted on the CPU")
            .assert_stdout("check against the CPU reference: PASS");
    }
}

#[test]
fn cache_show_refuses_ambiguous_and_empty_names() {
    let dir = cache_with_programs();
    tilus(&["cache", "show", "matmul_tma"])
        .cache(&dir.0)
        .go()
        .assert_code(1)
        .assert_stderr("matches 2 entries")
        .assert_stderr("matmul_tma-aaaa1111")
        .assert_stderr("matmul_tma-aaaa2222");
    tilus(&["cache", "show", ""])
        .cache(&dir.0)
        .go()
        .assert_code(2)
        .assert_stderr("empty");
    tilus(&["cache", "show", "matmul_tma-aaaa2"])
        .cache(&dir.0)
        .go()
        .assert_code(0)
        .assert_stdout("matmul_tma-aaaa2222");
    tilus(&["cache", "show", "matmul_wgmma-bbbb"])
        .cache(&dir.0)
        .go()
        .assert_code(0);
    tilus(&["cache", "show", "nope"])
        .cache(&dir.0)
        .go()
        .assert_code(1)
        .assert_stderr("nothing in");
}

#[test]
fn every_subcommand_takes_sizes_by_one_rule() {
    let bad = "99999999999x256x256";
    let runs: Vec<Vec<&str>> = vec![
        vec!["emit", V0, "--size", bad],
        vec!["ir", V0, "--size", bad],
        vec!["check", V0, "--size", bad],
        vec!["run", V0, "--interpret", "--size", bad],
        vec!["bench", "matmul", "--sizes", bad],
        vec!["bench", "tune", "--size", bad],
        vec!["bench", "launch", "--size", bad],
    ];
    for args in runs {
        tilus(&args)
            .go()
            .assert_code(2)
            .assert_stderr("m = `99999999999` does not fit the kernel's i32 arguments");
    }
    for (size, says) in [
        ("", "empty"),
        ("abc", "expected MxNxK"),
        ("8x8", "got 2 parts"),
        ("0x8x8", "m = 0 is not positive"),
        ("8x-8x8", "n = `-8` is not positive"),
        ("8x8xk", "k = `k` is not an integer"),
    ] {
        for cmd in ["emit", "ir", "run"] {
            tilus(&[cmd, V0, &format!("--size={size}")])
                .go()
                .assert_code(2)
                .assert_stderr(says);
        }
    }
    tilus(&["soak", "--max", "99999999999"])
        .go()
        .assert_code(2)
        .assert_stderr("does not fit");
    tilus(&["soak", "--dtype", "f32"])
        .go()
        .assert_code(2)
        .assert_stderr("unknown --dtype `f32` (f16, bf16)");
    tilus(&["soak", "--layouts", "--dtype", "f32"])
        .go()
        .assert_code(2)
        .assert_stderr("unknown --dtype `f32` (f16, bf16)");
    tilus(&["soak", "--layouts", "--max", "5000"])
        .go()
        .assert_code(2)
        .assert_stderr("checks every element on the host; 1 to 4096");
    // the largest size the rule allows is traced (and rejected or accepted by the kernel)
    let max = format!("{0}x{0}x{0}", i32::MAX);
    tilus(&["ir", V0, "--size", &max]).go().assert_sane(false);
}

#[test]
fn a_hyperparameter_given_twice_or_unknown_is_an_error() {
    let twice = ["--set", "block_m=64", "--set", "block_m=128"];
    for head in [
        vec!["emit", V0],
        vec!["ir", V1],
        vec!["run", V0, "--interpret"],
        vec!["bench", "matmul"],
    ] {
        let args: Vec<&str> = head.iter().copied().chain(twice).collect();
        tilus(&args)
            .go()
            .assert_code(2)
            .assert_stderr("`--set block_m` is given twice (64 and 128)");
        let args: Vec<&str> = head.iter().copied().chain(["--set", "block_q=1"]).collect();
        tilus(&args)
            .go()
            .assert_code(2)
            .assert_stderr("no hyperparameter `block_q`");
    }
}

#[test]
fn gpu_commands_without_a_gpu_fail_with_one_clear_message() {
    for args in [
        vec!["bench", "matmul"],
        vec!["bench", "memory"],
        vec!["bench", "tune"],
        vec!["bench", "tune", "--version", "v3"],
        vec!["bench", "launch"],
        vec!["soak", "--launches", "10"],
        vec!["soak", "--layouts", "--launches", "10"],
    ] {
        let o = tilus(&args).go();
        o.assert_code(1).assert_stderr("no CUDA GPU is usable");
        assert_eq!(
            o.stderr.matches("error:").count(),
            1,
            "{args:?}: {}",
            o.stderr
        );
    }
}

/// The columns `bench matmul --record` writes, exactly.
const RESULTS_HEADER: &str =
    "date,gpu,commit,kernel,dtype,m,n,k,tflops,cublas_tflops,ratio,check,timing";

#[test]
fn recording_without_a_gpu_fails_with_the_gpu_message_and_writes_nothing() {
    let work = TempDir::new("record");
    let perf = work.0.join("docs/perf");
    std::fs::create_dir_all(&perf).expect("docs/perf");
    // the default file, under the current directory: not created
    let o = tilus(&["bench", "matmul", "--record"]).in_dir(&work.0).go();
    o.assert_code(1).assert_stderr("no CUDA GPU is usable");
    assert_eq!(o.stderr.matches("error:").count(), 1, "{}", o.stderr);
    let left: Vec<_> = std::fs::read_dir(&perf).expect("docs/perf").collect();
    assert!(left.is_empty(), "{left:?}");
    // a file of earlier runs: left as it was
    let mine = work.0.join("mine.csv");
    let earlier = format!("{RESULTS_HEADER}\n2026-12-01T15:30:00Z,H200,abc,hopper_matmul_v2,f16,1,1,1,1.00,1.00,1.0000,pass,idle\n");
    std::fs::write(&mine, &earlier).expect("a results file");
    let o = tilus(&["bench", "matmul", "--versions", "v2", "--record-to"])
        .in_dir(&work.0)
        .go();
    o.assert_code(2);
    tilus(&[
        "bench",
        "matmul",
        "--versions",
        "v2",
        "--record-to",
        "mine.csv",
    ])
    .in_dir(&work.0)
    .go()
    .assert_code(1)
    .assert_stderr("no CUDA GPU is usable");
    assert_eq!(std::fs::read_to_string(&mine).expect("the file"), earlier);
}

#[test]
fn a_results_file_that_cannot_take_rows_is_refused_before_the_gpu_is_looked_for() {
    let work = TempDir::new("record-bad");
    // no docs/perf here: the default path says where it looked and what to do
    let o = tilus(&["bench", "matmul", "--record"]).in_dir(&work.0).go();
    o.assert_code(1)
        .assert_stderr("the directory docs/perf does not exist")
        .assert_stderr("--record-to PATH");
    assert!(!o.stderr.contains("no CUDA GPU"), "{}", o.stderr);
    // another file's header: refused, the file untouched
    let other = work.0.join("other.csv");
    std::fs::write(&other, "name,value\nx,1\n").expect("a file");
    let o = tilus(&["bench", "matmul", "--record-to", "other.csv"])
        .in_dir(&work.0)
        .go();
    o.assert_code(1)
        .assert_stderr("its first line is not the header")
        .assert_stderr(RESULTS_HEADER);
    assert!(!o.stderr.contains("no CUDA GPU"), "{}", o.stderr);
    assert_eq!(
        std::fs::read_to_string(&other).expect("the file"),
        "name,value\nx,1\n"
    );
    // a directory
    tilus(&["bench", "matmul", "--record-to", "."])
        .in_dir(&work.0)
        .go()
        .assert_code(1)
        .assert_stderr("it is not a file");
    assert!(!work.0.join("docs").exists());
}

#[test]
fn bench_tune_takes_any_matmul_version_and_names_them_for_an_unknown_one() {
    for bad in ["v9", "", "hopper_matmul_v0"] {
        let o = tilus(&["bench", "tune", "--version", bad]).go();
        o.assert_code(2)
            .assert_stderr("unknown version")
            .assert_stderr("(available: v0, v1, v2, v3, v4, v5, v6, split_k, stream_k)");
        assert!(!o.stderr.contains("no CUDA GPU"), "{}", o.stderr);
    }
    let o = tilus(&["bench", "tune", "--help"]).go();
    o.assert_code(0).assert_stdout("--version <VERSION>");
}

#[test]
fn doctor_prints_paths_without_dot_dot() {
    let o = tilus(&["doctor"]).go();
    o.assert_code(0);
    assert!(!o.stdout.contains("/../"), "{}", o.stdout);
}

#[test]
fn hidden_subcommands_stay_hidden_and_the_readme_names_real_commands() {
    let o = tilus(&["bench", "--help"]).go();
    o.assert_code(0).assert_stdout("matmul");
    assert!(!o.stdout.contains("first-call"), "{}", o.stdout);
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("the README");
    for line in readme.lines().filter(|l| l.starts_with("tilus ")) {
        let command = line.split('#').next().unwrap_or("").trim();
        assert!(!command.contains('|'), "reads as a shell pipe: {line}");
        let words: Vec<&str> = command.split_whitespace().skip(1).collect();
        // every documented command parses (checked through its --help)
        let sub: Vec<&str> = words
            .iter()
            .copied()
            .take_while(|w| !w.starts_with('-') && !w.starts_with("hopper_") && *w != "NAME")
            .chain(["--help"])
            .collect();
        tilus(&sub).go().assert_code(0);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn run_on_a_gpu_checks_against_cublas() {
    for kernel in [V0, V1] {
        tilus(&["run", kernel])
            .with_gpu()
            .go()
            .assert_code(0)
            .assert_stdout("at 256x256x256, on ")
            .assert_stdout("check against cuBLAS: PASS");
        tilus(&["run", kernel, "--size", "130x136x80", "--set", "block_k=32"])
            .with_gpu()
            .go()
            .assert_code(0)
            .assert_stdout("check against cuBLAS: PASS");
    }
}

/// A version the compiler refuses at a shape (stream-K on 128 × 192 tiles with five stages
/// needs more shared memory than a block has) is reported with its first diagnostic and left
/// untimed; the other versions are checked and timed all the same, and the run says it
/// failed.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_refused_version_does_not_stop_the_others() {
    tilus(&[
        "bench",
        "matmul",
        "--versions",
        "v6[block_n=128],stream_k[block_n=192 stages=5]",
        "--sizes",
        "256x512x256",
        "--rounds",
        "2",
    ])
    .with_gpu()
    .go()
    .assert_code(1)
    .assert_stdout("REFUSED before launch")
    .assert_stdout("bytes of shared memory")
    .assert_stdout("256x512x256: PASS")
    .assert_stdout("NaN");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_memory_bound_kernels_run_on_a_gpu_and_their_benchmark_compares_them_with_a_copy() {
    for kernel in [
        "vector_add",
        "vector_add_f32",
        "softmax",
        "layer_norm",
        "rms_norm",
    ] {
        tilus(&["run", kernel])
            .with_gpu()
            .go()
            .assert_code(0)
            .assert_stdout(", on ")
            .assert_stdout(": PASS");
    }
    tilus(&[
        "bench",
        "memory",
        "--kernels",
        "vector_add,softmax,layer_norm,rms_norm",
        "--sizes",
        "1000x4096",
        "--fixed",
        "--warmup",
        "1",
        "--rounds",
        "3",
    ])
    .with_gpu()
    .go()
    .assert_code(0)
    .assert_stdout("check softmax [block_rows=1 warps=8] 1000x4096: PASS")
    .assert_stdout("check rms_norm [block_rows=1 warps=8] 1000x4096: PASS")
    .assert_stdout("check vector_add [block=4096 warps=4] 4096000: PASS")
    .assert_stdout("copy GB/s");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bench_and_soak_run_the_registrys_matmul_versions() {
    let work = TempDir::new("record-gpu");
    tilus(&[
        "bench",
        "matmul",
        "--versions",
        "v0,v1",
        "--fixed",
        "--sizes",
        "256x256x256,200x136x72",
        "--warmup",
        "0",
        "--rounds",
        "1",
        "--record-to",
        "results.csv",
    ])
    .with_gpu()
    .in_dir(&work.0)
    .go()
    .assert_code(0)
    .assert_stdout("v0 config: block_m=64 block_n=128 block_k=64")
    .assert_stdout("v1 config: block_m=128 block_n=128 block_k=64")
    .assert_stdout("check   v0 [block_m=64 block_n=128 block_k=64] 256x256x256: PASS")
    .assert_stdout("latency (ms)")
    .assert_stdout("recorded 4 rows in results.csv");
    // one row per kernel and shape, cuBLAS beside each, no row of its own
    let text = std::fs::read_to_string(work.0.join("results.csv")).expect("the results");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert_eq!(lines[0], RESULTS_HEADER);
    for (line, (kernel, shape)) in lines[1..].iter().zip([
        (V0, "256,256,256"),
        (V1, "256,256,256"),
        (V0, "200,136,72"),
        (V1, "200,136,72"),
    ]) {
        assert!(line.contains(&format!(",{kernel},f16,{shape},")), "{line}");
        assert!(line.ends_with(",pass,flushed"), "{line}");
        assert!(!line.contains("cublas"), "{line}");
    }
    tilus(&["bench", "tune", "--version", "v1", "--size", "256x256x256"])
        .with_gpu()
        .go()
        .assert_code(0)
        .assert_stdout("RESULT cold context_ms=")
        .assert_stdout("version=v1");
    // every version of the series, split-K and stream-K, two launches each
    tilus(&["soak", "--launches", "18", "--max", "512", "--pool", "2"])
        .with_gpu()
        .go()
        .assert_code(0)
        .assert_stdout(
            "compiled 2 specializations of v0, v1, v2, v3, v4, v5, v6, split_k and stream_k (f16)",
        )
        .assert_stdout("v0: 2 launches, 0 mismatches, 0 NaN/inf")
        .assert_stdout("v6: 2 launches, 0 mismatches, 0 NaN/inf")
        .assert_stdout("split_k: 2 launches, 0 mismatches, 0 NaN/inf")
        .assert_stdout("stream_k: 2 launches, 0 mismatches, 0 NaN/inf");
    // in bf16: the versions with a bf16 kernel, against cuBLAS in bf16
    tilus(&[
        "soak",
        "--dtype",
        "bf16",
        "--launches",
        "6",
        "--max",
        "512",
        "--pool",
        "2",
    ])
    .with_gpu()
    .go()
    .assert_code(0)
    .assert_stdout("compiled 2 specializations of v6, split_k and stream_k (bf16)")
    .assert_stdout("v6: 2 launches, 0 mismatches, 0 NaN/inf")
    .assert_stdout("split_k: 2 launches, 0 mismatches, 0 NaN/inf")
    .assert_stdout("stream_k: 2 launches, 0 mismatches, 0 NaN/inf");
}

/// `--versions` items with bracketed settings (an ablation) and the `matmul` entry point are
/// checked before the GPU is looked for.
#[test]
fn bench_matmul_checks_bracketed_settings_and_the_entry_point_before_the_gpu() {
    for (versions, says) in [
        ("v6[persistent=0", "settings go in brackets"),
        ("v6[block_q=1]", "block_q"),
        (
            "matmul[block_m=64]",
            "`matmul` picks its kernels itself and takes no settings",
        ),
        ("v6[],v6[]", "listed twice"),
    ] {
        let o = tilus(&["bench", "matmul", "--versions", versions]).go();
        o.assert_code(2).assert_stderr(says);
        assert!(
            !o.stderr.contains("no CUDA GPU"),
            "{versions}: {}",
            o.stderr
        );
    }
    // well-formed: the run gets as far as looking for the GPU
    let o = tilus(&[
        "bench",
        "matmul",
        "--versions",
        "v6[persistent=0 group_m=1],matmul,split_k",
    ])
    .go();
    o.assert_code(1).assert_stderr("no CUDA GPU is usable");
}

/// `--dtype` is checked before the GPU is looked for: bf16 runs the versions that have a bf16
/// kernel (v6, split_k, stream_k, matmul), and names them when asked for another.
#[test]
fn bench_matmul_checks_the_operand_type_before_the_gpu() {
    let o = tilus(&["bench", "matmul", "--dtype", "bf16", "--versions", "v6,v5"]).go();
    o.assert_code(2)
        .assert_stderr("`v5` has no bf16 kernel")
        .assert_stderr("v6, split_k, stream_k, matmul");
    let o = tilus(&["bench", "matmul", "--dtype", "f32"]).go();
    o.assert_code(2)
        .assert_stderr("unknown --dtype `f32` (f16, bf16, e4m3, e5m2)");
    // FP8: K off 16 and an unknown hyperparameter are refused before the GPU
    let o = tilus(&[
        "bench",
        "matmul",
        "--dtype",
        "e4m3",
        "--sizes",
        "128x128x24",
    ])
    .go();
    o.assert_code(2).assert_stderr("takes K a multiple of 16");
    let o = tilus(&["bench", "matmul", "--dtype", "e5m2", "--set", "hilbert=1"]).go();
    o.assert_code(2)
        .assert_stderr("the FP8 GEMM's hyperparameters are block_m");
    let o = tilus(&[
        "bench",
        "matmul",
        "--dtype",
        "bf16",
        "--versions",
        "v6,v6[cluster_m=2],split_k,matmul",
    ])
    .go();
    o.assert_code(1).assert_stderr("no CUDA GPU is usable");
}

/// `tilus plot` draws the recorded rows, and says what is wrong with a file it cannot read.
#[test]
fn plot_draws_recorded_rows_and_names_a_missing_file() {
    let work = TempDir::new("plot");
    let csv = work.0.join("results.csv");
    std::fs::write(
        &csv,
        "date,gpu,commit,kernel,dtype,m,n,k,tflops,cublas_tflops,ratio,check\n\
         2026-12-01T11:00:00Z,H200,b,hopper_matmul_v6,f16,4096,4096,4096,660,640,1.0313,pass\n",
    )
    .unwrap();
    let svg = work.0.join("chart.svg");
    let (csv_s, svg_s) = (csv.to_str().unwrap(), svg.to_str().unwrap());
    tilus(&["plot", csv_s, "--out", svg_s]).go().assert_code(0);
    let text = std::fs::read_to_string(&svg).unwrap();
    // the ratio above v6's bar, and v6 named in the legend (a text element's own line)
    assert!(
        text.contains("1.03×") && text.lines().any(|l| l.trim() == "v6"),
        "{text}"
    );
    let missing = work.0.join("none.csv");
    tilus(&["plot", missing.to_str().unwrap(), "--out", svg_s])
        .go()
        .assert_code(2)
        .assert_stderr("cannot read");
}
