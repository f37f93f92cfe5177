//! The I/O error loop (`docs/contract.md` rules 5 and 6); see `strata_testkit::iofault`.

#[test]
fn io_errors_at_every_io_lose_nothing_acknowledged() {
    let rep = strata_testkit::iofault::run(400);
    println!("{}", rep.render());
    assert!(rep.rows.values().all(|r| r.attempts < 400), "an operation never completed");
    assert!(
        rep.violations.is_empty(),
        "{} violations:\n{}",
        rep.violations.len(),
        rep.violations.join("\n")
    );
}
