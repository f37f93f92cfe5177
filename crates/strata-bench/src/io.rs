//! I/O accounting of one benchmark step (`docs/db_bench.md`, "I/O accounting"): the storage
//! traffic of the process and of the block device that holds `--db`, sampled when the step's
//! threads start and after they finish, printed as one `I/O:` line after the result line.
//!
//! Sources (Linux):
//! - `/proc/self/io` of the whole process (every thread, the engine's background threads
//!   included): `read_bytes`/`write_bytes` are the bytes this process made the block layer
//!   read and write (buffered writes count when the page is dirtied; page-cache hits and
//!   `O_DIRECT` are accounted alike), `syscr`/`syscw` the read/write system calls (cache hits
//!   included).
//! - `/sys/dev/block/<major>:<minor>/stat` of the device holding the DB (a disk, a partition or
//!   a device-mapper device: each has its own counters): fields 1, 3, 5, 7 are reads completed,
//!   sectors read, writes completed, sectors written, in 512-byte sectors whatever the device's
//!   sector size. They count every process using the device, so a step's device figures are
//!   exact only on an otherwise idle device.
//!
//! Columns: `rps` (device reads/s), `rmbps` (process MB read/s), `rpo` (device reads per
//! operation of the step), `io_eff` (`rps` / the fio baseline's read IOPS given by
//! `--fio_baseline_iops`), `wps` (device writes/s), `wmbps` (process MB written/s); MB is 2^20
//! bytes. A figure whose source is unavailable prints as `-`, and the line says why.
//!
//! The line ends with the process's CPU time over the step (`getrusage(RUSAGE_SELF)`, every
//! thread, background ones included): `cpu: user_us=<µs> sys_us=<µs> us_per_op=<µs>`, the
//! last being (user + system) over the step's operations (the readers' in the *whilewriting*
//! benchmarks, whose writer and compactions are in the numerator).

use std::fmt::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The counters of `/proc/<pid>/io` this module uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcIo {
    pub syscr: u64,
    pub syscw: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// Parses the text of `/proc/<pid>/io` (`name: value` lines).
pub fn parse_proc_io(text: &str) -> Result<ProcIo, String> {
    let mut io = ProcIo::default();
    let mut seen = 0u8;
    for line in text.lines() {
        let Some((name, value)) = line.split_once(':') else { continue };
        let slot = match name.trim() {
            "syscr" => (&mut io.syscr, 1),
            "syscw" => (&mut io.syscw, 2),
            "read_bytes" => (&mut io.read_bytes, 4),
            "write_bytes" => (&mut io.write_bytes, 8),
            _ => continue,
        };
        *slot.0 = value.trim().parse().map_err(|_| {
            format!(
                "/proc/self/io: field {} is '{}', expected an integer",
                name.trim(),
                value.trim()
            )
        })?;
        seen |= slot.1;
    }
    if seen != 15 {
        return Err(format!(
            "/proc/self/io lacks one of syscr, syscw, read_bytes, write_bytes (kernel without \
             task I/O accounting?): got {text:?}"
        ));
    }
    Ok(io)
}

/// The counters of a block device's `stat` file this module uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevStat {
    pub reads: u64,
    pub sectors_read: u64,
    pub writes: u64,
    pub sectors_written: u64,
}

/// Parses a `/sys/block/<dev>/stat` line (whitespace-separated counters; at least 7 fields).
pub fn parse_dev_stat(text: &str) -> Result<DevStat, String> {
    let f: Vec<&str> = text.split_whitespace().collect();
    let field = |i: usize| -> Result<u64, String> {
        let t = f.get(i).ok_or_else(|| {
            format!("block device stat has {} fields, expected at least 7: {text:?}", f.len())
        })?;
        t.parse()
            .map_err(|_| format!("block device stat field {} is '{t}', expected an integer", i + 1))
    };
    Ok(DevStat {
        reads: field(0)?,
        sectors_read: field(2)?,
        writes: field(4)?,
        sectors_written: field(6)?,
    })
}

/// Linux's `dev_t` split into (major, minor) (glibc's `gnu_dev_major`/`gnu_dev_minor`).
pub fn major_minor(dev: u64) -> (u64, u64) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major, minor)
}

/// The block device whose counters a step reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Device {
    /// Kernel name, with what it is: `vda`, `nvme0n1p2 (partition of nvme0n1)`,
    /// `dm-0 (device-mapper vg-root)`.
    pub name: String,
    pub major: u64,
    pub minor: u64,
    pub stat_path: PathBuf,
}

/// The nearest existing ancestor of `path` (the DB directory may not exist yet).
fn existing_ancestor(path: &Path) -> Option<&Path> {
    path.ancestors().find(|p| !p.as_os_str().is_empty() && p.exists())
}

/// The block device holding `db`, found from the `st_dev` of the DB path (or of its nearest
/// existing parent) through `sys` (normally `/sys`). The error says why there is none.
pub fn resolve_device(db: &Path, sys: &Path) -> Result<Device, String> {
    let anchor = existing_ancestor(db).unwrap_or(Path::new("."));
    let md =
        std::fs::metadata(anchor).map_err(|e| format!("cannot stat {}: {e}", anchor.display()))?;
    let (major, minor) = major_minor(md.dev());
    if major == 0 {
        return Err(format!(
            "{} is on a file system with no block device (st_dev {major}:{minor}: tmpfs, \
             overlayfs, btrfs, NFS, ...)",
            anchor.display()
        ));
    }
    let link = sys.join(format!("dev/block/{major}:{minor}"));
    let real = std::fs::canonicalize(&link)
        .map_err(|e| format!("no {} for {} ({e})", link.display(), anchor.display()))?;
    let stat_path = real.join("stat");
    if !stat_path.is_file() {
        return Err(format!("{} does not exist", stat_path.display()));
    }
    let kname = real.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut name = kname.clone();
    if real.join("partition").is_file() {
        if let Some(parent) = real.parent().and_then(Path::file_name) {
            let _ = write!(name, " (partition of {})", parent.to_string_lossy());
        }
    } else if let Ok(dm) = std::fs::read_to_string(real.join("dm/name")) {
        let _ = write!(name, " (device-mapper {})", dm.trim());
    }
    Ok(Device { name, major, minor, stat_path })
}

/// One reading of every available counter.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub at: Instant,
    pub proc: Option<ProcIo>,
    pub dev: Option<DevStat>,
    /// The process's CPU time so far, user and system, in microseconds.
    pub cpu: Option<CpuTime>,
}

/// User and system CPU time in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTime {
    pub user_us: u64,
    pub sys_us: u64,
}

/// The whole process's CPU time (`getrusage(RUSAGE_SELF)`).
pub fn process_cpu() -> Option<CpuTime> {
    // SAFETY: a zeroed rusage is a valid value for the call to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer to a rusage the call may write.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return None;
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Some(CpuTime { user_us: us(ru.ru_utime), sys_us: us(ru.ru_stime) })
}

/// Reads the counters for the steps of one run.
#[derive(Debug)]
pub struct Sampler {
    device: Result<Device, String>,
    proc_error: Option<String>,
    /// `--fio_baseline_iops` (0: none).
    fio_iops: f64,
}

impl Sampler {
    /// Resolves the device of `db` once; `fio_iops` is the baseline's read IOPS (0: none).
    pub fn new(db: &Path, fio_iops: f64) -> Sampler {
        let device = resolve_device(db, Path::new("/sys"));
        let proc_error = std::fs::read_to_string("/proc/self/io")
            .map_err(|e| format!("cannot read /proc/self/io: {e}"))
            .and_then(|t| parse_proc_io(&t))
            .err();
        Sampler { device, proc_error, fio_iops }
    }

    /// One line for the run's header: where the counters come from, or why they are missing.
    pub fn describe(&self) -> String {
        let dev = match &self.device {
            Ok(d) => {
                format!("device {} ({}:{}, {})", d.name, d.major, d.minor, d.stat_path.display())
            }
            Err(e) => format!("device counters unavailable: {e}"),
        };
        let proc = match &self.proc_error {
            None => "process counters /proc/self/io".to_string(),
            Some(e) => format!("process counters unavailable: {e}"),
        };
        format!("I/O accounting: {dev}; {proc}")
    }

    pub fn sample(&self) -> Sample {
        let proc = if self.proc_error.is_none() {
            std::fs::read_to_string("/proc/self/io").ok().and_then(|t| parse_proc_io(&t).ok())
        } else {
            None
        };
        let dev = self
            .device
            .as_ref()
            .ok()
            .and_then(|d| std::fs::read_to_string(&d.stat_path).ok())
            .and_then(|t| parse_dev_stat(&t).ok());
        Sample { at: Instant::now(), proc, dev, cpu: process_cpu() }
    }

    /// The step's figures between two samples, over `ops` operations.
    pub fn step(&self, before: &Sample, after: &Sample, ops: u64) -> StepIo {
        let secs = after.at.duration_since(before.at).as_secs_f64();
        StepIo::between(
            before,
            after,
            secs,
            ops,
            self.fio_iops,
            self.device.as_ref().err().cloned(),
        )
    }
}

/// The I/O of one step.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepIo {
    pub secs: f64,
    pub ops: u64,
    pub proc: Option<ProcIo>,
    pub dev: Option<DevStat>,
    pub fio_iops: f64,
    /// Why `dev` is `None`, when it is known.
    pub dev_error: Option<String>,
    /// The process's CPU time over the step.
    pub cpu: Option<CpuTime>,
}

const MB: f64 = 1048576.0;

impl StepIo {
    fn between(
        before: &Sample,
        after: &Sample,
        secs: f64,
        ops: u64,
        fio_iops: f64,
        dev_error: Option<String>,
    ) -> StepIo {
        let proc = match (before.proc, after.proc) {
            (Some(b), Some(a)) => Some(ProcIo {
                syscr: a.syscr.saturating_sub(b.syscr),
                syscw: a.syscw.saturating_sub(b.syscw),
                read_bytes: a.read_bytes.saturating_sub(b.read_bytes),
                write_bytes: a.write_bytes.saturating_sub(b.write_bytes),
            }),
            _ => None,
        };
        let dev = match (before.dev, after.dev) {
            (Some(b), Some(a)) => Some(DevStat {
                reads: a.reads.saturating_sub(b.reads),
                sectors_read: a.sectors_read.saturating_sub(b.sectors_read),
                writes: a.writes.saturating_sub(b.writes),
                sectors_written: a.sectors_written.saturating_sub(b.sectors_written),
            }),
            _ => None,
        };
        let cpu = match (before.cpu, after.cpu) {
            (Some(b), Some(a)) => Some(CpuTime {
                user_us: a.user_us.saturating_sub(b.user_us),
                sys_us: a.sys_us.saturating_sub(b.sys_us),
            }),
            _ => None,
        };
        StepIo { secs, ops, proc, dev, fio_iops, dev_error, cpu }
    }

    fn per_sec(&self, v: f64) -> Option<f64> {
        (self.secs > 0.0).then(|| v / self.secs)
    }

    /// Device reads per second.
    pub fn rps(&self) -> Option<f64> {
        self.per_sec(self.dev?.reads as f64)
    }

    /// Process MB read from storage per second.
    pub fn rmbps(&self) -> Option<f64> {
        self.per_sec(self.proc?.read_bytes as f64 / MB)
    }

    /// Device reads per operation.
    pub fn rpo(&self) -> Option<f64> {
        (self.ops > 0).then_some(())?;
        Some(self.dev?.reads as f64 / self.ops as f64)
    }

    /// Device read IOPS / the fio baseline's.
    pub fn io_eff(&self) -> Option<f64> {
        (self.fio_iops > 0.0).then_some(())?;
        Some(self.rps()? / self.fio_iops)
    }

    /// User and system CPU time per operation, in microseconds.
    pub fn user_sys_us_per_op(&self) -> Option<(f64, f64)> {
        let c = self.cpu?;
        let n = self.ops as f64;
        (self.ops > 0).then(|| (c.user_us as f64 / n, c.sys_us as f64 / n))
    }

    /// CPU time (user + system) per operation, in microseconds.
    pub fn cpu_us_per_op(&self) -> Option<f64> {
        self.user_sys_us_per_op().map(|(u, y)| u + y)
    }

    /// Device writes per second.
    pub fn wps(&self) -> Option<f64> {
        self.per_sec(self.dev?.writes as f64)
    }

    /// Process MB written to storage per second.
    pub fn wmbps(&self) -> Option<f64> {
        self.per_sec(self.proc?.write_bytes as f64 / MB)
    }

    /// The `I/O:` line: `key=value` pairs (`-` where unavailable), then the raw counts.
    pub fn line(&self) -> String {
        let f = |v: Option<f64>, prec: usize| {
            v.map_or_else(|| "-".to_string(), |x| format!("{x:.prec$}"))
        };
        let mut s = format!(
            "I/O: rps={} rmbps={} rpo={} io_eff={} wps={} wmbps={} secs={:.3}",
            f(self.rps(), 1),
            f(self.rmbps(), 2),
            f(self.rpo(), 3),
            f(self.io_eff(), 3),
            f(self.wps(), 1),
            f(self.wmbps(), 2),
            self.secs
        );
        match self.proc {
            Some(p) => {
                let _ = write!(
                    s,
                    " process: read_bytes={} write_bytes={} syscr={} syscw={}",
                    p.read_bytes, p.write_bytes, p.syscr, p.syscw
                );
            }
            None => s.push_str(" process: unavailable"),
        }
        match (self.dev, &self.dev_error) {
            (Some(d), _) => {
                let _ = write!(
                    s,
                    " device: reads={} read_mb={:.1} writes={} write_mb={:.1}",
                    d.reads,
                    d.sectors_read as f64 * 512.0 / MB,
                    d.writes,
                    d.sectors_written as f64 * 512.0 / MB
                );
            }
            (None, Some(e)) => {
                let _ = write!(s, " device: unavailable ({e})");
            }
            (None, None) => s.push_str(" device: unavailable"),
        }
        match self.cpu {
            Some(c) => {
                let per_op = self.cpu_us_per_op().map_or_else(|| "-".into(), |v| format!("{v:.3}"));
                let _ =
                    write!(s, " cpu: user_us={} sys_us={} us_per_op={per_op}", c.user_us, c.sys_us);
                if let Some((u, y)) = self.user_sys_us_per_op() {
                    let _ = write!(s, " user_us_per_op={u:.3} sys_us_per_op={y:.3}");
                }
            }
            None => s.push_str(" cpu: unavailable"),
        }
        if self.fio_iops <= 0.0 {
            s.push_str(" (io_eff: no --fio_baseline_iops)");
        }
        s.push('\n');
        s
    }
}

/// The six columns of an `I/O:` line, `None` where it printed `-`, the CPU time per operation
/// it ends with, and, against a baseline that measured fio's CPU ([`BracketingBaseline`]),
/// the CPU the engine adds per storage read over fio's (seed 002's `us.inc` and `cpu.inc`,
/// which it takes per query at one read per query: here the CPU per operation over `rpo`).
/// Per read, because then, with fio's time per read `L` (1 / its IOPS), a one-thread step's
/// `io_eff` is about `L / (L + cpu_inc)` whatever its reads per operation.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IoColumns {
    pub rps: Option<f64>,
    pub rmbps: Option<f64>,
    pub rpo: Option<f64>,
    pub io_eff: Option<f64>,
    pub wps: Option<f64>,
    pub wmbps: Option<f64>,
    /// User CPU µs per operation (the whole process: background threads included).
    pub user_op: Option<f64>,
    /// System CPU µs per operation.
    pub sys_op: Option<f64>,
    /// fio's user and system CPU µs per read, from the baseline the columns were rebased on.
    pub fio_cpu: Option<(f64, f64)>,
}

impl IoColumns {
    /// Parses a line written by [`StepIo::line`]; `None` if it is not one.
    pub fn parse(line: &str) -> Option<IoColumns> {
        let rest = line.strip_prefix("I/O: ")?;
        let mut c = IoColumns::default();
        for tok in rest.split_whitespace() {
            let Some((k, v)) = tok.split_once('=') else { continue };
            let v = v.parse::<f64>().ok();
            match k {
                "rps" => c.rps = v,
                "rmbps" => c.rmbps = v,
                "rpo" => c.rpo = v,
                "io_eff" => c.io_eff = v,
                "wps" => c.wps = v,
                "wmbps" => c.wmbps = v,
                _ => {}
            }
            if k == "secs" {
                break; // the raw counts after it reuse some names
            }
        }
        if let Some((_, cpu)) = rest.split_once(" cpu: ") {
            for tok in cpu.split_whitespace() {
                let Some((k, v)) = tok.split_once('=') else { continue };
                match k {
                    "user_us_per_op" => c.user_op = v.parse::<f64>().ok(),
                    "sys_us_per_op" => c.sys_op = v.parse::<f64>().ok(),
                    _ => {}
                }
            }
        }
        Some(c)
    }

    /// `io_eff` against a baseline taken around the step ([`BracketingBaseline`]) instead of
    /// the one before it, and fio's CPU per read from it.
    pub fn rebased(mut self, b: BracketingBaseline) -> IoColumns {
        self.io_eff = self.rps.map(|rps| rps / b.iops());
        self.fio_cpu = b.cpu;
        self
    }

    /// User and system CPU µs per storage read, less fio's (`None` without fio's figures or
    /// without reads).
    fn over_fio(&self) -> Option<(f64, f64)> {
        let (fu, fs) = self.fio_cpu?;
        let rpo = self.rpo.filter(|r| *r > 0.0)?;
        Some((self.user_op? / rpo - fu, self.sys_op? / rpo - fs))
    }

    /// User CPU µs per storage read (`user_op / rpo`) minus fio's user CPU per read.
    pub fn us_inc(&self) -> Option<f64> {
        self.over_fio().map(|(u, _)| u)
    }

    /// User + system CPU µs per storage read minus fio's user + system CPU per read.
    pub fn cpu_inc(&self) -> Option<f64> {
        self.over_fio().map(|(u, y)| u + y)
    }
}

/// The line `bench/io.sh` appends to a point-read step's log when it ran the `fio` baseline
/// both right before the step (the `--fio_baseline_iops` the step printed its `io_eff` with)
/// and right after it: `fio baseline: before=<read IOPS> after=<read IOPS>`, then, when fio
/// reported its CPU time, `user_us_per_io=<µs> sys_us_per_io=<µs>` (fio's CPU per read,
/// the mean of the two runs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BracketingBaseline {
    pub before: f64,
    pub after: f64,
    /// fio's user and system CPU µs per read.
    pub cpu: Option<(f64, f64)>,
}

impl BracketingBaseline {
    pub const PREFIX: &'static str = "fio baseline: ";

    /// Parses the line; `None` if it is not one or a figure is missing or not positive.
    pub fn parse(line: &str) -> Option<BracketingBaseline> {
        let rest = line.strip_prefix(Self::PREFIX)?;
        let (mut before, mut after, mut user, mut sys) = (None, None, None, None);
        for tok in rest.split_whitespace() {
            match tok.split_once('=') {
                Some(("before", v)) => before = v.parse::<f64>().ok(),
                Some(("after", v)) => after = v.parse::<f64>().ok(),
                Some(("user_us_per_io", v)) => user = v.parse::<f64>().ok(),
                Some(("sys_us_per_io", v)) => sys = v.parse::<f64>().ok(),
                _ => {}
            }
        }
        let cpu = match (user, sys) {
            (Some(u), Some(s)) if u >= 0.0 && s >= 0.0 => Some((u, s)),
            _ => None,
        };
        let b = BracketingBaseline { before: before?, after: after?, cpu };
        (b.before > 0.0 && b.after > 0.0).then_some(b)
    }

    /// The device's read IOPS over the step: the two baselines' mean, as the device drifts
    /// (by 10% and more within minutes on the VMs this runs on) across the step.
    pub fn iops(&self) -> f64 {
        self.before.midpoint(self.after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROC: &str = "rchar: 6976\nwchar: 10\nsyscr: 10\nsyscw: 2\nread_bytes: 8192\n\
                        write_bytes: 4096\ncancelled_write_bytes: 0\n";

    #[test]
    fn parses_proc_io() {
        let io = parse_proc_io(PROC).expect("parse");
        assert_eq!(io, ProcIo { syscr: 10, syscw: 2, read_bytes: 8192, write_bytes: 4096 });
        let e = parse_proc_io("rchar: 1\n").unwrap_err();
        assert!(e.contains("lacks"), "{e}");
        let e = parse_proc_io(&PROC.replace("syscr: 10", "syscr: x")).unwrap_err();
        assert!(e.contains("syscr") && e.contains("'x'"), "{e}");
    }

    #[test]
    fn parses_dev_stat() {
        let line = " 1769972    67368 128872434  3840375 29924348  1181309 710173704  3488112 \
                    0  1747236  7961046";
        let d = parse_dev_stat(line).expect("parse");
        assert_eq!(
            d,
            DevStat {
                reads: 1769972,
                sectors_read: 128872434,
                writes: 29924348,
                sectors_written: 710173704
            }
        );
        assert!(parse_dev_stat("1 2 3").unwrap_err().contains("3 fields"));
        assert!(parse_dev_stat("1 2 z 4 5 6 7").unwrap_err().contains("field 3"));
    }

    #[test]
    fn splits_dev_t_like_glibc() {
        assert_eq!(major_minor(0xfe00), (254, 0));
        assert_eq!(major_minor(0x0803), (8, 3));
        // minor 300 (0x12c) on major 259 (NVMe partitions): minor bits above 8 sit at bit 20.
        let minor = 0x12c_u64;
        let dev = (259u64 << 8) | (minor & 0xff) | ((minor & !0xff) << 12);
        assert_eq!(major_minor(dev), (259, 300));
    }

    #[test]
    fn resolves_through_a_sys_tree() {
        // A fake /sys: dev/block/M:m -> ../../devices/.../vdb/vdb1 (a partition).
        let tmp = tempfile::tempdir().expect("tempdir");
        let db = tmp.path().join("db/not/yet");
        let md = std::fs::metadata(tmp.path()).expect("stat");
        let (major, minor) = major_minor(md.dev());
        let sys = tmp.path().join("sys");
        let real = sys.join("devices/virtual/vdb/vdb1");
        std::fs::create_dir_all(&real).expect("mkdir");
        std::fs::write(real.join("stat"), "1 0 8 0 2 0 16 0 0 0 0").expect("write");
        std::fs::write(real.join("partition"), "1\n").expect("write");
        std::fs::create_dir_all(sys.join("dev/block")).expect("mkdir");
        let r = resolve_device(&db, &sys);
        if major == 0 {
            // The temp dir is on tmpfs or overlayfs: the error must say so.
            let e = r.unwrap_err();
            assert!(e.contains("no block device"), "{e}");
            return;
        }
        let e = r.unwrap_err();
        assert!(e.contains(&format!("dev/block/{major}:{minor}")), "{e}");
        std::os::unix::fs::symlink(&real, sys.join(format!("dev/block/{major}:{minor}")))
            .expect("symlink");
        let d = resolve_device(&db, &sys).expect("resolve");
        assert_eq!(d.name, "vdb1 (partition of vdb)");
        assert_eq!((d.major, d.minor), (major, minor));
    }

    #[test]
    fn step_figures_and_line_round_trip() {
        let t0 = Instant::now();
        let before = Sample {
            at: t0,
            proc: Some(ProcIo { syscr: 5, syscw: 1, read_bytes: 0, write_bytes: 0 }),
            dev: Some(DevStat { reads: 100, sectors_read: 800, writes: 10, sectors_written: 80 }),
            cpu: Some(CpuTime { user_us: 1_000, sys_us: 500 }),
        };
        let after = Sample {
            at: t0,
            proc: Some(ProcIo {
                syscr: 2005,
                syscw: 11,
                read_bytes: 8 << 20,
                write_bytes: 2 << 20,
            }),
            dev: Some(DevStat {
                reads: 2100,
                sectors_read: 16800,
                writes: 30,
                sectors_written: 4176,
            }),
            cpu: Some(CpuTime { user_us: 3_001_000, sys_us: 250_500 }),
        };
        let io = StepIo::between(&before, &after, 2.0, 1000, 1250.0, None);
        assert_eq!(io.rps(), Some(1000.0));
        assert_eq!(io.rpo(), Some(2.0));
        assert_eq!(io.io_eff(), Some(0.8));
        assert_eq!(io.rmbps(), Some(4.0));
        assert_eq!((io.wps(), io.wmbps()), (Some(10.0), Some(1.0)));
        let line = io.line();
        assert!(
            line.starts_with("I/O: rps=1000.0 rmbps=4.00 rpo=2.000 io_eff=0.800 wps=10.0"),
            "{line}"
        );
        assert!(line.contains("device: reads=2000 read_mb=7.8 writes=20 write_mb=2.0"), "{line}");
        // 3 s user + 0.25 s system over 1000 operations.
        assert_eq!(io.cpu_us_per_op(), Some(3250.0));
        assert!(
            line.contains(
                " cpu: user_us=3000000 sys_us=250000 us_per_op=3250.000 \
                 user_us_per_op=3000.000 sys_us_per_op=250.000"
            ),
            "{line}"
        );
        let c = IoColumns::parse(&line).expect("an I/O line");
        assert_eq!(
            c,
            IoColumns {
                rps: Some(1000.0),
                rmbps: Some(4.0),
                rpo: Some(2.0),
                io_eff: Some(0.8),
                wps: Some(10.0),
                wmbps: Some(1.0),
                user_op: Some(3000.0),
                sys_op: Some(250.0),
                fio_cpu: None,
            }
        );
        assert_eq!((c.us_inc(), c.cpu_inc()), (None, None), "no baseline: no increments");
        // Against a baseline with fio's CPU per read: the CPU the engine adds over it.
        let b = BracketingBaseline::parse(
            "fio baseline: before=1200 after=800 user_us_per_io=3.5 sys_us_per_io=29.5",
        )
        .expect("a baseline line");
        assert_eq!(b.cpu, Some((3.5, 29.5)));
        let r = c.rebased(b);
        assert_eq!(r.io_eff, Some(1.0));
        // 3000 + 250 µs per operation at 2 reads per operation: 1500 + 125 per read.
        assert_eq!((r.us_inc(), r.cpu_inc()), (Some(1496.5), Some(1592.0)));
        let no_reads = IoColumns { rpo: Some(0.0), ..c };
        assert_eq!(no_reads.rebased(b).cpu_inc(), None, "no reads: nothing per read");
        // Without fio's CPU (an older log), the increments stay unknown.
        let b = BracketingBaseline::parse("fio baseline: before=1200 after=800").expect("line");
        assert_eq!(b.cpu, None);
        assert_eq!(c.rebased(b).cpu_inc(), None);
        // No device, no baseline: `-`, and the line says why.
        let nodev = Sample { dev: None, ..after };
        let io = StepIo::between(&before, &nodev, 2.0, 1000, 0.0, Some("tmpfs".into()));
        let line = io.line();
        assert!(line.contains("rps=- rmbps=4.00 rpo=- io_eff=-"), "{line}");
        assert!(
            line.contains("device: unavailable (tmpfs)") && line.contains("no --fio_baseline_iops")
        );
        let c = IoColumns::parse(&line).expect("an I/O line");
        assert_eq!((c.rps, c.rmbps, c.io_eff), (None, Some(4.0), None));
        assert_eq!(IoColumns::parse("readrandom : 1 micros/op"), None);
    }

    #[test]
    fn samples_this_process() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let s = Sampler::new(tmp.path(), 0.0);
        assert!(s.describe().starts_with("I/O accounting: "), "{}", s.describe());
        let a = s.sample();
        let b = s.sample();
        let io = s.step(&a, &b, 1);
        // /proc/self/io exists on every Linux this tool supports; the device may not.
        assert!(io.proc.is_some(), "{}", s.describe());
        assert!(io.line().starts_with("I/O: "));
        // getrusage works everywhere; spin so the process's CPU time moves.
        let c0 = process_cpu().expect("getrusage");
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 30 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let c1 = process_cpu().expect("getrusage");
        assert!(c1.user_us + c1.sys_us > c0.user_us + c0.sys_us, "{c0:?} -> {c1:?}");
    }
}
