//! `ReadOptions::prefix_same_as_start`, defined as RocksDB defines it: iteration stops at the
//! first key whose prefix, as the extractor takes it, differs from the start's. That holds for
//! a seek target shorter than a fixed prefix (not every key that merely begins with the
//! target) and for `IteratorMode::Start`/`End` (limited to the first key's prefix).

use strata::{Db, Direction, IteratorMode, Options, PrefixExtractor, ReadOptions};

fn db_with(extractor: PrefixExtractor, keys: &[&str]) -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options { prefix_extractor: Some(extractor), ..Options::default() };
    let db = Db::open(&opts, dir.path()).unwrap();
    for k in keys {
        db.put(k, b"v").unwrap();
    }
    (dir, db)
}

fn prefix_opts() -> ReadOptions {
    ReadOptions { prefix_same_as_start: true, ..ReadOptions::default() }
}

fn collect(db: &Db, mode: IteratorMode<'_>) -> Vec<String> {
    db.iterator_opt(mode, prefix_opts())
        .map(|r| String::from_utf8(r.unwrap().0.to_vec()).unwrap())
        .collect()
}

const KEYS: &[&str] = &["aa", "aaaa1", "aaaa2", "aaab1", "ab", "abcd1", "abcd2", "b", "bbbb1"];

#[test]
fn seek_within_a_fixed_prefix() {
    let (_d, db) = db_with(PrefixExtractor::Fixed(4), KEYS);
    let got = collect(&db, IteratorMode::From(b"aaaa", Direction::Forward));
    assert_eq!(got, ["aaaa1", "aaaa2"]);
    let got = collect(&db, IteratorMode::From(b"abcd2", Direction::Reverse));
    assert_eq!(got, ["abcd2", "abcd1"]);
}

#[test]
fn a_target_shorter_than_a_fixed_prefix_is_its_own_prefix() {
    let (_d, db) = db_with(PrefixExtractor::Fixed(4), KEYS);
    // "aa" is shorter than 4 bytes: its prefix is "aa" itself, and "aaaa1"'s prefix is
    // "aaaa", so only the key "aa" shares it.
    assert_eq!(collect(&db, IteratorMode::From(b"aa", Direction::Forward)), ["aa"]);
    // No key has the prefix "a".
    assert!(collect(&db, IteratorMode::From(b"a", Direction::Forward)).is_empty());
}

#[test]
fn capped_prefixes_compare_as_taken() {
    let (_d, db) = db_with(PrefixExtractor::Capped(4), KEYS);
    assert_eq!(collect(&db, IteratorMode::From(b"ab", Direction::Forward)), ["ab"]);
    assert_eq!(collect(&db, IteratorMode::From(b"abcd", Direction::Forward)), ["abcd1", "abcd2"]);
}

#[test]
fn start_and_end_keep_to_the_first_keys_prefix() {
    let (_d, db) =
        db_with(PrefixExtractor::Fixed(4), &["aaaa1", "aaaa2", "aaab1", "bbbb1", "bbbb2"]);
    assert_eq!(collect(&db, IteratorMode::Start), ["aaaa1", "aaaa2"]);
    assert_eq!(collect(&db, IteratorMode::End), ["bbbb2", "bbbb1"]);
}

#[test]
fn without_the_option_nothing_is_limited() {
    let (_d, db) = db_with(PrefixExtractor::Fixed(4), KEYS);
    let all: Vec<_> = db.iterator(IteratorMode::Start).map(|r| r.unwrap().0.len()).collect();
    assert_eq!(all.len(), KEYS.len());
}

#[test]
fn raw_iterator_next_and_prev_stop_at_the_prefix_edge() {
    let (_d, db) = db_with(PrefixExtractor::Fixed(4), KEYS);
    let mut it = db.raw_iterator_opt(prefix_opts());
    it.seek(b"aaab");
    assert_eq!(it.key(), Some(&b"aaab1"[..]));
    it.prev();
    assert!(!it.valid(), "prev left the prefix");
    it.seek_for_prev(b"aaaa9");
    assert_eq!(it.key(), Some(&b"aaaa2"[..]));
    it.next();
    assert!(!it.valid(), "next left the prefix");
    it.status().unwrap();
}
