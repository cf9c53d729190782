//! Every case under testdata/pi through the built binary: whole stdout, exit status, stderr.

const BIN: &str = env!("CARGO_BIN_EXE_moot-parse-pi");

#[test]
fn golden_cases() {
    let checked = moot::testkit::check_goldens(BIN, "moot-parse-pi", "pi");
    assert!(
        checked >= 25,
        "only {checked} golden cases under testdata/pi"
    );
}

#[test]
fn man_page_documents_every_flag() {
    moot::testkit::check_man_page(BIN, "moot-parse-pi.1");
}
