//! GEOADD, GEOPOS, GEODIST, GEOHASH, GEORADIUS, GEORADIUSBYMEMBER (and their `_RO` forms),
//! GEOSEARCH and GEOSEARCHSTORE over `types::geo`, with Redis 7.0's arguments, replies,
//! errors and order of checks.

use super::args::{float_arg, int_arg, is};
use super::errors::{CmdError, SYNTAX};
use super::CmdResult;
use crate::resp::Out;
use crate::state::{Conn, Shared};
use crate::types::geo::{self, Extent, Found, Shape};
use crate::types::keyspace::Keyspace;
use crate::types::long_double::{format_human, from_f64};
use crate::types::number::parse_float;
use crate::types::zset::{self, AddFlags};

const NO_MEMBER: &str = "ERR could not decode requested zset member";

/// GEOADD key [NX|XX] [CH] longitude latitude member [...]
pub fn geoadd(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let (mut flags, mut ch, mut i) = (AddFlags::default(), false, 2);
    while i < a.len() {
        if is(&a[i], "nx") {
            flags.nx = true;
        } else if is(&a[i], "xx") {
            flags.xx = true;
        } else if is(&a[i], "ch") {
            ch = true;
        } else {
            break;
        }
        i += 1;
    }
    let rest = &a[i..];
    if rest.is_empty() || !rest.len().is_multiple_of(3) || (flags.nx && flags.xx) {
        return Err(SYNTAX.into());
    }
    let mut pairs = Vec::with_capacity(rest.len() / 3);
    for t in rest.chunks(3) {
        let (lon, lat) = lon_lat(&t[0], &t[1])?;
        // In range (checked): a score exists.
        pairs.push((geo::score_of(lon, lat).unwrap_or(0.0), &t[2][..]));
    }
    let done = zset::add(&sh.keyspace(c.db), &a[1], flags, &pairs)?;
    out.int((if ch { done.added + done.changed } else { done.added }) as i64);
    Ok(())
}

/// GEOPOS key member [...]: each member's position, or a null array.
pub fn geopos(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let scores = scores(&sh.keyspace(c.db), &a[1], &a[2..])?;
    out.array(scores.len());
    for s in scores {
        match s {
            Some(s) => reply_pos(out, geo::position(s)),
            None => out.null_array(),
        }
    }
    Ok(())
}

/// GEOHASH key member [...]: each member's 11-character geohash, or a null.
pub fn geohash(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let scores = scores(&sh.keyspace(c.db), &a[1], &a[2..])?;
    out.array(scores.len());
    for s in scores {
        match s {
            Some(s) => out.bulk(geo::geohash_string(s).as_bytes()),
            None => out.null(),
        }
    }
    Ok(())
}

/// GEODIST key member1 member2 [M|KM|FT|MI]
pub fn geodist(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    let to_meters = match a.len() {
        4 => 1.0,
        5 => unit(&a[4])?,
        _ => return Err(SYNTAX.into()),
    };
    let ks = sh.keyspace(c.db);
    let both = match scores(&ks, &a[1], &a[2..4])?[..] {
        [Some(s1), Some(s2)] => Some((geo::position(s1), geo::position(s2))),
        _ => None,
    };
    match both {
        Some((p, q)) => reply_distance(out, geo::distance(p.0, p.1, q.0, q.1) / to_meters),
        None => out.null(),
    }
    Ok(())
}

/// GEORADIUS key longitude latitude radius unit [options...]
pub fn georadius(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    search(sh, c, a, Form::Radius { by_member: false, store: true }, out)
}

/// GEORADIUS_RO: GEORADIUS without STORE.
pub fn georadius_ro(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    search(sh, c, a, Form::Radius { by_member: false, store: false }, out)
}

/// GEORADIUSBYMEMBER key member radius unit [options...]
pub fn georadiusbymember(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    search(sh, c, a, Form::Radius { by_member: true, store: true }, out)
}

/// GEORADIUSBYMEMBER_RO: GEORADIUSBYMEMBER without STORE.
pub fn georadiusbymember_ro(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    search(sh, c, a, Form::Radius { by_member: true, store: false }, out)
}

/// GEOSEARCH key FROMMEMBER m|FROMLONLAT lon lat BYRADIUS r unit|BYBOX w h unit [...]
pub fn geosearch(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    search(sh, c, a, Form::Search { store: false }, out)
}

/// GEOSEARCHSTORE destination source ... [STOREDIST]
pub fn geosearchstore(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], out: &mut Out) -> CmdResult {
    search(sh, c, a, Form::Search { store: true }, out)
}

/// Which search command runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS[BYMEMBER][_RO]: `store` takes STORE and STOREDIST.
    Radius { by_member: bool, store: bool },
    /// GEOSEARCH, or GEOSEARCHSTORE (`store`).
    Search { store: bool },
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// A search's arguments, parsed.
struct Request<'a> {
    /// Where it is centred: `None` when FROMMEMBER (or GEORADIUSBYMEMBER) names a member of
    /// a source that does not exist.
    centre: Option<(f64, f64)>,
    extent: Option<Extent>,
    to_meters: f64,
    /// The destination, and whether it stores distances (STOREDIST) rather than hashes.
    store: Option<(&'a [u8], bool)>,
    /// WITHDIST, WITHHASH, WITHCOORD.
    with: (bool, bool, bool),
    any: bool,
    sort: Sort,
    count: Option<usize>,
}

/// The search commands, as Redis's `georadiusGeneric` answers them.
fn search(sh: &Shared, c: &mut Conn, a: &[Vec<u8>], form: Form, out: &mut Out) -> CmdResult {
    let ks = sh.keyspace(c.db);
    let src = &a[if form == (Form::Search { store: true }) { 2 } else { 1 }];
    // The command sees one state of its keys: the search reads its cells one walk each, so a
    // member a writer moved between two walks would be missed (Redis's one thread sees no
    // move), and a store writes what that one state gave.
    let keys = super::find(sh, &a[0]).map_or_else(|| vec![src.as_slice()], |cmd| cmd.keys.of(a));
    let _g = sh.engine().locks.lock(&keys);
    let exists = ks.typed(src, crate::types::metadata::Kind::ZSet)?.is_some();
    let mut req = parse(&ks, a, form, src, exists)?;
    let event =
        if matches!(form, Form::Search { .. }) { "geosearchstore" } else { "georadiusstore" };
    let (Some((lon, lat)), Some(extent), true) = (req.centre, req.extent, exists) else {
        // No source: the store is emptied (deleted), the reply is empty.
        match req.store {
            Some((dest, _)) => {
                zset::replace(&ks, dest, &Vec::new(), event)?;
                out.int(0);
            }
            None => out.array(0),
        }
        return Ok(());
    };
    if req.count.is_some() && req.sort == Sort::None && !req.any {
        req.sort = Sort::Asc;
    }
    let shape = Shape { lon, lat, extent, to_meters: req.to_meters };
    let limit = req.count.filter(|_| req.any);
    let mut found = geo::search(&ks, src, &shape, limit)?.unwrap_or_default();
    match req.sort {
        Sort::None => {}
        Sort::Asc => found.sort_by(|x, y| x.dist.total_cmp(&y.dist)),
        Sort::Desc => found.sort_by(|x, y| y.dist.total_cmp(&x.dist)),
    }
    found.truncate(req.count.unwrap_or(usize::MAX));
    match req.store {
        Some((dest, by_dist)) => {
            let to_meters = req.to_meters;
            let items: Vec<(f64, Vec<u8>)> = found
                .into_iter()
                .map(|f| (if by_dist { f.dist / to_meters } else { f.score }, f.member))
                .collect();
            zset::replace(&ks, dest, &items, event)?;
            out.int(items.len() as i64);
        }
        None => reply_found(out, &found, req.to_meters, req.with),
    }
    Ok(())
}

/// A search's arguments in Redis's order of checks: the centre and radius of the GEORADIUS
/// forms (a member's only when `exists`: the source `src` does), then the options, then what
/// they lack or cannot have together.
fn parse<'a>(
    ks: &Keyspace,
    a: &'a [Vec<u8>],
    form: Form,
    src: &[u8],
    exists: bool,
) -> Result<Request<'a>, CmdError> {
    let search = matches!(form, Form::Search { .. });
    let mut r = Request {
        centre: None,
        extent: None,
        to_meters: 1.0,
        store: None,
        with: (false, false, false),
        any: false,
        sort: Sort::None,
        count: None,
    };
    let mut i = match form {
        Form::Radius { by_member: false, .. } => {
            r.centre = Some(lon_lat(&a[2], &a[3])?);
            (r.extent, r.to_meters) = distance_arg(&a[4], &a[5])?;
            6
        }
        Form::Radius { by_member: true, .. } if exists => {
            r.centre = Some(member_pos(ks, src, &a[2])?);
            (r.extent, r.to_meters) = distance_arg(&a[3], &a[4])?;
            5
        }
        // No source: the options are still parsed, for the reply's form.
        Form::Radius { by_member: true, .. } => 5,
        Form::Search { store: false } => 2,
        Form::Search { store: true } => {
            r.store = Some((&a[1], false));
            3
        }
    };
    let (mut from_member, mut from_lonlat) = (false, false);
    while i < a.len() {
        let (arg, left) = (&a[i], a.len() - i - 1);
        if is(arg, "withdist") {
            r.with.0 = true;
        } else if is(arg, "withhash") {
            r.with.1 = true;
        } else if is(arg, "withcoord") {
            r.with.2 = true;
        } else if is(arg, "any") {
            r.any = true;
        } else if is(arg, "asc") {
            r.sort = Sort::Asc;
        } else if is(arg, "desc") {
            r.sort = Sort::Desc;
        } else if is(arg, "count") && left >= 1 {
            let n = int_arg(&a[i + 1])?;
            if n <= 0 {
                return Err("ERR COUNT must be > 0".into());
            }
            r.count = Some(usize::try_from(n).unwrap_or(usize::MAX));
            i += 1;
        } else if (is(arg, "store") || is(arg, "storedist"))
            && left >= 1
            && matches!(form, Form::Radius { store: true, .. })
        {
            r.store = Some((&a[i + 1], is(arg, "storedist")));
            i += 1;
        } else if is(arg, "storedist") && form == (Form::Search { store: true }) {
            r.store = Some((&a[1], true));
        } else if is(arg, "frommember") && left >= 1 && search && !from_lonlat {
            if exists {
                r.centre = Some(member_pos(ks, src, &a[i + 1])?);
            }
            from_member = true;
            i += 1;
        } else if is(arg, "fromlonlat") && left >= 2 && search && !from_member {
            r.centre = Some(lon_lat(&a[i + 1], &a[i + 2])?);
            from_lonlat = true;
            i += 2;
        } else if is(arg, "byradius")
            && left >= 2
            && search
            && !matches!(r.extent, Some(Extent::Box { .. }))
        {
            (r.extent, r.to_meters) = distance_arg(&a[i + 1], &a[i + 2])?;
            i += 2;
        } else if is(arg, "bybox")
            && left >= 3
            && search
            && !matches!(r.extent, Some(Extent::Radius(_)))
        {
            (r.extent, r.to_meters) = box_arg(&a[i + 1], &a[i + 2], &a[i + 3])?;
            i += 3;
        } else {
            return Err(SYNTAX.into());
        }
        i += 1;
    }
    if r.store.is_some() && (r.with.0 || r.with.1 || r.with.2) {
        let who = if search { "GEOSEARCHSTORE" } else { "STORE option in GEORADIUS" };
        let why =
            format!("ERR {who} is not compatible with WITHDIST, WITHHASH and WITHCOORD options");
        return Err(why.into());
    }
    let name = String::from_utf8_lossy(&a[0]);
    if search && !(from_member || from_lonlat) {
        let why =
            format!("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}");
        return Err(why.into());
    }
    if search && r.extent.is_none() {
        let why = format!("ERR exactly one of BYRADIUS and BYBOX can be specified for {name}");
        return Err(why.into());
    }
    if r.any && r.count.is_none() {
        return Err("ERR the ANY argument requires COUNT argument".into());
    }
    Ok(r)
}

/// The found members, each alone or with its distance, hash and position as asked.
fn reply_found(out: &mut Out, found: &[Found], to_meters: f64, with: (bool, bool, bool)) {
    let (dist, hash, coord) = with;
    let extra = usize::from(dist) + usize::from(hash) + usize::from(coord);
    out.array(found.len());
    for f in found {
        if extra > 0 {
            out.array(extra + 1);
        }
        out.bulk(&f.member);
        if dist {
            reply_distance(out, f.dist / to_meters);
        }
        if hash {
            out.int(f.score as i64);
        }
        if coord {
            reply_pos(out, f.pos);
        }
    }
}

/// The scores of `members` in the sorted set at `key` (none when it does not exist).
fn scores(ks: &Keyspace, key: &[u8], members: &[Vec<u8>]) -> Result<Vec<Option<f64>>, CmdError> {
    if ks.typed(key, crate::types::metadata::Kind::ZSet)?.is_none() {
        return Ok(vec![None; members.len()]);
    }
    Ok(members.iter().map(|m| zset::score(ks, key, m)).collect::<Result<_, _>>()?)
}

/// The position of `member` of the (existing) sorted set at `key`.
fn member_pos(ks: &Keyspace, key: &[u8], member: &[u8]) -> Result<(f64, f64), CmdError> {
    match zset::score(ks, key, member)? {
        Some(s) => Ok(geo::position(s)),
        None => Err(NO_MEMBER.into()),
    }
}

/// A longitude and latitude argument pair, within the bounds a geohash holds.
fn lon_lat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), CmdError> {
    let (lon, lat) = (float_arg(lon)?, float_arg(lat)?);
    if !geo::in_bounds(lon, lat) {
        return Err(format!("ERR invalid longitude,latitude pair {lon:.6},{lat:.6}").into());
    }
    Ok((lon, lat))
}

/// Meters per `unit`.
fn unit(unit: &[u8]) -> Result<f64, CmdError> {
    const UNITS: [(&str, f64); 4] = [("m", 1.0), ("km", 1000.0), ("ft", 0.3048), ("mi", 1609.34)];
    UNITS
        .iter()
        .find(|(name, _)| is(unit, name))
        .map(|&(_, to_meters)| to_meters)
        .ok_or_else(|| "ERR unsupported unit provided. please use M, KM, FT, MI".into())
}

/// A radius and its unit.
fn distance_arg(r: &[u8], u: &[u8]) -> Result<(Option<Extent>, f64), CmdError> {
    let r = parse_float(r).ok_or("ERR need numeric radius")?;
    if r < 0.0 {
        return Err("ERR radius cannot be negative".into());
    }
    Ok((Some(Extent::Radius(r)), unit(u)?))
}

/// A box's width, height and unit.
fn box_arg(w: &[u8], h: &[u8], u: &[u8]) -> Result<(Option<Extent>, f64), CmdError> {
    let width = parse_float(w).ok_or("ERR need numeric width")?;
    let height = parse_float(h).ok_or("ERR need numeric height")?;
    if width < 0.0 || height < 0.0 {
        return Err("ERR height or width cannot be negative".into());
    }
    Ok((Some(Extent::Box { width, height }), unit(u)?))
}

/// A position as two bulk strings in Redis's human long double form.
fn reply_pos(out: &mut Out, (lon, lat): (f64, f64)) {
    out.array(2);
    out.bulk(format_human(from_f64(lon)).as_bytes());
    out.bulk(format_human(from_f64(lat)).as_bytes());
}

/// A distance with four decimals, rounded as Redis's `fixedpoint_d2string` does.
fn reply_distance(out: &mut Out, d: f64) {
    out.bulk(fixed4(d).as_bytes());
}

fn fixed4(d: f64) -> String {
    // llrint in the default rounding mode: to nearest, ties to even.
    let v = (d * 10000.0).round_ties_even() as i64;
    let (sign, v) = if v < 0 { ("-", v.unsigned_abs()) } else { ("", v as u64) };
    format!("{sign}{}.{:04}", v / 10000, v % 10000)
}

#[cfg(test)]
mod tests {
    use super::fixed4;

    #[test]
    fn distances_have_four_decimals_rounded_to_even() {
        assert_eq!(fixed4(0.0), "0.0000");
        assert_eq!(fixed4(166274.15156960033), "166274.1516");
        assert_eq!(fixed4(0.00005), "0.0000", "a tie below: even");
        assert_eq!(fixed4(0.7750), "0.7750");
        assert_eq!(fixed4(12.0), "12.0000");
    }
}
