//! The ptxas resource report: registers, spills, stack and shared memory, read from the
//! `--ptxas-options=-v` lines of the NVRTC log.

use serde::{Deserialize, Serialize};

/// Resources of a compiled kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceReport {
    /// Registers per thread.
    pub registers: u32,
    /// Bytes spilled to local memory (stores).
    pub spill_stores: u32,
    /// Bytes reloaded from local memory.
    pub spill_loads: u32,
    /// Stack frame in bytes.
    pub stack_frame: u32,
    /// Static shared memory in bytes (the planned region is dynamic and reported separately).
    pub static_shared: u32,
    /// Whether ptxas serialized the kernel's wgmmas (its C7510-C7515 notes: registers written
    /// under a product in flight, a wait count it cannot prove, or too few registers), the
    /// first ptxas note naming why: each product then waits for the one before, as slow as a
    /// spill and silent in every other column.
    #[serde(default)]
    pub serialized_wgmma: Option<String>,
}

fn number_before(line: &str, suffix: &str) -> Option<u32> {
    let i = line.find(suffix)?;
    line[..i]
        .split(|c: char| !c.is_ascii_digit())
        .rfind(|s| !s.is_empty())?
        .parse()
        .ok()
}

impl ResourceReport {
    /// Parses the log of one kernel's compilation.
    pub fn parse(log: &str) -> ResourceReport {
        let mut r = ResourceReport::default();
        for line in log.lines() {
            if let Some(v) = number_before(line, " registers") {
                r.registers = v;
            }
            if let Some(v) = number_before(line, " bytes stack frame") {
                r.stack_frame = v;
            }
            if let Some(v) = number_before(line, " bytes spill stores") {
                r.spill_stores = v;
            }
            if let Some(v) = number_before(line, " bytes spill loads") {
                r.spill_loads = v;
            }
            if let Some(v) = number_before(line, " bytes smem") {
                r.static_shared = v;
            }
            if r.serialized_wgmma.is_none()
                && line.contains("wgmma.mma_async instructions are serialized")
            {
                let why = line.split_once("serialized").map_or(line, |(_, why)| why);
                r.serialized_wgmma = Some(why.trim().trim_end_matches('.').to_string());
            }
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_ptxas_lines() {
        let log = "ptxas info    : 0 bytes gmem\n\
                   ptxas info    : Compiling entry function 'k' for 'sm_90a'\n\
                   ptxas info    : Function properties for k\n    \
                   8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
                   ptxas info    : Used 168 registers, used 1 barriers, 16 bytes smem, 400 bytes cmem[0]\n";
        let r = ResourceReport::parse(log);
        assert_eq!(
            r,
            ResourceReport {
                registers: 168,
                spill_stores: 4,
                spill_loads: 12,
                stack_frame: 8,
                static_shared: 16,
                serialized_wgmma: None,
            }
        );
    }

    #[test]
    fn reads_that_ptxas_serialized_the_wgmmas() {
        let log =
            "ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async instructions \
                   are serialized due to the presence of Extern calls in the function 'k'.\n\
                   ptxas info    : Used 96 registers\n";
        let r = ResourceReport::parse(log);
        assert_eq!(r.registers, 96);
        assert_eq!(
            r.serialized_wgmma.as_deref(),
            Some("due to the presence of Extern calls in the function 'k'")
        );
        assert_eq!(
            ResourceReport::parse("ptxas info    : Used 96 registers\n").serialized_wgmma,
            None
        );
    }
}
