//! Records the git commit the engine is built from (`STRATA_GIT_SHA`) for the info LOG's
//! `Git sha` line; outside a git checkout the LOG says `unknown`.

use std::path::Path;
use std::process::Command;

fn main() {
    let sha = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if let Some(sha) = sha {
        println!("cargo:rustc-env=STRATA_GIT_SHA={sha}");
    }
    // Re-run when the checked-out commit changes (only paths that exist: a missing one would
    // make cargo re-run the script, and rebuild the engine, on every build).
    for p in ["../../.git/HEAD", "../../.git/refs/heads", "../../.git/packed-refs"] {
        if Path::new(p).exists() {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
