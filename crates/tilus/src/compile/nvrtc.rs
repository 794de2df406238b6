//! NVRTC: finding the library, and compiling CUDA C++ to an sm_90a cubin in-process.
//!
//! Where NVRTC is looked for, in order:
//! 1. `TILUS_NVRTC_DIR`: a directory holding `libnvrtc.so.13` (or `libnvrtc.so`); when set,
//!    nothing else is searched;
//! 2. `CUDA_HOME` / `CUDA_PATH` and `/usr/local/cuda` (`lib64`, `targets/x86_64-linux/lib`);
//! 3. this workspace's `.tools/nvrtc` (where `scripts/setup-nvrtc` installs the
//!    `nvidia-cuda-nvrtc` wheel) and the usual Python `site-packages/nvidia/cu13/lib`;
//! 4. the dynamic loader's own search path (`LD_LIBRARY_PATH`, ldconfig).
//!
//! NVRTC opens `libnvrtc-builtins` by name at compile time, which fails when its directory is
//! not on the loader path (the wheel's case). Loading the builtins first, by full path, makes
//! the later lookup by name find the library already in the process.

use crate::{Error, Result};
use cudarc::nvrtc::{result, sys};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The NVRTC the process uses.
#[derive(Clone, Debug)]
pub struct NvrtcInfo {
    /// Where it was found (None: by the loader's search path).
    pub dir: Option<PathBuf>,
    /// `(major, minor)` version.
    pub version: (i32, i32),
}

fn candidate_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![];
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Ok(d) = std::env::var(var) {
            dirs.push(Path::new(&d).join("lib64"));
            dirs.push(Path::new(&d).join("targets/x86_64-linux/lib"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    dirs.push(PathBuf::from("/usr/local/cuda/targets/x86_64-linux/lib"));
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    dirs.push(workspace.join(".tools/nvrtc/nvidia/cu13/lib"));
    let mut site = vec![];
    if let Ok(home) = std::env::var("HOME") {
        site.push(Path::new(&home).join(".local/lib"));
    }
    site.push(PathBuf::from("/usr/local/lib"));
    site.push(PathBuf::from("/usr/lib"));
    site.push(PathBuf::from("/opt/torch/.venv/lib"));
    if let Ok(venv) = std::env::var("VIRTUAL_ENV") {
        site.push(Path::new(&venv).join("lib"));
    }
    for base in site {
        if let Ok(entries) = std::fs::read_dir(&base) {
            let mut pys: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("python3"))
                })
                .collect();
            pys.sort();
            for py in pys {
                for sub in ["site-packages", "dist-packages"] {
                    dirs.push(py.join(sub).join("nvidia/cu13/lib"));
                }
            }
        }
    }
    dirs
}

fn find_file(dir: &Path, prefix: &str) -> Option<PathBuf> {
    let mut hits: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.starts_with(prefix) && !n.contains(".alt.")
            })
        })
        .collect();
    hits.sort();
    hits.into_iter().next()
}

fn load_from(dir: &Path) -> Option<()> {
    let lib = dir.join("libnvrtc.so.13");
    let lib = if lib.exists() {
        lib
    } else {
        find_file(dir, "libnvrtc.so")?
    };
    if let Some(builtins) = find_file(dir, "libnvrtc-builtins.so") {
        // SAFETY: loading a shared library runs its initializers; NVRTC's builtins library has
        // no initialization side effects beyond registering itself. It is never unloaded.
        let b = unsafe { libloading::Library::new(&builtins) }.ok()?;
        std::mem::forget(b);
    }
    // SAFETY: as above, for NVRTC itself; kept loaded for the life of the process so that
    // cudarc's lookup by soname finds it.
    let l = unsafe { libloading::Library::new(&lib) }.ok()?;
    std::mem::forget(l);
    Some(())
}

fn probe() -> std::result::Result<NvrtcInfo, String> {
    // An explicit directory is the only place looked at: a wrong setting is an error, not a
    // silent fallback to some other NVRTC.
    if let Ok(d) = std::env::var("TILUS_NVRTC_DIR") {
        let dir = PathBuf::from(&d);
        if !dir.is_dir() || load_from(&dir).is_none() {
            return Err(format!(
                "TILUS_NVRTC_DIR={d} does not hold a loadable libnvrtc.so.13 (unset it to search the usual places)"
            ));
        }
        return version_of(Some(dir));
    }
    let mut found = None;
    let dirs = candidate_dirs();
    for d in &dirs {
        if d.is_dir() && load_from(d).is_some() {
            found = Some(d.clone());
            break;
        }
    }
    if found.is_none() {
        // SAFETY: only probes whether the library can be opened by name.
        let present = unsafe { sys::is_culib_present() };
        if !present {
            let looked: Vec<String> = dirs
                .iter()
                .filter(|d| d.is_dir())
                .map(|d| d.display().to_string())
                .collect();
            return Err(format!(
                "libnvrtc.so.13 was not found (looked in TILUS_NVRTC_DIR, CUDA_HOME, /usr/local/cuda, \
                 the workspace's .tools/nvrtc, Python site-packages{}, and the loader path). \
                 Run `scripts/setup-nvrtc` to install the nvidia-cuda-nvrtc 13.0 wheel, or set \
                 TILUS_NVRTC_DIR to the directory that holds libnvrtc.so.13",
                if looked.is_empty() { String::new() } else { format!(": {}", looked.join(", ")) }
            ));
        }
    }
    version_of(found)
}

fn version_of(found: Option<PathBuf>) -> std::result::Result<NvrtcInfo, String> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is loaded; nvrtcVersion writes two ints.
    let r = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
    if r != sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(format!("nvrtcVersion failed: {r:?}"));
    }
    if major < 12 {
        return Err(format!(
            "NVRTC {major}.{minor} is too old: sm_90a needs NVRTC 12.0 or newer (13.0 recommended)"
        ));
    }
    Ok(NvrtcInfo {
        dir: found,
        version: (major, minor),
    })
}

/// Finds and loads NVRTC once per process.
pub fn nvrtc() -> Result<&'static NvrtcInfo> {
    static INFO: OnceLock<std::result::Result<NvrtcInfo, String>> = OnceLock::new();
    INFO.get_or_init(probe)
        .as_ref()
        .map_err(|e| Error::NvrtcUnavailable(e.clone()))
}

/// The options every program is compiled with.
pub fn options() -> Vec<String> {
    vec![
        "--gpu-architecture=sm_90a".into(),
        "--std=c++17".into(),
        "--ptxas-options=-v".into(),
    ]
}

/// What NVRTC produced.
pub struct NvrtcOutput {
    /// The cubin, or None when compilation failed.
    pub cubin: Option<Vec<u8>>,
    /// The compiler's log (errors, warnings and the ptxas resource report).
    pub log: String,
}

/// Compiles CUDA C++ to an sm_90a cubin.
pub fn compile_cubin(source: &str, name: &str) -> Result<NvrtcOutput> {
    nvrtc()?;
    let src = CString::new(source)
        .map_err(|_| Error::NvrtcUnavailable("source contains a NUL byte".into()))?;
    let cname = CString::new(format!("{name}.cu")).unwrap_or_default();
    let prog = result::create_program(&src, Some(&cname))
        .map_err(|e| Error::NvrtcUnavailable(format!("nvrtcCreateProgram: {e:?}")))?;
    // SAFETY: `prog` was just created and is destroyed exactly once below.
    let compiled = unsafe { result::compile_program(prog, &options()) };
    // SAFETY: as above.
    let log = unsafe { result::get_program_log(prog) }
        .map(|v| {
            let bytes: Vec<u8> = v
                .into_iter()
                .take_while(|c| *c != 0)
                .map(|c| c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        })
        .unwrap_or_default();
    let cubin = if compiled.is_ok() {
        let mut size = 0usize;
        // SAFETY: the program compiled; the size is written to a local.
        let r = unsafe { sys::nvrtcGetCUBINSize(prog, &mut size) };
        if r == sys::nvrtcResult::NVRTC_SUCCESS {
            let mut buf = vec![0u8; size];
            // SAFETY: `buf` has exactly the size NVRTC reported.
            let r = unsafe { sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr() as *mut std::ffi::c_char) };
            (r == sys::nvrtcResult::NVRTC_SUCCESS).then_some(buf)
        } else {
            None
        }
    } else {
        None
    };
    // SAFETY: destroyed once; the handle is not used afterwards.
    let _ = unsafe { result::destroy_program(prog) };
    Ok(NvrtcOutput { cubin, log })
}
