//! cache_bench's flags: gflags syntax (`-name=value`, `--name=value`, `-name value`, `-flag`
//! and `-noflag` for booleans), RocksDB's names and defaults.

use anyhow::{anyhow, bail, Result};

/// Every flag, with RocksDB's defaults.
#[derive(Clone, Debug)]
pub struct CacheBenchFlags {
    pub threads: u32,
    pub cache_size: u64,
    pub num_shard_bits: i32,
    pub cache_type: String,
    pub ops_per_thread: u64,
    pub value_bytes: u32,
    pub value_bytes_estimate: u32,
    pub resident_ratio: f64,
    /// 0: from `cache_size / resident_ratio / value_bytes`.
    pub max_key: u64,
    pub skew: u32,
    pub populate_cache: bool,
    pub pinned_ratio: f64,
    pub lookup_insert_percent: u32,
    pub insert_percent: u32,
    pub blind_insert_percent: u32,
    pub lookup_percent: u32,
    pub erase_percent: u32,
    pub lean: bool,
    pub seed: u64,
    /// Whose caches: `strata`, or `rocksdb` (feature `rocksdb`). Not a flag of RocksDB's
    /// tool, which drives only its own.
    pub engine: String,
}

impl Default for CacheBenchFlags {
    fn default() -> Self {
        CacheBenchFlags {
            threads: 16,
            cache_size: 1 << 30,
            num_shard_bits: -1,
            cache_type: "lru_cache".into(),
            ops_per_thread: 2_000_000,
            value_bytes: 8 << 10,
            value_bytes_estimate: 0,
            resident_ratio: 0.25,
            max_key: 0,
            skew: 5,
            populate_cache: true,
            pinned_ratio: 0.25,
            lookup_insert_percent: 82,
            insert_percent: 2,
            blind_insert_percent: 5,
            lookup_percent: 10,
            erase_percent: 1,
            lean: false,
            seed: 0,
            engine: "strata".into(),
        }
    }
}

/// What `-engine` accepts in this build.
pub(super) const ENGINES: &str = if cfg!(feature = "rocksdb") {
    "choose strata (Strata's caches) or rocksdb (RocksDB's)"
} else {
    "choose strata (Strata's caches); rocksdb needs strata-bench built with --features rocksdb"
};

fn num<T: std::str::FromStr>(name: &str, v: &str) -> Result<T> {
    v.parse().map_err(|_| anyhow!("illegal value '{v}' specified for flag '{name}'"))
}

fn boolean(name: &str, v: &str) -> Result<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "t" | "yes" | "y" | "1" => Ok(true),
        "false" | "f" | "no" | "n" | "0" => Ok(false),
        _ => bail!("illegal value '{v}' specified for bool flag '{name}'"),
    }
}

const BOOLS: &[&str] = &["populate_cache", "lean"];

impl CacheBenchFlags {
    /// Parses the arguments (without the program name). `Ok(None)` for `-help`.
    pub fn parse(args: &[String]) -> Result<Option<Self>> {
        let mut f = CacheBenchFlags::default();
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let Some(body) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')) else {
                bail!("unexpected argument '{arg}' (flags start with -)");
            };
            if body == "help" || body == "helpfull" {
                return Ok(None);
            }
            let (name, value) = match body.split_once('=') {
                Some((n, v)) => (n.to_string(), v.to_string()),
                None if BOOLS.contains(&body) => (body.to_string(), "true".to_string()),
                None => match body.strip_prefix("no").filter(|n| BOOLS.contains(n)) {
                    Some(n) => (n.to_string(), "false".to_string()),
                    None => {
                        let v = it
                            .next()
                            .ok_or_else(|| anyhow!("flag '{body}' is missing its value"))?;
                        (body.to_string(), v.clone())
                    }
                },
            };
            f.set(&name, &value)?;
        }
        f.validate()?;
        Ok(Some(f))
    }

    fn set(&mut self, name: &str, v: &str) -> Result<()> {
        match name {
            "threads" => self.threads = num(name, v)?,
            "cache_size" => self.cache_size = num(name, v)?,
            "num_shard_bits" => self.num_shard_bits = num(name, v)?,
            "cache_type" => self.cache_type = v.to_string(),
            "ops_per_thread" => self.ops_per_thread = num(name, v)?,
            "value_bytes" => self.value_bytes = num(name, v)?,
            "value_bytes_estimate" => self.value_bytes_estimate = num(name, v)?,
            "resident_ratio" => self.resident_ratio = num(name, v)?,
            "max_key" => self.max_key = num(name, v)?,
            "skew" => self.skew = num(name, v)?,
            "populate_cache" => self.populate_cache = boolean(name, v)?,
            "pinned_ratio" => self.pinned_ratio = num(name, v)?,
            "lookup_insert_percent" => self.lookup_insert_percent = num(name, v)?,
            "insert_percent" => self.insert_percent = num(name, v)?,
            "blind_insert_percent" => self.blind_insert_percent = num(name, v)?,
            "lookup_percent" => self.lookup_percent = num(name, v)?,
            "erase_percent" => self.erase_percent = num(name, v)?,
            "lean" => self.lean = boolean(name, v)?,
            "seed" => self.seed = num(name, v)?,
            "engine" => self.engine = v.to_string(),
            _ => bail!("unknown command line flag '{name}'"),
        }
        Ok(())
    }

    fn validate(&self) -> Result<()> {
        let sum = self.lookup_insert_percent
            + self.insert_percent
            + self.blind_insert_percent
            + self.lookup_percent
            + self.erase_percent;
        if sum != 100 {
            bail!("Percentages must add to 100.");
        }
        if self.threads == 0 {
            bail!("-threads must be at least 1");
        }
        if self.value_bytes == 0 {
            bail!("-value_bytes must be at least 1");
        }
        if self.resident_ratio.is_nan() || self.resident_ratio <= 0.0 {
            bail!("-resident_ratio must be positive");
        }
        if !(0.0..=1.0).contains(&self.pinned_ratio) {
            bail!("-pinned_ratio must be within [0, 1]");
        }
        match self.engine.as_str() {
            "strata" => {}
            "rocksdb" if cfg!(feature = "rocksdb") => {}
            other => bail!("-engine={other}: {ENGINES}"),
        }
        Ok(())
    }

    /// The key space: `-max_key`, or RocksDB's derivation from the resident ratio.
    pub fn key_space(&self) -> u64 {
        if self.max_key > 0 {
            return self.max_key;
        }
        ((self.cache_size as f64 / self.resident_ratio / f64::from(self.value_bytes)) as u64).max(1)
    }

    /// Usage text.
    pub fn usage() -> String {
        let d = CacheBenchFlags::default();
        format!(
            "cache_bench: Strata's (or RocksDB's) caches under RocksDB's cache_bench workload.\n\
             Flags (defaults as RocksDB's cache_bench):\n\
             -engine (strata | rocksdb: whose caches; rocksdb needs --features rocksdb; {})\n\
             -threads ({})  -cache_size ({})  -num_shard_bits ({})\n\
             -cache_type (lru_cache | hyper_clock_cache | fixed_hyper_clock_cache | auto_hyper_clock_cache; {})\n\
             -ops_per_thread ({})  -value_bytes ({})  -value_bytes_estimate ({})\n\
             -resident_ratio ({})  -max_key (0 = cache_size/resident_ratio/value_bytes)  -skew ({})\n\
             -populate_cache ({})  -pinned_ratio ({})  -lean ({})  -seed ({})\n\
             -lookup_insert_percent ({})  -insert_percent ({})  -blind_insert_percent ({})\n\
             -lookup_percent ({})  -erase_percent ({})  (must add to 100)\n",
            d.engine, d.threads, d.cache_size, d.num_shard_bits, d.cache_type, d.ops_per_thread,
            d.value_bytes, d.value_bytes_estimate, d.resident_ratio, d.skew, d.populate_cache,
            d.pinned_ratio, d.lean, d.seed, d.lookup_insert_percent, d.insert_percent,
            d.blind_insert_percent, d.lookup_percent, d.erase_percent
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Result<Option<CacheBenchFlags>> {
        CacheBenchFlags::parse(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn gflags_syntax_and_defaults() {
        let f = parse(&[
            "-threads=2",
            "--cache_type=hyper_clock_cache",
            "-ops_per_thread",
            "1000",
            "-nopopulate_cache",
            "-lookup_insert_percent=0",
            "-lookup_percent=90",
            "-insert_percent=5",
            "-blind_insert_percent=0",
            "-erase_percent=5",
        ])
        .unwrap()
        .unwrap();
        assert_eq!((f.threads, f.ops_per_thread, f.populate_cache), (2, 1000, false));
        assert_eq!(f.cache_type, "hyper_clock_cache");
        assert_eq!(f.key_space(), (1u64 << 30) * 4 / 8192);
        assert!(parse(&["-help"]).unwrap().is_none());
    }

    #[test]
    fn bad_input_is_an_error() {
        assert!(parse(&["-lookup_percent=50"]).unwrap_err().to_string().contains("add to 100"));
        assert!(parse(&["-threads=x"]).is_err());
        assert!(parse(&["-bogus=1"]).is_err());
        assert_eq!(parse(&["-engine=rocksdb"]).is_ok(), cfg!(feature = "rocksdb"));
        let e = parse(&["-engine=leveldb"]).unwrap_err().to_string();
        assert!(e.contains("-engine=leveldb") && e.contains("strata"), "{e}");
    }
}
