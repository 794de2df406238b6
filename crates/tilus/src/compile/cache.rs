//! The on-disk cache of compiled programs, content-addressed.
//!
//! A program's key is the SHA-256 of its generated source, the NVRTC options, the NVRTC
//! version and the architecture, so a change in code generation can never serve a stale cubin.
//! Each entry is a directory `programs/<kernel>-<key>/` holding `source.cu`, `kernel.cubin`,
//! `ptxas.log` and `meta.json` (written last, with the cubin's hash: an entry without a
//! matching `meta.json` is incomplete or corrupt and is rebuilt). Files are written to a
//! temporary name and renamed, so readers never see half a file.

use super::ResourceReport;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The cache root: `TILUS_CACHE_DIR`, else `$XDG_CACHE_HOME/tilus`, else `~/.cache/tilus`.
pub fn cache_root() -> PathBuf {
    if let Ok(d) = std::env::var("TILUS_CACHE_DIR") {
        if !d.is_empty() {
            return PathBuf::from(d);
        }
    }
    if let Ok(d) = std::env::var("XDG_CACHE_HOME") {
        if !d.is_empty() {
            return Path::new(&d).join("tilus");
        }
    }
    match std::env::var("HOME") {
        Ok(h) => Path::new(&h).join(".cache/tilus"),
        Err(_) => std::env::temp_dir().join("tilus-cache"),
    }
}

/// What `meta.json` records about an entry.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Meta {
    /// Kernel name.
    pub kernel: String,
    /// The content key.
    pub key: String,
    /// NVRTC version `major.minor`.
    pub nvrtc: String,
    /// Target architecture.
    pub arch: String,
    /// Compiler options.
    pub options: Vec<String>,
    /// SHA-256 of the cubin, to detect truncated or corrupt files.
    pub cubin_sha256: String,
    /// Resource usage.
    pub report: ResourceReport,
    /// Seconds NVRTC took (every attempt of the occupancy search).
    pub compile_seconds: f64,
    /// Blocks per multiprocessor the kept compilation asked for (`__launch_bounds__`).
    #[serde(default)]
    pub min_blocks: u32,
}

/// Hex SHA-256.
pub fn sha256_hex(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The entry directory of a program.
pub fn entry_dir(kernel: &str, key: &str) -> PathBuf {
    cache_root()
        .join("programs")
        .join(format!("{kernel}-{}", &key[..16]))
}

/// A complete entry's cubin, if present and intact.
pub fn load(kernel: &str, key: &str) -> Option<(Vec<u8>, Meta)> {
    let dir = entry_dir(kernel, key);
    let meta: Meta = serde_json::from_slice(&std::fs::read(dir.join("meta.json")).ok()?).ok()?;
    if meta.key != key {
        return None;
    }
    let cubin = std::fs::read(dir.join("kernel.cubin")).ok()?;
    (sha256_hex(&[&cubin]) == meta.cubin_sha256).then_some((cubin, meta))
}

fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// Writes the source (always useful, even when compilation fails) and returns its path.
/// An unwritable cache degrades to no caching, with one warning per process.
pub fn store_source(kernel: &str, key: &str, source: &str, log: &str) -> Option<PathBuf> {
    let dir = entry_dir(kernel, key);
    let r = std::fs::create_dir_all(&dir)
        .and_then(|_| write_atomic(&dir.join("source.cu"), source.as_bytes()))
        .and_then(|_| write_atomic(&dir.join("ptxas.log"), log.as_bytes()));
    match r {
        Ok(()) => Some(dir.join("source.cu")),
        Err(e) => {
            warn_unwritable(&dir, &e);
            None
        }
    }
}

/// Writes the cubin and, last, the metadata that marks the entry complete.
pub fn store_cubin(kernel: &str, key: &str, cubin: &[u8], meta: &Meta) {
    let dir = entry_dir(kernel, key);
    let r = std::fs::create_dir_all(&dir)
        .and_then(|_| write_atomic(&dir.join("kernel.cubin"), cubin))
        .and_then(|_| {
            let json = serde_json::to_vec_pretty(meta).unwrap_or_default();
            write_atomic(&dir.join("meta.json"), &json)
        });
    if let Err(e) = r {
        warn_unwritable(&dir, &e);
    }
}

/// An exclusive lock on one program's entry, held while it is compiled.
pub struct EntryLock {
    _file: std::fs::File,
}

impl EntryLock {
    /// Blocks until this process holds the entry's lock; `None` when the cache is not writable.
    pub fn acquire(kernel: &str, key: &str) -> Option<EntryLock> {
        let dir = entry_dir(kernel, key);
        std::fs::create_dir_all(&dir).ok()?;
        let f = std::fs::File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("lock"))
            .ok()?;
        f.lock().ok()?;
        Some(EntryLock { _file: f })
    }
}

/// A complete program entry, for `tilus cache`.
#[derive(Clone, Debug)]
pub struct ProgramEntry {
    /// Its directory.
    pub dir: PathBuf,
    /// Its metadata (None: incomplete or corrupt; rebuilt on next use).
    pub meta: Option<Meta>,
    /// Bytes on disk.
    pub bytes: u64,
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Every program entry in the cache, sorted by directory name.
pub fn list_programs() -> Vec<ProgramEntry> {
    let mut out: Vec<ProgramEntry> = std::fs::read_dir(cache_root().join("programs"))
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .map(|dir| {
                    let meta = std::fs::read(dir.join("meta.json"))
                        .ok()
                        .and_then(|b| serde_json::from_slice(&b).ok());
                    let bytes = dir_bytes(&dir);
                    ProgramEntry { dir, meta, bytes }
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort_by(|a, b| a.dir.cmp(&b.dir));
    out
}

/// Removes the whole cache; returns the bytes freed.
pub fn clean() -> std::io::Result<u64> {
    let root = cache_root();
    if !root.exists() {
        return Ok(0);
    }
    let mut total = 0;
    for sub in ["programs", "tuning"] {
        let d = root.join(sub);
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd.filter_map(|e| e.ok()) {
                let p = e.path();
                if p.is_dir() {
                    total += dir_bytes(&p);
                    std::fs::remove_dir_all(&p)?;
                } else {
                    total += e.metadata().map(|m| m.len()).unwrap_or(0);
                    std::fs::remove_file(&p)?;
                }
            }
        }
    }
    Ok(total)
}

fn warn_unwritable(dir: &Path, e: &std::io::Error) {
    static WARNED: OnceLock<()> = OnceLock::new();
    WARNED.get_or_init(|| {
        use std::io::Write;
        // a closed stderr is no reason to fail: the warning is only advice
        let _ = writeln!(
            std::io::stderr(),
            "tilus: warning: cannot write the cache at {} ({e}); compiled kernels are kept in memory only. \
             Set TILUS_CACHE_DIR to a writable directory.",
            dir.display()
        );
    });
}
