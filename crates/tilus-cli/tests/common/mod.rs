//! Runs the `tilus` binary the way a user does, in a cache directory of its own, with no GPU
//! visible, and classifies how it ended.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The first kernel of the registry.
pub const V0: &str = "hopper_matmul_v0";
/// The second.
pub const V1: &str = "hopper_matmul_v1";

/// No command of these tests may run longer.
const TIMEOUT: Duration = Duration::from_secs(120);

/// A fresh directory under cargo's temporary directory for tests, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new, empty directory.
    pub fn new(label: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("cli-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How a run ended.
#[derive(Debug)]
pub struct Outcome {
    /// What was run.
    pub args: Vec<String>,
    /// The exit status.
    pub status: ExitStatus,
    /// Everything it wrote to stdout (empty when stdout was a closed pipe).
    pub stdout: String,
    /// Everything it wrote to stderr (empty when stderr was a closed pipe).
    pub stderr: String,
}

impl Outcome {
    /// The exit code; `None` when a signal ended the process.
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Panics unless the run ended the way a command-line tool should: exit status 0, 1 or 2,
    /// never a panic (status 101, "panicked" on stderr), an abort or a signal, and a message
    /// on stderr whenever it failed (unless `stderr_closed`).
    pub fn assert_sane(&self, stderr_closed: bool) {
        assert!(
            !self.stderr.contains("panicked"),
            "`tilus {}` panicked:\n{}",
            self.args.join(" "),
            self.stderr
        );
        match self.code() {
            Some(0..=2) => {}
            other => panic!(
                "`tilus {}` ended with {other:?} ({}):\n{}",
                self.args.join(" "),
                self.status,
                self.stderr
            ),
        }
        if self.code() != Some(0) && !stderr_closed {
            assert!(
                !self.stderr.trim().is_empty(),
                "`tilus {}` failed without saying why (status {:?}); stdout:\n{}",
                self.args.join(" "),
                self.code(),
                self.stdout
            );
        }
    }

    /// [`Outcome::assert_sane`] and this exit code.
    pub fn assert_code(&self, code: i32) -> &Outcome {
        self.assert_sane(false);
        assert_eq!(
            self.code(),
            Some(code),
            "`tilus {}`:\nstdout:\n{}\nstderr:\n{}",
            self.args.join(" "),
            self.stdout,
            self.stderr
        );
        self
    }

    /// Panics unless stderr contains `text`.
    pub fn assert_stderr(&self, text: &str) -> &Outcome {
        assert!(
            self.stderr.contains(text),
            "`tilus {}`: stderr lacks {text:?}:\n{}",
            self.args.join(" "),
            self.stderr
        );
        self
    }

    /// Panics unless stdout contains `text`.
    pub fn assert_stdout(&self, text: &str) -> &Outcome {
        assert!(
            self.stdout.contains(text),
            "`tilus {}`: stdout lacks {text:?}:\n{}",
            self.args.join(" "),
            self.stdout
        );
        self
    }
}

/// Where stdout goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// Read to the end.
    Whole,
    /// A pipe whose reader is gone before the command writes anything.
    ClosedAtOnce,
    /// A pipe whose reader takes one line and goes away (`| head -1`).
    FirstLine,
}

/// How to run `tilus`.
pub struct Run {
    args: Vec<String>,
    reader: Reader,
    stderr_closed: bool,
    cache: Option<PathBuf>,
    prefix: Vec<String>,
    gpu: bool,
    dir: Option<PathBuf>,
}

/// `tilus ARGS`, stdout read to the end.
pub fn tilus<S: AsRef<str>>(args: &[S]) -> Run {
    Run {
        args: args.iter().map(|s| s.as_ref().to_string()).collect(),
        reader: Reader::Whole,
        stderr_closed: false,
        cache: None,
        prefix: vec![],
        gpu: false,
        dir: None,
    }
}

fn read_file(p: &Path) -> String {
    let mut s = String::new();
    if let Ok(mut f) = std::fs::File::open(p) {
        let mut bytes = vec![];
        let _ = f.read_to_end(&mut bytes);
        s = String::from_utf8_lossy(&bytes).into_owned();
    }
    s
}

impl Run {
    /// Where stdout goes.
    pub fn reader(mut self, r: Reader) -> Run {
        self.reader = r;
        self
    }

    /// Stderr is a closed pipe too.
    pub fn stderr_closed(mut self) -> Run {
        self.stderr_closed = true;
        self
    }

    /// Uses this cache directory (by default a fresh one for the run).
    pub fn cache(mut self, dir: &Path) -> Run {
        self.cache = Some(dir.to_path_buf());
        self
    }

    /// Leaves the machine's GPUs visible (by default none is).
    pub fn with_gpu(mut self) -> Run {
        self.gpu = true;
        self
    }

    /// Runs in this directory (by default the test's own): for paths relative to where the
    /// command runs.
    pub fn in_dir(mut self, dir: &Path) -> Run {
        self.dir = Some(dir.to_path_buf());
        self
    }

    /// Runs through `sh -c 'SCRIPT; exec "$0" "$@"'` (e.g. `ulimit -v 8000000`).
    pub fn through_shell(mut self, script: &str) -> Run {
        self.prefix = vec!["-c".into(), format!("{script} && exec \"$0\" \"$@\"")];
        self
    }

    /// Runs it to the end (or kills it after the timeout and panics).
    pub fn go(self) -> Outcome {
        let work = TempDir::new("run");
        let cache = self.cache.clone().unwrap_or_else(|| work.0.join("cache"));
        // the binary cargo built, or (where the tests run away from the build, as on a GPU
        // host with a bundle of both) the one in the directory `TILUS_TEST_BIN_DIR` names
        let exe = std::env::var_os("TILUS_TEST_BIN_DIR")
            .map(|d| std::path::PathBuf::from(d).join("tilus"))
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_tilus").into());
        let exe = exe.as_os_str();
        let mut cmd = if self.prefix.is_empty() {
            Command::new(exe)
        } else {
            let mut c = Command::new("sh");
            c.args(&self.prefix).arg(exe);
            c
        };
        cmd.args(&self.args).env("TILUS_CACHE_DIR", &cache);
        if let Some(dir) = &self.dir {
            cmd.current_dir(dir);
        }
        if !self.gpu {
            // no GPU, also on a GPU host: commands that need one must say so
            cmd.env("CUDA_VISIBLE_DEVICES", "");
        }
        cmd.env_remove("TILUS_BACKEND")
            .env_remove("TILUS_LOG")
            .env("RUST_BACKTRACE", "0")
            .stdin(Stdio::null());
        let out_path = work.0.join("stdout");
        let err_path = work.0.join("stderr");
        let mut first_line_reader = None;
        match self.reader {
            Reader::Whole => {
                cmd.stdout(std::fs::File::create(&out_path).expect("stdout file"));
            }
            Reader::ClosedAtOnce => {
                let (r, w) = std::io::pipe().expect("a pipe");
                drop(r);
                cmd.stdout(w);
            }
            Reader::FirstLine => {
                let (r, w) = std::io::pipe().expect("a pipe");
                cmd.stdout(w);
                first_line_reader = Some(r);
            }
        }
        if self.stderr_closed {
            let (r, w) = std::io::pipe().expect("a pipe");
            drop(r);
            cmd.stderr(w);
        } else {
            cmd.stderr(std::fs::File::create(&err_path).expect("stderr file"));
        }
        let mut child = cmd.spawn().expect("tilus starts");
        // the pipe's write ends now belong to the child alone
        drop(cmd);
        let mut stdout = String::new();
        if let Some(r) = first_line_reader {
            let _ = BufReader::new(r).read_line(&mut stdout);
            // the reader goes away here
        }
        let start = Instant::now();
        let status = loop {
            match child.try_wait().expect("waiting for tilus") {
                Some(s) => break s,
                None if start.elapsed() > TIMEOUT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("`tilus {}` ran past {TIMEOUT:?}", self.args.join(" "));
                }
                None => std::thread::sleep(Duration::from_millis(5)),
            }
        };
        if self.reader == Reader::Whole {
            stdout = read_file(&out_path);
        }
        Outcome {
            args: self.args,
            status,
            stdout,
            stderr: read_file(&err_path),
        }
    }
}
