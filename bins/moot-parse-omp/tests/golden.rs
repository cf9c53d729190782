//! Every case under testdata/omp through the built binary: whole stdout, exit status, stderr.

moot_testkit::parser_golden_tests!("omp", at_least = 60);

const BIN: &str = env!("CARGO_BIN_EXE_moot-parse-omp");

/// The harness holds a failure's stderr to its envelope: the one line must be exactly the
/// envelope's class and message (folded as the parser folds it), so a parser that printed a
/// different message than its envelope, or the right one cut short, unfolded or followed by
/// more, fails its golden case. real-error's message spans lines, so the folding is checked.
#[test]
fn stderr_must_be_the_envelopes_error() {
    let case = moot_testkit::cases("omp")
        .into_iter()
        .find(|case| case.name == "real-error")
        .expect("testdata/omp/real-error");
    let input = std::fs::read(&case.input).expect("read case input");
    let output = moot_testkit::run_in(BIN, &case.args, &input, Some(&case.dir));
    let check = |stderr: &[u8]| {
        let mut output = output.clone();
        output.stderr = stderr.to_vec();
        moot_testkit::check_case(&case, "moot-parse-omp", &output)
    };
    let printed = output.stderr.clone();
    assert_eq!(check(&printed), Ok(()));
    let line = String::from_utf8(printed).expect("stderr is UTF-8");
    let prefix = "moot-parse-omp: retry_exhausted: ";
    assert!(line.starts_with(prefix), "{line:?}");
    let envelope: serde_json::Value = serde_json::from_slice(&output.stdout).expect("envelope");
    let message = envelope["run"]["error"]["message"]
        .as_str()
        .expect("message");
    assert!(
        message.contains('\n'),
        "real-error's message no longer spans lines"
    );
    for wrong in [
        format!("{prefix}omp gave up retrying\n"),
        format!("{prefix}{message}\n"),
        line.trim_end().to_string(),
        format!("{line}{line}"),
        line.replace("retry_exhausted", "model_error"),
        line.replace("moot-parse-omp", "moot-parse-pi"),
    ] {
        assert!(check(wrong.as_bytes()).is_err(), "accepted {wrong:?}");
    }
}
