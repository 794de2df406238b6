//! The v0 main job's command line (`scripts/run-v0 M N K ...`): shapes are triples of positive
//! integers that fit the kernel's i32 arguments; anything else is a usage message and a
//! non-zero exit, never the default run.

use std::process::Command;

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("main-v0-args-cache");
    // the binary cargo built, or the one in `TILUS_TEST_BIN_DIR` (a bundle run elsewhere)
    let exe = std::env::var_os("TILUS_TEST_BIN_DIR")
        .map(|d| std::path::PathBuf::from(d).join("hopper-matmul-v0"))
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_flagship").into());
    let out = Command::new(exe)
        .args(args)
        .env("TILUS_CACHE_DIR", &cache)
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .expect("hopper-matmul-v0 starts");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_shapes_get_a_usage_message_and_status_2() {
    for (args, says) in [
        (&["abc"][..], "M = `abc` is not an integer"),
        (
            &["1", "2"][..],
            "2 numbers given; shapes come in triples M N K",
        ),
        (&["-5", "8", "8"][..], "M = `-5` is not positive"),
        (&["8", "0", "8"][..], "N = 0 is not positive"),
        (
            &["8", "8", "99999999999"][..],
            "K = `99999999999` does not fit",
        ),
        (&["8", "8", "8", "8"][..], "4 numbers given"),
        (&[""][..], "M is empty"),
    ] {
        let (code, stdout, stderr) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(
            stderr.contains("usage: hopper-matmul-v0"),
            "{args:?}: {stderr}"
        );
        assert!(stdout.is_empty(), "{args:?} ran anyway: {stdout}");
    }
}

#[test]
fn help_is_the_usage_message() {
    let (code, stdout, _) = run(&["--help"]);
    assert_eq!(code, Some(0));
    assert!(stdout.starts_with("usage: hopper-matmul-v0"), "{stdout}");
}
