//! Arbitrary bytes through the parse driver and the claude dialect; see `check_parser`.
#![no_main]
use moot::runtime::claude::stream::Claude;
libfuzzer_sys::fuzz_target!(|data: &[u8]| moot_fuzz::check_parser::<Claude>(data));
