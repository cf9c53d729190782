//! Arbitrary command lines through moot-render's argument validation; see `check_render`.
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| moot_fuzz::check_render(data));
