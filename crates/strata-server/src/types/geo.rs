//! Geospatial indexes (GEOADD, GEOSEARCH...): a sorted set whose scores are 52-bit geohashes,
//! as Redis keeps them, so the ZSET commands work on them and Redis's scores, positions,
//! distances and geohash strings come out.
//!
//! ```text
//!  score = interleave(lat cell, lon cell) as f64          (exact: 52 bits < 2^53)
//!    lat cell = floor((lat + 85.05112878) / 170.10225756 * 2^26)   (the even bits)
//!    lon cell = floor((lon + 180) / 360 * 2^26)                    (the odd bits)
//! ```
//!
//! A position read back is the centre of its cell. A search covers the cell of its centre at
//! the precision its radius needs and the eight around it (each cell a range of scores),
//! and keeps the members within the circle or box; distances are haversine on a sphere of
//! Redis's radius. The arithmetic follows Redis's order of operations, so the same inputs
//! give the same bits.

use super::error::Result;
use super::keyspace::Keyspace;
use super::metadata::Kind;
use super::zset;
use std::collections::HashSet;

/// The longitudes and latitudes a geohash can hold (EPSG:900913's bounds).
const LONG_MIN: f64 = -180.0;
/// See [`LONG_MIN`].
const LONG_MAX: f64 = 180.0;
/// See [`LONG_MIN`].
const LAT_MIN: f64 = -85.05112878;
/// See [`LONG_MIN`].
const LAT_MAX: f64 = 85.05112878;

/// Bits per coordinate of a stored geohash.
const STEP_MAX: u32 = 26;
/// The sphere's radius distances are measured on (Redis's, the WGS-84 quadratic mean).
const EARTH_RADIUS_M: f64 = 6372797.560856;
/// Half the Mercator projection's width, in meters.
const MERCATOR_MAX: f64 = 20037726.37;
const D_R: f64 = std::f64::consts::PI / 180.0;

fn deg_rad(a: f64) -> f64 {
    a * D_R
}

fn rad_deg(a: f64) -> f64 {
    a / D_R
}

/// A cell: `bits` of `step` bits per coordinate (0 bits and step 0: no cell).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cell {
    bits: u64,
    step: u32,
}

/// A cell's bounds.
#[derive(Clone, Copy, Debug)]
struct Area {
    lon: (f64, f64),
    lat: (f64, f64),
}

/// Spreads the low 32 bits of `v` to the even bits.
fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// Gathers the even bits of `v` into 32 bits.
fn gather(v: u64) -> u32 {
    let mut x = v & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    ((x | (x >> 16)) & 0xFFFF_FFFF) as u32
}

/// Whether a geohash can hold (`lon`, `lat`).
pub fn in_bounds(lon: f64, lat: f64) -> bool {
    (LONG_MIN..=LONG_MAX).contains(&lon) && (LAT_MIN..=LAT_MAX).contains(&lat)
}

/// The cell of (`lon`, `lat`) at `step` bits per coordinate within the ranges given; `None`
/// outside them.
fn encode_in(lon_r: (f64, f64), lat_r: (f64, f64), lon: f64, lat: f64, step: u32) -> Option<Cell> {
    if !in_bounds(lon, lat) {
        return None;
    }
    if lat < lat_r.0 || lat > lat_r.1 || lon < lon_r.0 || lon > lon_r.1 {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (lat - lat_r.0) / (lat_r.1 - lat_r.0) * scale;
    let lon_offset = (lon - lon_r.0) / (lon_r.1 - lon_r.0) * scale;
    // Truncation, as C's conversion to uint32_t (the maximum itself gives 2^step).
    Some(Cell { bits: spread(lat_offset as u32) | (spread(lon_offset as u32) << 1), step })
}

fn encode(lon: f64, lat: f64, step: u32) -> Option<Cell> {
    encode_in((LONG_MIN, LONG_MAX), (LAT_MIN, LAT_MAX), lon, lat, step)
}

fn decode(c: Cell) -> Area {
    let lat_i = gather(c.bits);
    let lon_i = gather(c.bits >> 1);
    let div = (1u64 << c.step) as f64;
    let (lat_s, lon_s) = (LAT_MAX - LAT_MIN, LONG_MAX - LONG_MIN);
    Area {
        lat: (
            LAT_MIN + (f64::from(lat_i) / div) * lat_s,
            LAT_MIN + ((f64::from(lat_i) + 1.0) / div) * lat_s,
        ),
        lon: (
            LONG_MIN + (f64::from(lon_i) / div) * lon_s,
            LONG_MIN + ((f64::from(lon_i) + 1.0) / div) * lon_s,
        ),
    }
}

/// The centre of a cell, within the bounds.
fn centre(a: Area) -> (f64, f64) {
    let lon = f64::midpoint(a.lon.0, a.lon.1).clamp(LONG_MIN, LONG_MAX);
    let lat = f64::midpoint(a.lat.0, a.lat.1).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// The score GEOADD stores for (`lon`, `lat`); `None` outside the bounds.
pub fn score_of(lon: f64, lat: f64) -> Option<f64> {
    encode(lon, lat, STEP_MAX).map(|c| (c.bits << (52 - 2 * STEP_MAX)) as f64)
}

/// The position a stored `score` stands for: its cell's centre (longitude, latitude).
pub fn position(score: f64) -> (f64, f64) {
    centre(decode(Cell { bits: score as u64, step: STEP_MAX }))
}

/// GEOHASH's string for a stored `score`: the position re-encoded with the standard
/// latitude range (±90) in 11 base-32 characters (the 11th is always `0`: 52 bits).
pub fn geohash_string(score: f64) -> String {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = position(score);
    let bits = encode_in((-180.0, 180.0), (-90.0, 90.0), lon, lat, STEP_MAX).map_or(0, |c| c.bits);
    (0..11)
        .map(|i| {
            let idx = if i == 10 { 0 } else { (bits >> (52 - (i + 1) * 5)) & 0x1f };
            char::from(ALPHABET[idx as usize])
        })
        .collect()
}

/// Meters along a meridian between two latitudes.
fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// The haversine distance in meters between two positions (longitude first).
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let v = ((deg_rad(lon2) - deg_rad(lon1)) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1r, lat2r) = (deg_rad(lat1), deg_rad(lat2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

/// What a search covers, in the search's unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Extent {
    /// A circle of this radius.
    Radius(f64),
    /// A box this wide (east-west) and high (north-south).
    Box {
        /// East-west.
        width: f64,
        /// North-south.
        height: f64,
    },
}

/// A search: around (`lon`, `lat`) over `extent`, whose unit is `to_meters` meters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    /// The centre's longitude.
    pub lon: f64,
    /// The centre's latitude.
    pub lat: f64,
    /// The area around it.
    pub extent: Extent,
    /// Meters per unit of `extent`.
    pub to_meters: f64,
}

impl Shape {
    /// The distance from the centre to (`lon`, `lat`) when that point is inside.
    fn reaches(&self, lon: f64, lat: f64) -> Option<f64> {
        match self.extent {
            Extent::Radius(r) => {
                let d = distance(self.lon, self.lat, lon, lat);
                (d <= r * self.to_meters).then_some(d)
            }
            Extent::Box { width, height } => {
                if lat_distance(lat, self.lat) > height * self.to_meters / 2.0 {
                    return None;
                }
                if distance(lon, lat, self.lon, lat) > width * self.to_meters / 2.0 {
                    return None;
                }
                Some(distance(self.lon, self.lat, lon, lat))
            }
        }
    }

    /// (min lon, min lat, max lon, max lat) around the shape.
    fn bounds(&self) -> (f64, f64, f64, f64) {
        let (half_h, half_w) = match self.extent {
            Extent::Radius(r) => (self.to_meters * r, self.to_meters * r),
            Extent::Box { width, height } => {
                (self.to_meters * (height / 2.0), self.to_meters * (width / 2.0))
            }
        };
        let lat_delta = rad_deg(half_h / EARTH_RADIUS_M);
        let top = rad_deg(half_w / EARTH_RADIUS_M / deg_rad(self.lat + lat_delta).cos());
        let bottom = rad_deg(half_w / EARTH_RADIUS_M / deg_rad(self.lat - lat_delta).cos());
        // Meridians converge towards the pole: the wider side is the one nearer the equator.
        let lon_delta = if self.lat < 0.0 { bottom } else { top };
        (self.lon - lon_delta, self.lat - lat_delta, self.lon + lon_delta, self.lat + lat_delta)
    }

    /// Meters from the centre to the farthest point of the shape.
    fn reach(&self) -> f64 {
        let units = match self.extent {
            Extent::Radius(r) => r,
            Extent::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        };
        units * self.to_meters
    }
}

/// Bits per coordinate of the cells a search of `meters` around latitude `lat` covers.
fn steps_for(meters: f64, lat: f64) -> u32 {
    if meters == 0.0 {
        return STEP_MAX;
    }
    let (mut range, mut step) = (meters, 1i32);
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    // Wider towards the poles.
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, STEP_MAX as i32) as u32
}

/// `c` moved one cell east (`dx` 1) or west (-1) and north (`dy` 1) or south (-1).
fn moved(c: Cell, dx: i8, dy: i8) -> Cell {
    let shift = 64 - 2 * c.step;
    let (even, odd) = (0x5555_5555_5555_5555u64 >> shift, 0xaaaa_aaaa_aaaa_aaaau64 >> shift);
    let lon = nudge(c.bits & 0xaaaa_aaaa_aaaa_aaaa, dx, even, odd);
    let lat = nudge(c.bits & 0x5555_5555_5555_5555, dy, odd, even);
    Cell { bits: lon | lat, step: c.step }
}

/// One coordinate's interleaved bits `v` (on the positions of `own`) moved by `d` cells: the
/// other coordinate's positions (`other`) are filled with ones so that the carry or the
/// borrow crosses them, then cleared.
fn nudge(v: u64, d: i8, other: u64, own: u64) -> u64 {
    match d.cmp(&0) {
        std::cmp::Ordering::Greater => v.wrapping_add(other + 1) & own,
        std::cmp::Ordering::Less => (v | other).wrapping_sub(other + 1) & own,
        std::cmp::Ordering::Equal => v,
    }
}

/// The cells a search covers, in Redis's order (the centre's, then N, S, E, W, NE, NW, SE,
/// SW), those the shape cannot reach left out.
fn cells(shape: &Shape) -> Vec<Cell> {
    let (min_lon, min_lat, max_lon, max_lat) = shape.bounds();
    let mut step = steps_for(shape.reach(), shape.lat);
    let Some(mut centre) = encode(shape.lon, shape.lat, step) else { return Vec::new() };
    // A neighbour that does not reach the shape's bounds: one step coarser.
    let short = |c: Cell| {
        decode(moved(c, 0, 1)).lat.1 < max_lat
            || decode(moved(c, 0, -1)).lat.0 > min_lat
            || decode(moved(c, 1, 0)).lon.1 < max_lon
            || decode(moved(c, -1, 0)).lon.0 > min_lon
    };
    if step > 1 && short(centre) {
        step -= 1;
        match encode(shape.lon, shape.lat, step) {
            Some(c) => centre = c,
            None => return Vec::new(),
        }
    }
    let area = decode(centre);
    let around = [(0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1)];
    let mut out = vec![centre];
    for (dx, dy) in around {
        let useless = step >= 2
            && ((dy < 0 && area.lat.0 < min_lat)
                || (dy > 0 && area.lat.1 > max_lat)
                || (dx < 0 && area.lon.0 < min_lon)
                || (dx > 0 && area.lon.1 > max_lon));
        out.push(if useless { Cell { bits: 0, step: 0 } } else { moved(centre, dx, dy) });
    }
    out
}

/// A member a search found.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    /// The member.
    pub member: Vec<u8>,
    /// Its stored score (its geohash).
    pub score: f64,
    /// Its position (longitude, latitude).
    pub pos: (f64, f64),
    /// Meters from the shape's centre.
    pub dist: f64,
}

/// The members of the sorted set at `key` inside `shape`, in the order the cells are
/// walked; at most `limit` when given (ANY). `None` when the key does not exist.
///
/// The cells are read one after another, each by its own walk of the set's generation read
/// first, so the caller holds the key's lock (a member a writer moved from a cell not yet
/// read to one already read would be missed). A member is kept once even so: a stored
/// result must not hold a member twice.
pub fn search(
    ks: &Keyspace,
    key: &[u8],
    shape: &Shape,
    limit: Option<usize>,
) -> Result<Option<Vec<Found>>> {
    let Some(meta) = ks.typed(key, Kind::ZSet)? else { return Ok(None) };
    let full = |found: &Vec<Found>| limit.is_some_and(|n| found.len() >= n);
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    let mut last: Option<Cell> = None;
    for c in cells(shape) {
        // Huge radii make neighbours the same cell: each range is read once.
        if c.step == 0 || last == Some(c) {
            continue;
        }
        if full(&found) {
            break;
        }
        let shift = 52 - 2 * c.step;
        let (min, max) = ((c.bits << shift) as f64, ((c.bits + 1) << shift) as f64);
        zset::walk(ks, key, meta.version, Some(min), false, |score, member| {
            if score >= max {
                return false;
            }
            let pos = position(score);
            if let Some(dist) = shape.reaches(pos.0, pos.1) {
                if seen.insert(member.to_vec()) {
                    found.push(Found { member: member.to_vec(), score, pos, dist });
                }
            }
            !full(&found)
        })?;
        last = Some(c);
    }
    Ok(Some(found))
}

#[cfg(test)]
// Exact equality is the point: the bits must be Redis's.
#[allow(clippy::float_cmp)]
mod tests {
    use super::*;

    // Expected values: redis-server 7.0.15's replies for the same commands.

    #[test]
    fn scores_positions_and_geohashes_are_redis_s() {
        let s = score_of(13.361389, 38.115556).unwrap();
        assert_eq!(s, 3479099956230698.0);
        let (lon, lat) = position(s);
        assert_eq!(format!("{lon:.17}"), "13.36138933897018433");
        assert_eq!(format!("{lat:.17}"), "38.11555639549629859");
        assert_eq!(geohash_string(s), "sqc8b49rny0");
        assert_eq!(geohash_string(score_of(15.087269, 37.502669).unwrap()), "sqdtr74hyu0");
        assert_eq!(score_of(180.1, 0.0), None);
        assert_eq!(score_of(0.0, 85.06), None);
    }

    #[test]
    fn distances_are_haversine_on_redis_s_sphere() {
        let p = position(score_of(13.361389, 38.115556).unwrap());
        let c = position(score_of(15.087269, 37.502669).unwrap());
        assert_eq!(format!("{:.4}", distance(p.0, p.1, c.0, c.1)), "166274.1516");
        assert_eq!(distance(1.0, 2.0, 1.0, 3.0), lat_distance(2.0, 3.0), "same longitude");
    }

    #[test]
    fn neighbouring_cells_are_one_cell_over() {
        let c = encode(10.0, 10.0, 10).unwrap();
        let a = decode(c);
        let north = decode(moved(c, 0, 1));
        assert_eq!(north.lat.0, a.lat.1);
        assert_eq!(north.lon, a.lon);
        let west = decode(moved(c, -1, 0));
        assert_eq!(west.lon.1, a.lon.0);
        assert_eq!(moved(moved(c, 1, -1), -1, 1), c);
    }

    #[test]
    fn a_search_covers_every_cell_its_shape_reaches() {
        // Every point within 200 km of the centre is in one of the cells.
        let shape =
            Shape { lon: 13.5, lat: 38.0, extent: Extent::Radius(200.0), to_meters: 1000.0 };
        let cells = cells(&shape);
        for i in 0..400 {
            let (dlon, dlat) = (f64::from(i % 20) * 0.25 - 2.5, f64::from(i / 20) * 0.2 - 2.0);
            let (lon, lat) = (13.5 + dlon, 38.0 + dlat);
            if distance(13.5, 38.0, lon, lat) > 200_000.0 {
                continue;
            }
            let s = score_of(lon, lat).unwrap() as u64;
            let covered = cells.iter().filter(|c| c.step > 0).any(|c| {
                let shift = 52 - 2 * c.step;
                (c.bits << shift..(c.bits + 1) << shift).contains(&s)
            });
            assert!(covered, "{lon},{lat}");
        }
    }
}
