//! Every case under testdata/opencode through the built binary: whole stdout, exit status,
//! stderr.

moot_testkit::parser_golden_tests!("opencode", at_least = 25);
