//! Arbitrary bytes through the parse driver and the codex dialect; see `check_parser`.
#![no_main]
use moot::runtime::codex::stream::Codex;
libfuzzer_sys::fuzz_target!(|data: &[u8]| moot_fuzz::check_parser::<Codex>(data));
