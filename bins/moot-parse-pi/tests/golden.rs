//! Every case under testdata/pi through the built binary: whole stdout, exit status, stderr.

moot_testkit::parser_golden_tests!("pi", at_least = 25);
