//! The autotuner: the first launch with new compile-time values (or a new runtime bucket)
//! compiles every candidate of the space in parallel, benchmarks the survivors on the real
//! arguments, keeps the fastest and records the decision on disk; later launches, in this
//! process or another, go straight to the chosen kernel.

use super::bench::BenchScratch;
use super::table::{self, CandidateRecord, TableEntry, TableLock};
use super::{bucket, Binding, Space, Tunable};
use crate::compile::CompiledProgram;
use crate::ir::HostValue;
use crate::lang::{ArgList, HostArgs};
use crate::runtime::{Device, LoadedKernel};
use crate::{Error, Result};
use cudarc::driver::CudaStream;
use rayon::prelude::*;
use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A compiled candidate, or its status and the reason it failed.
pub type Candidate<S> = std::result::Result<(S, CompiledProgram), (String, String)>;

/// Traces, checks and compiles every binding in parallel (NVRTC in-process, one thread per
/// core). Candidates that fail keep their status and reason: `invalid` (the binding does not
/// make a script), `rejected` (the verifier), `spills` (ptxas spilled registers), `failed`
/// (NVRTC or anything else). Needs NVRTC, no GPU.
pub fn compile_candidates<S: Tunable>(
    bindings: &[Binding],
    consts: &[i64],
    progress: &(dyn Fn() + Sync),
) -> Vec<(Binding, Candidate<S>)> {
    bindings
        .par_iter()
        .map(|b| {
            let r = match S::from_binding(b) {
                Err(e) => Err(("invalid".to_string(), e)),
                Ok(s) => match crate::build(&s, consts) {
                    Ok(c) if c.report.spill_stores > 0 => Err((
                        "spills".to_string(),
                        format!("ptxas spills {} bytes", c.report.spill_stores),
                    )),
                    Ok(c) => Ok((s, c)),
                    Err(Error::Script(d)) => Err((
                        "rejected".to_string(),
                        d.first().map(|d| d.to_string()).unwrap_or_default(),
                    )),
                    Err(e) => Err(("failed".to_string(), e.to_string())),
                },
            };
            progress();
            (b.clone(), r)
        })
        .collect()
}

/// A candidate that ran: its median time in milliseconds, the script, the loaded kernel and
/// its binding.
type Timed<S> = (f64, S, Arc<LoadedKernel>, Binding);

/// A candidate loaded and warmed up for timing, or the record of why it could not be.
type Loaded<S> = std::result::Result<(S, Arc<LoadedKernel>), CandidateRecord>;

/// Candidates of the first pass timed again before one is chosen.
const FINALISTS: usize = 3;

/// Interleaved rounds of the final timing.
const FINAL_ROUNDS: usize = 5;

/// How tuning measures and reports.
#[derive(Clone, Debug)]
pub struct TuneOptions {
    /// Untimed runs per candidate.
    pub warmup: usize,
    /// Timed runs per candidate (the median counts).
    pub reps: usize,
    /// Show a progress bar: `None` = only when stderr is a terminal.
    pub progress: Option<bool>,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            warmup: 3,
            reps: 10,
            progress: None,
        }
    }
}

/// The decision for one key, loaded.
pub struct Chosen<S> {
    /// The chosen hyperparameters.
    pub config: S,
    /// Its kernel.
    pub kernel: Arc<LoadedKernel>,
    /// Whether it came from the on-disk table (no compiling or benchmarking in this process).
    pub from_table: bool,
}

/// A tunable script bound to a device; see the module documentation.
pub struct Autotuned<S: Tunable> {
    device: Device,
    identity: String,
    space: Space,
    table_path: PathBuf,
    options: TuneOptions,
    chosen: Mutex<HashMap<Vec<i64>, Arc<Chosen<S>>>>,
    /// Serializes tuning within the process (the table lock does it across processes).
    tuning: Mutex<()>,
    /// Argument positions of the compile-time constants, then of the runtime scalars.
    key_positions: (Vec<usize>, Vec<usize>),
}

impl<S: Tunable> Autotuned<S> {
    /// Binds the script's space to a device.
    pub fn new(device: &Device) -> Result<Autotuned<S>> {
        Self::with_options(device, TuneOptions::default())
    }

    /// Like [`Autotuned::new`] with explicit options.
    pub fn with_options(device: &Device, options: TuneOptions) -> Result<Autotuned<S>> {
        let space = S::space();
        if space.is_empty() {
            return Err(Error::Tuning {
                script: std::any::type_name::<S>().into(),
                candidates: vec![],
            });
        }
        let nvrtc = crate::compile::nvrtc()
            .map(|i| format!("{}.{}", i.version.0, i.version.1))
            .unwrap_or_else(|_| "none".into());
        let (major, minor) = device.compute_capability();
        let identity = format!(
            "gpu={} cc={major}.{minor} driver={} nvrtc={nvrtc}",
            device.name(),
            device.driver_version()
        );
        let first = S::from_binding(&space.bindings()[0]).map_err(|e| Error::Tuning {
            script: std::any::type_name::<S>().into(),
            candidates: vec![(space.bindings()[0].to_string(), e)],
        })?;
        let table_path =
            table::table_path(&first.name(), std::any::type_name::<S>(), &space.describe());
        Ok(Autotuned {
            device: device.clone(),
            identity,
            space,
            table_path,
            options,
            chosen: Mutex::new(HashMap::new()),
            tuning: Mutex::new(()),
            key_positions: (
                <S::Args as ArgList>::const_positions(),
                <S::Args as ArgList>::runtime_scalar_positions(),
            ),
        })
    }

    /// Where the decisions are recorded.
    pub fn table_path(&self) -> &PathBuf {
        &self.table_path
    }

    /// Launches with the best configuration for these arguments, tuning first if this key has
    /// never been seen.
    pub fn launch(&self, stream: &Arc<CudaStream>, args: HostArgs<'_, S::Args>) -> Result<()> {
        let values = <S::Args as ArgList>::host_values(&args, stream);
        let chosen = self.choose(stream, &values)?;
        chosen.kernel.launch(stream, &values)
    }

    /// The decision for these argument values (tuning if needed), without launching.
    pub fn choose(&self, stream: &Arc<CudaStream>, values: &[HostValue]) -> Result<Arc<Chosen<S>>> {
        let int = |i: &usize| values[*i].as_int().unwrap_or(0);
        // The in-memory key (constants, then buckets) on the stack: no allocation per launch.
        let (cpos, spos) = &self.key_positions;
        let mut key_buf = [0i64; 16];
        let n = cpos.len() + spos.len();
        if n <= key_buf.len() {
            for (slot, v) in key_buf.iter_mut().zip(
                cpos.iter()
                    .map(int)
                    .chain(spos.iter().map(|i| bucket(int(i)))),
            ) {
                *slot = v;
            }
            if let Some(c) = self
                .chosen
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&key_buf[..n])
            {
                return Ok(c.clone());
            }
        }
        let consts: Vec<i64> = cpos.iter().map(int).collect();
        let buckets: Vec<i64> = spos.iter().map(|i| bucket(int(i))).collect();
        let mut mem_key = consts.clone();
        mem_key.extend(&buckets);
        let _one_at_a_time = self.tuning.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = self
            .chosen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&mem_key)
        {
            return Ok(c.clone());
        }
        let key = format!("consts={consts:?} buckets={buckets:?} {}", self.identity);
        let c = Arc::new(self.decide(stream, values, &consts, &key)?);
        self.chosen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(mem_key, c.clone());
        Ok(c)
    }

    fn load(&self, config: &S, consts: &[i64]) -> Result<Arc<LoadedKernel>> {
        let compiled = crate::build(config, consts)?;
        Ok(Arc::new(LoadedKernel::load(
            &self.device,
            &compiled,
            crate::arg_names::<S>(),
        )?))
    }

    fn decide(
        &self,
        stream: &Arc<CudaStream>,
        values: &[HostValue],
        consts: &[i64],
        key: &str,
    ) -> Result<Chosen<S>> {
        let lock = TableLock::acquire(&self.table_path);
        if let Some(entry) = table::read(&self.table_path).entries.get(key) {
            if let Ok(config) = S::from_binding(&Binding(entry.chosen.clone())) {
                if let Ok(kernel) = self.load(&config, consts) {
                    tracing::debug!(table = %self.table_path.display(), key, "dispatch from the table");
                    return Ok(Chosen {
                        config,
                        kernel,
                        from_table: true,
                    });
                }
            }
        }
        let started = Instant::now();
        let (entry, best) = self.tune(stream, values, consts)?;
        tracing::info!(key, chosen = %Binding(entry.chosen.clone()), seconds = started.elapsed().as_secs_f64(), "tuned");
        if lock.is_some() {
            if let Err(e) = table::insert(
                &self.table_path,
                std::any::type_name::<S>(),
                &self.space.describe(),
                key,
                entry,
            ) {
                tracing::warn!(error = %e, "could not record the tuning result");
            }
        }
        Ok(best)
    }

    fn tune(
        &self,
        stream: &Arc<CudaStream>,
        values: &[HostValue],
        consts: &[i64],
    ) -> Result<(TableEntry, Chosen<S>)> {
        let bindings = self.space.bindings();
        let show = self
            .options
            .progress
            .unwrap_or_else(|| std::io::stderr().is_terminal());
        let bar = if show {
            // compiling each candidate, then the rounds of timing
            let b = indicatif::ProgressBar::new((bindings.len() + self.options.reps.max(1)) as u64);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "{msg:>12} [{bar:30}] {pos}/{len} {elapsed}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b.set_message(format!(
                "tuning {}",
                std::any::type_name::<S>().rsplit("::").next().unwrap_or("")
            ));
            b
        } else {
            indicatif::ProgressBar::hidden()
        };
        let compiled = compile_candidates::<S>(&bindings, consts, &|| bar.inc(1));
        if compiled.iter().all(|(_, r)| r.is_err()) {
            bar.finish_and_clear();
            return Err(Error::Tuning {
                script: std::any::type_name::<S>().into(),
                candidates: compiled
                    .into_iter()
                    .filter_map(|(b, r)| {
                        r.err()
                            .map(|(status, reason)| (b.to_string(), format!("{status}: {reason}")))
                    })
                    .collect(),
            });
        }
        // Benchmark the survivors on scratch copies of the outputs.
        let mut scratch =
            BenchScratch::new(stream, values, &<S::Args as ArgList>::mutable_positions())?;
        // Every survivor is loaded and warmed up first, then timed round by round (each round
        // runs each candidate once): the card's clocks fall as it heats under its power cap,
        // and timed one after another the first candidates would run on a cooler card than
        // the last.
        let mut outcomes: Vec<(Binding, Loaded<S>)> = vec![];
        for (b, r) in compiled {
            let failed = |status, reason| CandidateRecord::not_run(b.to_string(), status, reason);
            let outcome = match r {
                Err((status, reason)) => Err(failed(status, reason)),
                Ok((s, c)) => LoadedKernel::load(&self.device, &c, crate::arg_names::<S>())
                    .and_then(|k| {
                        scratch.warm_up(stream, &k, self.options.warmup)?;
                        Ok((s, Arc::new(k)))
                    })
                    .map_err(|e| failed("failed".into(), e.to_string())),
            };
            outcomes.push((b, outcome));
        }
        let mut samples: Vec<Vec<f64>> = vec![vec![]; outcomes.len()];
        for _ in 0..self.options.reps.max(1) {
            for (i, (b, outcome)) in outcomes.iter_mut().enumerate() {
                let Ok((_, k)) = outcome else {
                    continue;
                };
                match scratch.time(stream, k, 0, 1) {
                    Ok(ms) => samples[i].push(ms),
                    Err(e) => {
                        let why = e.to_string();
                        *outcome = Err(CandidateRecord::not_run(
                            b.to_string(),
                            "failed".into(),
                            why,
                        ));
                    }
                }
            }
            bar.inc(1);
        }
        let mut records = vec![];
        let mut timed_ok: Vec<Timed<S>> = vec![];
        for ((b, outcome), mut v) in outcomes.into_iter().zip(samples) {
            let rec = match outcome {
                Err(rec) => rec,
                Ok((s, k)) => {
                    v.sort_by(f64::total_cmp);
                    let ms = v[v.len() / 2];
                    tracing::debug!(config = %b, ms, "candidate");
                    timed_ok.push((ms, s, k, b.clone()));
                    CandidateRecord::ran(b.to_string(), ms)
                }
            };
            records.push(rec);
        }
        bar.finish_and_clear();
        let best = self.final_round(stream, &mut scratch, timed_ok)?;
        let Some((_, config, kernel, binding)) = best else {
            return Err(Error::Tuning {
                script: std::any::type_name::<S>().into(),
                candidates: records
                    .into_iter()
                    .map(|r| {
                        (
                            r.config,
                            format!("{}: {}", r.status, r.reason.unwrap_or_default()),
                        )
                    })
                    .collect(),
            });
        };
        let entry = TableEntry {
            chosen: binding.0,
            candidates: records,
        };
        Ok((
            entry,
            Chosen {
                config,
                kernel,
                from_table: false,
            },
        ))
    }

    /// The winner among the first pass's survivors. Candidates a few percent apart can swap
    /// places from one short timing to the next (the card's clocks move with its power cap),
    /// so the leading [`FINALISTS`] are timed again, interleaved round by round so that a
    /// clock change affects them alike, and the lowest median over the rounds wins.
    fn final_round(
        &self,
        stream: &Arc<CudaStream>,
        scratch: &mut BenchScratch,
        mut timed: Vec<Timed<S>>,
    ) -> Result<Option<Timed<S>>> {
        timed.sort_by(|a, b| a.0.total_cmp(&b.0));
        timed.truncate(FINALISTS);
        if timed.len() > 1 {
            let mut samples: Vec<Vec<f64>> = vec![vec![]; timed.len()];
            for _ in 0..FINAL_ROUNDS {
                for (i, (_, _, k, _)) in timed.iter().enumerate() {
                    samples[i].push(scratch.time(stream, k, 1, self.options.reps)?);
                }
            }
            for (t, mut v) in timed.iter_mut().zip(samples) {
                v.sort_by(f64::total_cmp);
                t.0 = v[v.len() / 2];
                tracing::debug!(config = %t.3, ms = t.0, "finalist");
            }
            timed.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        Ok(timed.into_iter().next())
    }
}
