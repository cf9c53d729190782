//! Every case under testdata/omp through the built binary: whole stdout, exit status, stderr.

const BIN: &str = env!("CARGO_BIN_EXE_moot-parse-omp");

#[test]
fn golden_cases() {
    let checked = moot::testkit::check_goldens(BIN, "moot-parse-omp", "omp");
    assert!(
        checked >= 60,
        "only {checked} golden cases under testdata/omp"
    );
}

#[test]
fn man_page_documents_every_flag() {
    moot::testkit::check_man_page(BIN, "moot-parse-omp.1");
}
