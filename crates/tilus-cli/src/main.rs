//! The `tilus` command over the built-in kernels: the tutorial series and the kernel library.

fn main() -> std::process::ExitCode {
    tilus_cli::main(tilus_bench::registry::Registry::builtin())
}
