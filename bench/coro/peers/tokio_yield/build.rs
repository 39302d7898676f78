// Build script of the Tokio peer of bench/coro/yield_bench: records the resolved Tokio
// version (from Cargo.lock) and the rustc version, for the "library" and "compiler" fields
// of the benchmark JSON context.
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=Cargo.lock");
    println!("cargo:rerun-if-changed=build.rs");
    let lock = std::fs::read_to_string("Cargo.lock").unwrap_or_default();
    let mut tokio = String::from("unknown");
    let mut in_tokio = false;
    for line in lock.lines() {
        let line = line.trim();
        if line == "[[package]]" {
            in_tokio = false;
        } else if line == "name = \"tokio\"" {
            in_tokio = true;
        } else if in_tokio {
            if let Some(v) = line.strip_prefix("version = \"") {
                tokio = v.trim_end_matches('"').to_string();
            }
        }
    }
    println!("cargo:rustc-env=TOKIO_YIELD_TOKIO_VERSION={}", tokio);
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "rustc (unknown)".to_string());
    println!("cargo:rustc-env=TOKIO_YIELD_RUSTC_VERSION={}", version);
}
