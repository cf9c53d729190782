//! Every case under testdata/claude through the built binary: whole stdout, exit status, stderr.

moot_testkit::parser_golden_tests!("claude", at_least = 25);
