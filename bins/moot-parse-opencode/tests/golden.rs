//! Every case under testdata/opencode through the built binary: whole stdout, exit status,
//! stderr.

const BIN: &str = env!("CARGO_BIN_EXE_moot-parse-opencode");

#[test]
fn golden_cases() {
    let checked = moot::testkit::check_goldens(BIN, "moot-parse-opencode", "opencode");
    assert!(
        checked >= 25,
        "only {checked} golden cases under testdata/opencode"
    );
}

#[test]
fn man_page_documents_every_flag() {
    moot::testkit::check_man_page(BIN, "moot-parse-opencode.1");
}
