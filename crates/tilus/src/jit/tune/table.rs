//! The dispatch table: for each key (script, space, compile-time values, runtime bucket, GPU,
//! driver and NVRTC), the chosen configuration and what every candidate measured. One JSON file
//! per script and space under `<cache>/tuning/`, written atomically, with a lock file that makes
//! two processes tuning the same script take turns.

use crate::compile::cache::{cache_root, sha256_hex};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

/// What one candidate did during tuning.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CandidateRecord {
    /// `name=value` pairs.
    pub config: String,
    /// `ok`, `rejected` (verifier), `failed` (NVRTC, load or launch) or `spills`.
    pub status: String,
    /// Median latency in milliseconds, for the candidates that ran.
    pub latency_ms: Option<f64>,
    /// Why it did not run.
    pub reason: Option<String>,
}

impl CandidateRecord {
    /// A candidate that did not run: its configuration, status and why.
    pub fn not_run(config: String, status: String, reason: String) -> CandidateRecord {
        CandidateRecord {
            config,
            status,
            latency_ms: None,
            reason: Some(reason),
        }
    }

    /// A candidate that ran, with its median latency.
    pub fn ran(config: String, latency_ms: f64) -> CandidateRecord {
        CandidateRecord {
            config,
            status: "ok".into(),
            latency_ms: Some(latency_ms),
            reason: None,
        }
    }
}

/// The decision for one key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableEntry {
    /// The chosen configuration, as name/value pairs.
    pub chosen: Vec<(String, i64)>,
    /// Every candidate's outcome.
    pub candidates: Vec<CandidateRecord>,
}

/// The whole file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TableFile {
    /// The script's type.
    pub script: String,
    /// The space, as text.
    pub space: String,
    /// Decisions by key.
    pub entries: BTreeMap<String, TableEntry>,
}

/// Where a script's table lives.
pub fn table_path(kernel: &str, script_type: &str, space: &str) -> PathBuf {
    let h = sha256_hex(&[script_type.as_bytes(), space.as_bytes()]);
    cache_root()
        .join("tuning")
        .join(format!("{kernel}-{}.json", &h[..16]))
}

/// Reads a table; a missing, truncated or garbled file reads as empty (and is rewritten on the
/// next tuning).
pub fn read(path: &Path) -> TableFile {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// An exclusive lock on a table, held until dropped. `None` when the cache is not writable
/// (then there is nothing shared to protect).
pub struct TableLock {
    _file: File,
}

impl TableLock {
    /// Blocks until this process holds the table's lock.
    pub fn acquire(path: &Path) -> Option<TableLock> {
        std::fs::create_dir_all(path.parent()?).ok()?;
        let f = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path.with_extension("lock"))
            .ok()?;
        f.lock().ok()?;
        Some(TableLock { _file: f })
    }
}

/// Adds an entry (under the caller's lock): re-reads the file so that entries written by other
/// processes are kept, then replaces it atomically.
pub fn insert(
    path: &Path,
    script: &str,
    space: &str,
    key: &str,
    entry: TableEntry,
) -> std::io::Result<()> {
    let mut t = read(path);
    t.script = script.to_string();
    t.space = space.to_string();
    t.entries.insert(key.to_string(), entry);
    let bytes = serde_json::to_vec_pretty(&t).map_err(std::io::Error::other)?;
    std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// Every dispatch table in the cache, with its path.
pub fn list() -> Vec<(PathBuf, TableFile)> {
    let mut out: Vec<(PathBuf, TableFile)> = std::fs::read_dir(cache_root().join("tuning"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .map(|p| {
                    let t = read(&p);
                    (p, t)
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}
