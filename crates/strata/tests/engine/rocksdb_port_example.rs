//! Runs `examples/rocksdb_port.rs` (a rust-rocksdb program whose `use` line alone changed)
//! and checks what it found, so the example cannot rot (`docs/rocksdb_port.md`).

#[path = "../../examples/rocksdb_port.rs"]
mod example;

#[test]
fn the_ported_rocksdb_program_runs_and_reads_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let r = example::run(path.to_str().unwrap()).unwrap();
    assert_eq!(r.families, ["default", "events", "profiles"]);
    assert_eq!(r.events_u001, "login,buy,logout");
    assert_eq!(r.prefix_u002.len(), 51, "{:?}", r.prefix_u002);
    assert!(r.prefix_u002.iter().all(|k| k.starts_with("u002")));
    assert_eq!(r.snapshot_name.as_deref(), Some("alice"));
    assert_eq!(r.current_name.as_deref(), Some("alice2"));
    assert_eq!(
        r.profiles_newest_first,
        ["2024-03-01:u003=carol", "2024-02-01:u002=bob", "2024-01-01:u001=alice2"]
    );
    assert_eq!(r.pinned_len, "other user".len());
}
