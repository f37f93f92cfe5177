//! strata-bench's build script. Without the `rocksdb` feature it does nothing. With it, it
//! compiles `src/cache_bench/rocks_cache_shim.cc` (cache_bench's bridge to RocksDB's block
//! caches, which neither the `rocksdb` crate nor RocksDB's C API can insert into or look up
//! in) against the headers of the RocksDB that `librocksdb-sys` builds, with the defines and
//! C++ standard that crate compiles RocksDB with. The shim links against the static RocksDB
//! library `librocksdb-sys` already links: RocksDB is not built a second time.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "rocksdb")]
    rocks_shim::build();
}

#[cfg(feature = "rocksdb")]
mod rocks_shim {
    use std::env;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    const SHIM: &str = "src/cache_bench/rocks_cache_shim.cc";

    pub fn build() {
        println!("cargo:rerun-if-changed={SHIM}");
        println!("cargo:rerun-if-env-changed=ROCKSDB_INCLUDE_DIR");
        println!("cargo:rerun-if-env-changed=ROCKSDB_CXX_STD");
        let include = include_dir();
        let target = env::var("TARGET").unwrap_or_default();
        let mut b = cc::Build::new();
        b.cpp(true).file(SHIM).include(&include);
        // The defines and standard librocksdb-sys compiles RocksDB with (its build.rs): the
        // headers' inline code and class layouts must match the library's.
        b.define("NDEBUG", Some("1")).define("HAVE_ALIGNED_NEW", None);
        if !target.contains("msvc") {
            b.define("HAVE_UINT128_EXTENSION", None);
        }
        let os = if target.contains("linux") {
            Some("OS_LINUX")
        } else if target.contains("darwin") {
            Some("OS_MACOSX")
        } else if target.contains("freebsd") {
            Some("OS_FREEBSD")
        } else {
            None
        };
        if let Some(os) = os {
            b.define(os, None)
                .define("ROCKSDB_PLATFORM_POSIX", None)
                .define("ROCKSDB_LIB_IO_POSIX", None);
        }
        if target.contains("msvc") {
            b.flag("-EHsc").flag("-std:c++20");
        } else {
            b.flag(cxx_standard());
            b.flag("-include").flag("cstdint");
            for w in ["-Wno-unused-parameter", "-Wno-invalid-offsetof", "-Wno-strict-aliasing"] {
                b.flag(w);
            }
        }
        b.compile("strata_rocks_cache_shim");
    }

    /// librocksdb-sys's rule: `ROCKSDB_CXX_STD`, else C++20.
    fn cxx_standard() -> String {
        match env::var("ROCKSDB_CXX_STD") {
            Ok(s) if s.starts_with("-std=") => s,
            Ok(s) => format!("-std={s}"),
            Err(_) => "-std=c++20".to_string(),
        }
    }

    /// RocksDB's `include/` directory: `ROCKSDB_INCLUDE_DIR` (what librocksdb-sys itself
    /// honours), else the source tree of the librocksdb-sys this build links, found through
    /// the `DEP_ROCKSDB_CARGO_MANIFEST_DIR` it exports (it has `links = "rocksdb"`), else
    /// through `cargo metadata`.
    fn include_dir() -> PathBuf {
        if let Some(dir) = env::var_os("ROCKSDB_INCLUDE_DIR") {
            return checked(PathBuf::from(dir), "ROCKSDB_INCLUDE_DIR");
        }
        if let Some(dir) = env::var_os("DEP_ROCKSDB_CARGO_MANIFEST_DIR") {
            return checked(
                Path::new(&dir).join("rocksdb/include"),
                "DEP_ROCKSDB_CARGO_MANIFEST_DIR (librocksdb-sys's source)",
            );
        }
        match manifest_dir_from_metadata() {
            Ok(dir) => checked(dir.join("rocksdb/include"), "cargo metadata's librocksdb-sys"),
            Err(e) => panic!(
                "strata-bench (feature rocksdb): cannot find RocksDB's headers for \
                 {SHIM}: librocksdb-sys exported no DEP_ROCKSDB_CARGO_MANIFEST_DIR and \
                 `cargo metadata` failed: {e}. Set ROCKSDB_INCLUDE_DIR to the include/ \
                 directory of the RocksDB librocksdb-sys builds."
            ),
        }
    }

    fn checked(dir: PathBuf, from: &str) -> PathBuf {
        let header = dir.join("rocksdb/advanced_cache.h");
        assert!(
            header.is_file(),
            "strata-bench (feature rocksdb): {} (from {from}) is not RocksDB's include \
             directory: {} is missing. Set ROCKSDB_INCLUDE_DIR to the include/ directory of \
             the RocksDB librocksdb-sys builds.",
            dir.display(),
            header.display()
        );
        dir
    }

    /// librocksdb-sys's directory from `$CARGO metadata` (offline: the package is already
    /// downloaded, since it is being built).
    fn manifest_dir_from_metadata() -> Result<PathBuf, String> {
        let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let manifest = Path::new(&env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?)
            .join("Cargo.toml");
        let out = Command::new(&cargo)
            // Optional dependencies are listed only with their feature on.
            .args(["metadata", "--format-version", "1", "--offline", "--features", "rocksdb"])
            .arg("--manifest-path")
            .arg(&manifest)
            .output()
            .map_err(|e| format!("running {cargo}: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{cargo} metadata exited with {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        // Every package's `"manifest_path":"..."`; librocksdb-sys's directory is named
        // `librocksdb-sys-<version>`.
        let key = "\"manifest_path\":\"";
        text.match_indices(key)
            .filter_map(|(i, _)| {
                let rest = &text[i + key.len()..];
                rest.find('"').map(|end| PathBuf::from(&rest[..end]))
            })
            .filter_map(|p| p.parent().map(Path::to_path_buf))
            .find(|dir| {
                dir.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("librocksdb-sys-"))
            })
            .ok_or_else(|| "no librocksdb-sys package in its output".to_string())
    }
}
