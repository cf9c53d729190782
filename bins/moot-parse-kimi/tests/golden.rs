//! Every case under testdata/kimi through the built binary: whole stdout, exit status, stderr.

moot_testkit::parser_golden_tests!("kimi", at_least = 25);
