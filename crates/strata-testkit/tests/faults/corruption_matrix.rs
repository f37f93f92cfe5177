//! The corruption matrix on a tiny DB: every offset of every file (`docs/contract.md` rule 4).

#[test]
fn tiny_db_corruption_matrix() {
    let m = strata_testkit::corruption::run_tiny();
    println!("{}", m.render());
    let t = m.totals();
    assert!(m.passed(), "wrong answers, panics or hangs:\n{}", m.render());
    assert!(t[0] > 0 && t[1] > 0 && t[2] > 0, "every outcome class should occur: {t:?}");
}
