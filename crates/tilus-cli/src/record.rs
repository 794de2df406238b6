//! `tilus bench matmul --record`: the measured rows of a run, appended to a CSV file that keeps
//! every run (`docs/perf/results.csv` by default), one row per kernel and shape:
//!
//! `date,gpu,commit,kernel,dtype,m,n,k,tflops,cublas_tflops,ratio,check,timing`
//!
//! The file is the project's record, so appending must never spoil it: the file is checked
//! before the GPU is touched (its header is this one exactly, it can be written; a missing file
//! must have a directory to go in), and a run's rows go in one write at its end, so a run that
//! fails half-way adds nothing. cuBLAS gets no row of its own: its TFLOPS from the same shape
//! and run sit beside each kernel's.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use tilus_bench::harness::Row;

/// The first line of every results file, column by column.
pub const HEADER: &str =
    "date,gpu,commit,kernel,dtype,m,n,k,tflops,cublas_tflops,ratio,check,timing";

/// Where `--record` appends without `--record-to` (relative to the current directory: the
/// repository's root when run from a checkout).
pub const DEFAULT_PATH: &str = "docs/perf/results.csv";

/// The commit this binary was built from (`build.rs`; `unknown` without git).
pub const COMMIT: &str = env!("TILUS_COMMIT");

/// Refuses to record rows for a binary built from a tree with uncommitted changes (its
/// `commit` ends with `-dirty`): checked once the GPU is found, before anything is measured.
pub fn check_commit(commit: &str) -> Result<(), RecordError> {
    if commit.ends_with("-dirty") {
        return Err(RecordError::Dirty {
            commit: commit.to_string(),
        });
    }
    Ok(())
}

/// Why rows cannot be recorded; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The binary was built from a tree with uncommitted changes: its rows would name code
    /// no one can check out.
    #[error(
        "cannot record: this binary was built from a tree with uncommitted changes \
         ({commit}), so its rows would name code no one can check out; commit, rebuild and \
         run again (without --record the table is printed as usual)"
    )]
    Dirty {
        /// The commit the binary names, `-dirty` at its end.
        commit: String,
    },
    /// The file does not exist and neither does the directory it would go in.
    #[error(
        "cannot record to {}: the directory {} does not exist{}",
        path.display(),
        dir.display(),
        hint(path)
    )]
    NoDirectory {
        /// The results file.
        path: PathBuf,
        /// Its directory.
        dir: PathBuf,
    },
    /// The path names something other than a file (a directory, nothing at all).
    #[error("cannot record to `{}`: it is not a file", path.display())]
    NotAFile {
        /// The path given.
        path: PathBuf,
    },
    /// The file's first line is not [`HEADER`]: another file, or another version's columns.
    #[error(
        "cannot record to {}: its first line is not the header this command writes \
         (expected `{HEADER}`, found `{found}`); nothing was written",
        path.display()
    )]
    Header {
        /// The results file.
        path: PathBuf,
        /// Its first line.
        found: String,
    },
    /// Reading, probing or appending failed.
    #[error("cannot record to {}: {doing}: {source}", path.display())]
    Io {
        /// The results file.
        path: PathBuf,
        /// What was being done.
        doing: &'static str,
        /// The system's reason.
        source: io::Error,
    },
}

/// What to do about a missing directory: the default path is relative to where the command
/// runs, which is the likelier mistake.
fn hint(path: &Path) -> &'static str {
    if path == Path::new(DEFAULT_PATH) {
        " (run from the repository's root, or give --record-to PATH)"
    } else {
        ""
    }
}

impl From<RecordError> for crate::out::CliError {
    fn from(e: RecordError) -> Self {
        crate::out::CliError::Failed(e.to_string())
    }
}

/// What every row of one run shares.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// When it ran, UTC, ISO 8601.
    pub date: String,
    /// The device's name.
    pub gpu: String,
    /// The binary's commit ([`COMMIT`]).
    pub commit: String,
    /// The element type the kernels ran on (`f16`).
    pub dtype: String,
    /// What preceded each timed run (`flushed`, `idle`: [`tilus_bench::harness::Timing`]).
    pub timing: String,
}

/// One kernel at one shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The registry's name of the kernel (`hopper_matmul_v2`, what `tilus run` takes).
    pub kernel: String,
    /// Problem size.
    pub m: usize,
    /// Problem size.
    pub n: usize,
    /// Problem size.
    pub k: usize,
    /// The kernel's TFLOPS.
    pub tflops: f64,
    /// cuBLAS's TFLOPS at the same shape, in the same run.
    pub cublas_tflops: f64,
    /// `tflops / cublas_tflops` (cuBLAS time / kernel time).
    pub ratio: f64,
    /// Whether the kernel's output matched cuBLAS's before it was timed.
    pub passed: bool,
}

/// The records of `verify_and_bench_to`'s rows, which come shape by shape, cuBLAS first and
/// then each of the run's `versions` versions. `kernel_of` gives the registry's name of a
/// version (`v2` → `hopper_matmul_v2`); a version it does not know keeps its own name rather
/// than losing its row. A row that was never checked is not a pass.
pub fn records(
    rows: &[Row],
    versions: usize,
    kernel_of: impl Fn(&str) -> Option<String>,
) -> Vec<Record> {
    let mut out = vec![];
    for shape in rows.chunks(1 + versions) {
        let Some((blas, measured)) = shape.split_first() else {
            continue;
        };
        // a refused version (unchecked, untimed) has nothing to record
        for r in measured.iter().filter(|r| r.passed.is_some()) {
            out.push(Record {
                kernel: kernel_of(&r.name).unwrap_or_else(|| r.name.clone()),
                m: r.m,
                n: r.n,
                k: r.k,
                tflops: r.tflops,
                cublas_tflops: blas.tflops,
                ratio: r.ratio,
                passed: r.passed == Some(true),
            });
        }
    }
    out
}

/// A CSV field: as it is, or in double quotes (quotes inside doubled) when it holds a comma,
/// a quote or a line break (RFC 4180).
pub fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// One line of the file, without its line break.
pub fn line(run: &RunInfo, r: &Record) -> String {
    [
        field(&run.date),
        field(&run.gpu),
        field(&run.commit),
        field(&r.kernel),
        field(&run.dtype),
        r.m.to_string(),
        r.n.to_string(),
        r.k.to_string(),
        format!("{:.2}", r.tflops),
        format!("{:.2}", r.cublas_tflops),
        format!("{:.4}", r.ratio),
        if r.passed { "pass" } else { "FAIL" }.to_string(),
        field(&run.timing),
    ]
    .join(",")
}

/// A results file that has been checked to take rows.
#[derive(Debug)]
pub struct Results {
    path: PathBuf,
}

impl Results {
    /// Checks, before anything is measured, that rows can be appended to `path`: an existing
    /// file must start with [`HEADER`] (or be empty) and open for appending; a missing one needs
    /// a directory that takes a new file (tried with a probe file, removed at once: the
    /// permission bits alone cannot say what this user may do).
    pub fn open(path: &Path) -> Result<Results, RecordError> {
        let results = Results {
            path: path.to_path_buf(),
        };
        match std::fs::metadata(path) {
            Ok(m) if !m.is_file() => {
                return Err(RecordError::NotAFile {
                    path: path.to_path_buf(),
                })
            }
            Ok(_) => {
                results.existing()?;
                OpenOptions::new()
                    .append(true)
                    .open(path)
                    .map_err(|e| results.io("opening it for appending", e))?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => results.probe_directory()?,
            Err(e) => return Err(results.io("looking at it", e)),
        }
        Ok(results)
    }

    /// Where the rows go.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends the run's rows in one write, with the header first when the file is new or
    /// empty; the header of an existing file is checked again (the run may have taken
    /// minutes). Returns how many rows were written.
    pub fn append(&self, run: &RunInfo, records: &[Record]) -> Result<usize, RecordError> {
        let mut text = String::new();
        match self.existing()? {
            None => {
                text.push_str(HEADER);
                text.push('\n');
            }
            // a last line without its line break (an editor's doing) must not run into ours
            Some(false) => text.push('\n'),
            Some(true) => {}
        }
        for r in records {
            text.push_str(&line(run, r));
            text.push('\n');
        }
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .map_err(|e| self.io("opening it for appending", e))?;
        f.write_all(text.as_bytes())
            .and_then(|_| f.flush())
            .map_err(|e| self.io("appending", e))?;
        Ok(records.len())
    }

    /// `None` when the file is missing or empty; otherwise checks its header and says whether
    /// it ends with a line break.
    fn existing(&self) -> Result<Option<bool>, RecordError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io("reading it", e)),
        };
        if bytes.is_empty() {
            return Ok(None);
        }
        let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
        if first != HEADER.as_bytes() {
            let found = String::from_utf8_lossy(first);
            let found: String = found.chars().take(200).collect();
            return Err(RecordError::Header {
                path: self.path.clone(),
                found,
            });
        }
        Ok(Some(bytes.ends_with(b"\n")))
    }

    /// Checks that the missing file's directory exists and takes a new file.
    fn probe_directory(&self) -> Result<(), RecordError> {
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(RecordError::NoDirectory {
                path: self.path.clone(),
                dir,
            });
        }
        let Some(name) = self.path.file_name() else {
            return Err(RecordError::NotAFile {
                path: self.path.clone(),
            });
        };
        let name = name.to_string_lossy();
        let probe = dir.join(format!(".{name}.probe-{}", std::process::id()));
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&probe)
            .map_err(|e| self.io("creating a file in its directory", e))?;
        // a probe left behind is harmless; failing the run for it would not be
        let _ = std::fs::remove_file(&probe);
        Ok(())
    }

    fn io(&self, doing: &'static str, source: io::Error) -> RecordError {
        RecordError::Io {
            path: self.path.clone(),
            doing,
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_a_binary_built_from_uncommitted_changes_are_refused() {
        let e = check_commit("d08d593f2ce5-dirty").unwrap_err();
        assert!(matches!(e, RecordError::Dirty { .. }), "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains("d08d593f2ce5-dirty") && msg.contains("commit, rebuild"),
            "{msg}"
        );
        check_commit("d08d593f2ce5").unwrap();
        check_commit("unknown").unwrap();
    }

    /// A fresh directory for one test, removed when dropped.
    struct Dir(PathBuf);

    impl Dir {
        fn new(label: &str) -> Dir {
            let d =
                std::env::temp_dir().join(format!("tilus-record-{label}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).expect("a temporary directory");
            Dir(d)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn run() -> RunInfo {
        RunInfo {
            date: "2026-12-01T15:30:00Z".into(),
            gpu: "NVIDIA H200".into(),
            commit: "0123456789ab".into(),
            dtype: "f16".into(),
            timing: "flushed".into(),
        }
    }

    fn record(kernel: &str, passed: bool) -> Record {
        Record {
            kernel: kernel.into(),
            m: 4096,
            n: 4096,
            k: 4096,
            tflops: 615.61,
            cublas_tflops: 661.04,
            ratio: 0.931_27,
            passed,
        }
    }

    fn row(name: &str, tflops: f64, ratio: f64, passed: Option<bool>) -> Row {
        Row {
            m: 256,
            n: 128,
            k: 64,
            name: name.into(),
            latency_ms: 1.0,
            tflops,
            ratio,
            passed,
        }
    }

    #[test]
    fn a_new_file_gets_the_header_then_the_rows() {
        let d = Dir::new("new");
        let path = d.0.join("results.csv");
        let r = Results::open(&path).unwrap();
        assert!(!path.exists(), "checking must not create the file");
        r.append(&run(), &[record("hopper_matmul_v2", true)])
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!(
                "{HEADER}\n2026-12-01T15:30:00Z,NVIDIA H200,0123456789ab,hopper_matmul_v2,f16,\
                 4096,4096,4096,615.61,661.04,0.9313,pass,flushed\n"
            )
        );
        let leftovers: Vec<_> = std::fs::read_dir(&d.0).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "the probe file is gone");
    }

    #[test]
    fn rows_are_appended_after_what_is_there() {
        let d = Dir::new("append");
        let path = d.0.join("results.csv");
        let earlier = format!("{HEADER}\nan,earlier,row\n");
        std::fs::write(&path, &earlier).unwrap();
        let r = Results::open(&path).unwrap();
        r.append(&run(), &[record("a", true), record("b", false)])
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with(&earlier), "{text}");
        let new: Vec<&str> = text[earlier.len()..].lines().collect();
        assert_eq!(new.len(), 2, "{text}");
        assert!(new[0].contains(",a,f16,") && new[0].ends_with(",pass,flushed"));
        assert!(new[1].contains(",b,f16,") && new[1].ends_with(",FAIL,flushed"));
        // a last line without its line break is ended before the new rows
        std::fs::write(&path, format!("{HEADER}\nno,break")).unwrap();
        r.append(&run(), &[record("c", true)]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("no,break\n2026-12-01"), "{text}");
        // an empty file is a new one
        std::fs::write(&path, "").unwrap();
        r.append(&run(), &[]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{HEADER}\n")
        );
    }

    #[test]
    fn another_header_is_refused_and_the_file_left_alone() {
        let d = Dir::new("header");
        let path = d.0.join("results.csv");
        for other in [
            "date,gpu,commit,kernel,m,n,k,tflops\n1,2,3\n",
            &format!("{HEADER},extra\n"),
            &format!(" {HEADER}\n"),
            "not a csv",
        ] {
            std::fs::write(&path, other).unwrap();
            let e = Results::open(&path).unwrap_err();
            assert!(matches!(e, RecordError::Header { .. }), "{e}");
            assert!(e.to_string().contains("nothing was written"), "{e}");
            assert_eq!(std::fs::read_to_string(&path).unwrap(), other);
        }
        // a header that changed during the run stops the append too
        std::fs::write(&path, format!("{HEADER}\n")).unwrap();
        let r = Results::open(&path).unwrap();
        std::fs::write(&path, "changed\n").unwrap();
        assert!(r.append(&run(), &[record("a", true)]).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "changed\n");
    }

    #[test]
    fn paths_that_cannot_take_rows_are_refused_up_front() {
        let d = Dir::new("paths");
        let e = Results::open(&d.0.join("missing/results.csv")).unwrap_err();
        assert!(matches!(e, RecordError::NoDirectory { .. }), "{e}");
        assert!(e.to_string().contains("missing"), "{e}");
        assert!(!e.to_string().contains("--record-to"), "{e}");
        // the default path is relative to where the command runs: the message says so
        assert!(hint(Path::new(DEFAULT_PATH)).contains("--record-to"));
        for not_a_file in [d.0.clone(), PathBuf::new(), d.0.join("..")] {
            let e = Results::open(&not_a_file).unwrap_err();
            assert!(
                matches!(e, RecordError::NotAFile { .. }),
                "{not_a_file:?}: {e}"
            );
        }
    }

    #[test]
    fn fields_with_commas_quotes_or_breaks_are_quoted() {
        assert_eq!(field("NVIDIA H200"), "NVIDIA H200");
        assert_eq!(field("GPU, rev 2"), "\"GPU, rev 2\"");
        assert_eq!(field("the \"big\" one"), "\"the \"\"big\"\" one\"");
        assert_eq!(field("two\nlines"), "\"two\nlines\"");
        let mut info = run();
        info.gpu = "H200, \"SXM\"".into();
        let l = line(&info, &record("k", true));
        assert!(l.contains(",\"H200, \"\"SXM\"\"\",0123456789ab,"), "{l}");
    }

    #[test]
    fn records_pair_each_kernel_with_cublas_of_its_shape_and_leave_out_refused_ones() {
        let rows = vec![
            row("cublas", 600.0, 1.0, None),
            row("v0", 300.0, 0.5, Some(true)),
            row("v2", 540.0, 0.9, Some(false)),
            row("cublas", 700.0, 1.0, None),
            row("v0", 350.0, 0.5, Some(true)),
            // refused by the compiler at this shape: neither checked nor timed
            row("v2", f64::NAN, f64::NAN, None),
        ];
        let kernel_of = |v: &str| (v == "v0").then(|| "hopper_matmul_v0".to_string());
        let r = records(&rows, 2, kernel_of);
        let got: Vec<(&str, f64, f64, bool)> = r
            .iter()
            .map(|r| (r.kernel.as_str(), r.tflops, r.cublas_tflops, r.passed))
            .collect();
        assert_eq!(
            got,
            vec![
                ("hopper_matmul_v0", 300.0, 600.0, true),
                ("v2", 540.0, 600.0, false),
                ("hopper_matmul_v0", 350.0, 700.0, true),
            ]
        );
    }

    #[test]
    fn recorded_operand_types_are_named_as_the_ir_names_them() {
        use tilus::lang::Element;
        use tilus_kernels::Operand;
        assert_eq!(<half::f16 as Operand>::NAME, half::f16::DTYPE.name());
        assert_eq!(<half::bf16 as Operand>::NAME, half::bf16::DTYPE.name());
        assert!(!COMMIT.is_empty());
    }
}
