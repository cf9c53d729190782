//! Every case under testdata/opencode through the built binary: whole stdout, exit status,
//! stderr.

moot::parser_golden_tests!("opencode", at_least = 25);
