//! The `tilus` command as a user runs it, in a cache directory of its own, with no GPU
//! visible: what a new user meets (`front_door`), the main job (`flagship`), and every
//! subcommand with malformed arguments and readers that go away early (`robustness`). The harness that runs the
//! binary and classifies how it ended is `../common`.

#[path = "../common/mod.rs"]
mod common;

mod flagship;
mod front_door;
mod robustness;
mod walkthrough;
