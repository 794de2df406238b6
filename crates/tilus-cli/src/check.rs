//! `tilus check`: every configuration of a search space through the whole compiler, NVRTC
//! included, with the resources each needs or the reason it fails.

use crate::out::{outln, CliError, CliResult};
use rayon::prelude::*;
use tilus::Error;
use tilus_bench::registry::Entry;
use tilus_bench::size::Size;

/// One configuration's outcome.
pub struct Outcome {
    /// `name=value` pairs.
    pub config: String,
    /// Whether it compiled without spilling and with its wgmmas asynchronous.
    pub ok: bool,
    /// `ok`, `spills`, `serialized` (ptxas made each wgmma wait for the one before),
    /// `rejected` (by the verifier) or `failed` (by NVRTC).
    pub status: &'static str,
    /// Registers per thread.
    pub registers: Option<u32>,
    /// Bytes spilled.
    pub spills: Option<u32>,
    /// Dynamic shared memory in bytes.
    pub smem: Option<u32>,
    /// Blocks per multiprocessor.
    pub blocks: Option<u32>,
    /// SASS instructions (the machine code's bytes over 16).
    pub instructions: Option<u32>,
    /// Seconds NVRTC took (0 from the cache).
    pub seconds: f64,
    /// Why it failed.
    pub reason: String,
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or("").to_string()
}

/// Compiles one configuration.
pub fn compile_one(script: &dyn tilus::lang::DynScript, consts: &[i64]) -> Outcome {
    let config = script.config();
    let mut o = Outcome {
        config,
        ok: false,
        status: "failed",
        registers: None,
        spills: None,
        smem: None,
        blocks: None,
        instructions: None,
        seconds: 0.0,
        reason: String::new(),
    };
    let result = script
        .trace(consts)
        .and_then(tilus::passes::compile_program)
        .and_then(|(p, plan)| tilus::compile::compile(&p, &plan));
    match result {
        Ok(c) => {
            o.registers = Some(c.report.registers);
            o.spills = Some(c.report.spill_stores);
            o.smem = Some(c.plan.smem_bytes);
            o.blocks = Some(c.blocks_per_sm());
            o.instructions = (c.report.code_bytes > 0).then_some(c.report.code_bytes / 16);
            o.seconds = c.compile_seconds;
            if c.report.spill_stores > 0 {
                o.status = "spills";
                o.reason = format!(
                    "ptxas spills {} bytes to local memory",
                    c.report.spill_stores
                );
            } else if let Some(why) = c.report.serialized_wgmma {
                o.status = "serialized";
                o.reason = format!("ptxas serializes the wgmmas {why}");
            } else {
                o.ok = true;
                o.status = "ok";
            }
        }
        Err(Error::Script(d)) => {
            o.status = "rejected";
            o.reason = d.first().map(|d| d.message.clone()).unwrap_or_default();
        }
        Err(Error::Compile { log, .. }) => {
            o.reason = first_line(log.lines().find(|l| l.contains("error")).unwrap_or(&log));
        }
        Err(e) => o.reason = e.to_string(),
    }
    o
}

/// Runs the check and prints the table. Succeeds when the compiler itself worked and at least
/// one configuration compiles (configurations that are rejected, spill or have their wgmmas
/// serialized are reported, not errors; nothing compiling is a failure).
pub fn run(entry: &Entry, size: &Size) -> CliResult<bool> {
    tilus::compile::nvrtc()?;
    let consts = (entry.consts)(size);
    let space = (entry.space)();
    outln!(
        "{}: {} configurations at {size}, NVRTC for sm_90a",
        entry.name,
        space.len()
    );
    let outcomes: Vec<Outcome> = space
        .par_iter()
        .map(|s| compile_one(s.as_ref(), &consts))
        .collect();
    let opt = |v: Option<u32>| v.map(|x| x.to_string()).unwrap_or_else(|| "-".into());
    outln!(
        "{:<34} {:<9} {:>5} {:>7} {:>9} {:>9} {:>6} {:>8}  reason",
        "config",
        "status",
        "regs",
        "spills",
        "smem (B)",
        "blocks/SM",
        "SASS",
        "nvrtc(s)"
    );
    for o in &outcomes {
        outln!(
            "{:<34} {:<9} {:>5} {:>7} {:>9} {:>9} {:>6} {:>8.2}  {}",
            o.config,
            o.status,
            opt(o.registers),
            opt(o.spills),
            opt(o.smem),
            opt(o.blocks),
            opt(o.instructions),
            o.seconds,
            o.reason
        );
    }
    let ok = outcomes.iter().filter(|o| o.ok).count();
    outln!(
        "{ok} of {} configurations compile without spills or serialized wgmmas",
        outcomes.len()
    );
    let failed = outcomes.iter().filter(|o| o.status == "failed").count();
    let compiled = outcomes.iter().filter(|o| o.registers.is_some()).count();
    if failed > 0 {
        return Err(CliError::Failed(format!(
            "NVRTC failed on {failed} of {} configurations of {} at {size}",
            outcomes.len(),
            entry.name
        )));
    }
    if compiled == 0 {
        return Err(CliError::Failed(format!(
            "no configuration of {} compiles at {size}",
            entry.name
        )));
    }
    Ok(true)
}
