//! `docs/tutorials/your-first-kernel-crate.md`, built as written: the page's files (its code
//! blocks marked `file=PATH`), with the checkout's path for `/path/to/tilus-rs`, make a crate
//! outside this workspace whose own `tilus` lists its kernel (and only it: its registry is its
//! own), runs it on the interpreter against the page's reference, compiles every configuration
//! with NVRTC and emits the CUDA.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The checkout's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the checkout")
}

/// The page's files: `(path, text)` for each code block whose info string names a file.
fn files(page: &str) -> Vec<(String, String)> {
    let mut out = vec![];
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.strip_prefix("```") else {
            continue;
        };
        let file = info
            .split_whitespace()
            .find_map(|w| w.strip_prefix("file="));
        let mut body = String::new();
        for l in lines.by_ref() {
            if l.starts_with("```") {
                break;
            }
            body.push_str(l);
            body.push('\n');
        }
        if let Some(file) = file {
            out.push((file.to_string(), body));
        }
    }
    out
}

/// Runs `cmd`, panicking with its output unless it succeeds; returns its stdout.
fn succeed(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        out.status.success(),
        "{what}: {}\n{stdout}\n{stderr}",
        out.status
    );
    stdout
}

#[test]
fn the_walkthrough_crate_builds_as_written_and_its_tilus_runs_its_kernel() {
    let root = root();
    let page = std::fs::read_to_string(root.join("docs/tutorials/your-first-kernel-crate.md"))
        .expect("the page");
    let files = files(&page);
    let names: Vec<&str> = files.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(names, ["Cargo.toml", "src/lib.rs", "src/bin/tilus.rs"]);

    // outside the workspace, as a user's crate is: a folder of the system's temporary directory
    let dir = std::env::temp_dir().join(format!("my-kernels-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (file, text) in &files {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text = text.replace("/path/to/tilus-rs", &root.to_string_lossy());
        std::fs::write(&path, text).unwrap();
    }
    // the checkout's lock file, so that the build takes the versions already downloaded
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target = root.join("target/walkthrough");
    succeed(
        Command::new(&cargo)
            .args(["build", "--offline", "--bin", "tilus"])
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", &target),
        "cargo build of the walk-through crate",
    );
    let tilus = target.join("debug/tilus");
    let cache = dir.join("cache");
    let run = |args: &[&str]| {
        succeed(
            Command::new(&tilus)
                .args(args)
                .env("TILUS_CACHE_DIR", &cache)
                .env("CUDA_VISIBLE_DEVICES", ""),
            &format!("tilus {}", args.join(" ")),
        )
    };

    let list = run(&["list"]);
    assert!(list.starts_with("my_rms_norm "), "{list}");
    assert_eq!(
        list.lines().count(),
        1,
        "only the crate's own kernel: {list}"
    );

    let interpreted = run(&["run", "my_rms_norm", "--interpret"]);
    assert!(
        interpreted.contains("check against the CPU reference: PASS (37000 elements, 0 non-finite, 0 outside tolerance"),
        "{interpreted}"
    );
    let ragged = run(&[
        "run",
        "my_rms_norm",
        "--interpret",
        "--size",
        "3x77",
        "--set",
        "warps=4",
    ]);
    assert!(ragged.contains(": PASS (231 elements"), "{ragged}");

    let checked = run(&["check", "my_rms_norm"]);
    assert!(checked.contains("block_rows=1 warps=8"), "{checked}");
    assert!(checked.contains(" ok "), "{checked}");

    let cuda = run(&["emit", "my_rms_norm", "--set", "warps=4"]);
    assert!(cuda.contains("__global__"), "{cuda}");
    assert!(cuda.contains("lib.rs:"), "the user's file and line: {cuda}");

    let _ = std::fs::remove_dir_all(&dir);
}
