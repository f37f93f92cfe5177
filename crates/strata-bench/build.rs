//! strata-bench's build script. Without the `rocksdb` feature it does nothing. With it, it
//! compiles `src/cache_bench/rocks_cache_shim.cc` (cache_bench's bridge to RocksDB's block
//! caches, which neither the `rocksdb` crate nor RocksDB's C API can insert into or look up
//! in) against the headers of the RocksDB that `librocksdb-sys` builds, with the defines and
//! C++ standard that crate compiles RocksDB with. The shim links against the static RocksDB
//! library `librocksdb-sys` already links: RocksDB is not built a second time.
//!
//! With `leveldb` or `kyoto` it finds the system's LevelDB or Kyoto Cabinet (their C APIs,
//! declared in `src/engine/leveldb.rs` and `src/engine/kyoto.rs`) and links it; a missing
//! library stops the build with the package to install, not a linker error.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "rocksdb")]
    rocks_shim::build();
    #[cfg(feature = "leveldb")]
    system_lib::link(&system_lib::LEVELDB);
    #[cfg(feature = "kyoto")]
    system_lib::link(&system_lib::KYOTO);
}

/// Finding and linking a system C library: `<PREFIX>_LIB_DIR` / `<PREFIX>_INCLUDE_DIR` when
/// set, else `pkg-config`, else the compiler's default directories, where the header must be.
#[cfg(any(feature = "leveldb", feature = "kyoto"))]
mod system_lib {
    use std::env;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    pub struct Lib {
        /// The cargo feature.
        pub feature: &'static str,
        /// The library's name for `-l`.
        pub name: &'static str,
        /// Its pkg-config name, if it ships a `.pc` file.
        pub pkg_config: Option<&'static str>,
        /// The C API header, relative to an include directory.
        pub header: &'static str,
        /// Environment variable prefix of the overrides.
        pub env_prefix: &'static str,
        /// Debian's development package.
        pub debian: &'static str,
    }

    #[cfg(feature = "leveldb")]
    pub const LEVELDB: Lib = Lib {
        feature: "leveldb",
        name: "leveldb",
        // Debian's libleveldb-dev ships no .pc file; other systems may.
        pkg_config: Some("leveldb"),
        header: "leveldb/c.h",
        env_prefix: "LEVELDB",
        debian: "libleveldb-dev",
    };

    #[cfg(feature = "kyoto")]
    pub const KYOTO: Lib = Lib {
        feature: "kyoto",
        name: "kyotocabinet",
        pkg_config: Some("kyotocabinet"),
        header: "kclangc.h",
        env_prefix: "KYOTOCABINET",
        debian: "libkyotocabinet-dev",
    };

    pub fn link(lib: &Lib) {
        let lib_var = format!("{}_LIB_DIR", lib.env_prefix);
        let inc_var = format!("{}_INCLUDE_DIR", lib.env_prefix);
        println!("cargo:rerun-if-env-changed={lib_var}");
        println!("cargo:rerun-if-env-changed={inc_var}");
        if let Some(dir) = env::var_os(&lib_var) {
            let inc = env::var_os(&inc_var).map(PathBuf::from);
            if let Some(inc) = &inc {
                require_header(lib, std::slice::from_ref(inc));
            }
            println!("cargo:rustc-link-search=native={}", Path::new(&dir).display());
            println!("cargo:rustc-link-lib={}", lib.name);
            return;
        }
        if let Some(pc) = lib.pkg_config {
            if let Some(flags) = pkg_config_libs(pc) {
                let (mut searched, mut linked) = (Vec::new(), false);
                for f in flags.split_whitespace() {
                    if let Some(d) = f.strip_prefix("-L") {
                        searched.push(d.to_string());
                        println!("cargo:rustc-link-search=native={d}");
                    } else if let Some(l) = f.strip_prefix("-l") {
                        linked |= l == lib.name;
                        println!("cargo:rustc-link-lib={l}");
                    }
                }
                if !linked {
                    println!("cargo:rustc-link-lib={}", lib.name);
                }
                return;
            }
        }
        let dirs: Vec<PathBuf> = ["/usr/include", "/usr/local/include", "/opt/homebrew/include"]
            .iter()
            .map(PathBuf::from)
            .collect();
        require_header(lib, &dirs);
        println!("cargo:rustc-link-lib={}", lib.name);
    }

    fn pkg_config_libs(name: &str) -> Option<String> {
        let out = Command::new("pkg-config").args(["--libs", name]).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn require_header(lib: &Lib, dirs: &[PathBuf]) {
        if dirs.iter().any(|d| d.join(lib.header).is_file()) {
            return;
        }
        panic!(
            "strata-bench (feature {}): {} not found in {}: install {}'s development files \
             (Debian: `apt-get install -y {}`, or `bash bench/setup-peers.sh`), or set \
             {}_LIB_DIR and {}_INCLUDE_DIR",
            lib.feature,
            lib.header,
            dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "),
            lib.name,
            lib.debian,
            lib.env_prefix,
            lib.env_prefix,
        );
    }
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
