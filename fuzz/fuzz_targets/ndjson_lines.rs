//! Arbitrary bytes and a small line ceiling through the NDJSON line reader; see `check_lines`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| moot_fuzz::check_lines(data));
