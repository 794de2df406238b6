//! What this machine can do with Tilus: driver, GPU, NVRTC, cache. Used by `tilus doctor`; every
//! probe reports instead of failing, so it also explains a broken setup.

use std::fmt;

/// One finding.
#[derive(Clone, Debug)]
pub struct Finding {
    /// What was probed.
    pub what: &'static str,
    /// Whether it is usable.
    pub ok: bool,
    /// What was found, or what is wrong and how to fix it.
    pub detail: String,
}

/// Everything `tilus doctor` reports.
#[derive(Clone, Debug)]
pub struct Report {
    /// Driver, GPU, NVRTC, cache.
    pub findings: Vec<Finding>,
    /// Whether kernels can be compiled (NVRTC).
    pub can_compile: bool,
    /// Whether kernels can run on a GPU.
    pub can_run: bool,
}

fn cache_writable() -> Finding {
    let root = crate::compile::cache::cache_root();
    let probe = root.join(format!(".doctor-{}", std::process::id()));
    let r = std::fs::create_dir_all(&root).and_then(|_| std::fs::write(&probe, b"ok"));
    let _ = std::fs::remove_file(&probe);
    match r {
        Ok(()) => Finding { what: "cache", ok: true, detail: format!("{} (writable)", root.display()) },
        Err(e) => Finding {
            what: "cache",
            ok: false,
            detail: format!(
                "{} is not writable ({e}); compiled kernels would be kept in memory only. Set TILUS_CACHE_DIR",
                root.display()
            ),
        },
    }
}

/// Probes the machine.
pub fn report() -> Report {
    let mut findings = vec![];
    let driver = crate::runtime::driver_available();
    let mut can_run = false;
    if driver {
        let mut v = 0;
        // SAFETY: the library is present (checked above); writes one int.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut v) };
        findings.push(Finding {
            what: "driver",
            ok: true,
            detail: format!("libcuda, CUDA {}.{}", v / 1000, (v % 1000) / 10),
        });
        match crate::runtime::Device::open(0) {
            Ok(d) => {
                let (ma, mi) = d.compute_capability();
                can_run = true;
                findings.push(Finding {
                    what: "gpu",
                    ok: true,
                    detail: format!("{} (compute capability {ma}.{mi})", d.name()),
                });
            }
            Err(e) => findings.push(Finding {
                what: "gpu",
                ok: false,
                detail: e.to_string(),
            }),
        }
    } else {
        findings.push(Finding {
            what: "driver",
            ok: false,
            detail:
                "libcuda.so not found: no NVIDIA driver on this machine (or not on the loader path)"
                    .into(),
        });
    }
    let can_compile = match crate::compile::nvrtc() {
        Ok(info) => {
            // `crates/tilus/../../.tools/nvrtc/...` reads better as the path it stands for
            let at = info
                .dir
                .as_ref()
                .map(|d| {
                    std::fs::canonicalize(d)
                        .unwrap_or_else(|_| d.clone())
                        .display()
                        .to_string()
                })
                .unwrap_or_else(|| "the loader path".into());
            findings.push(Finding {
                what: "nvrtc",
                ok: true,
                detail: format!("NVRTC {}.{} from {at}", info.version.0, info.version.1),
            });
            true
        }
        Err(e) => {
            findings.push(Finding {
                what: "nvrtc",
                ok: false,
                detail: e.to_string(),
            });
            false
        }
    };
    findings.push(cache_writable());
    Report {
        findings,
        can_compile,
        can_run,
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for x in &self.findings {
            writeln!(
                f,
                "{:<7} {:<4} {}",
                x.what,
                if x.ok { "ok" } else { "NO" },
                x.detail
            )?;
        }
        writeln!(f)?;
        let yes = |b: bool| if b { "yes" } else { "no" };
        writeln!(f, "trace, check and emit CUDA (tilus emit, ir):      yes")?;
        writeln!(
            f,
            "compile with NVRTC (tilus check, the cache):      {}",
            yes(self.can_compile)
        )?;
        writeln!(
            f,
            "run kernels on the GPU (bench, launches, tuning): {}",
            yes(self.can_run && self.can_compile)
        )?;
        write!(f, "run kernels on the CPU interpreter:               yes")
    }
}
