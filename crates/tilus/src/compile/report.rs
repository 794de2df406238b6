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
                static_shared: 16
            }
        );
    }
}
