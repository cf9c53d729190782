//! Every case under testdata/kimi through the built binary: whole stdout, exit status, stderr.

const BIN: &str = env!("CARGO_BIN_EXE_moot-parse-kimi");

#[test]
fn golden_cases() {
    let checked = moot::testkit::check_goldens(BIN, "moot-parse-kimi", "kimi");
    assert!(
        checked >= 25,
        "only {checked} golden cases under testdata/kimi"
    );
}

#[test]
fn man_page_documents_every_flag() {
    moot::testkit::check_man_page(BIN, "moot-parse-kimi.1");
}
