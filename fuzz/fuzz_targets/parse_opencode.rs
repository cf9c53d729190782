//! Arbitrary bytes through the parse driver and the opencode dialect; see `check_parser`.
#![no_main]
use moot::runtime::opencode::stream::Opencode;
libfuzzer_sys::fuzz_target!(|data: &[u8]| moot_fuzz::check_parser::<Opencode>(data));
