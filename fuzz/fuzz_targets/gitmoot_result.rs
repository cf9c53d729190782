//! Arbitrary text through the gitmoot_result extractor; see `check_extract`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| moot_fuzz::check_extract(data));
