//! Every case under testdata/codex through the built binary: whole stdout, exit status, stderr.

moot_testkit::parser_golden_tests!("codex", at_least = 25);
