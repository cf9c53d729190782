//! Arbitrary bytes through the parse driver and the pi dialect; see `check_parser`.
#![no_main]
use moot::runtime::pi::stream::Pi;
libfuzzer_sys::fuzz_target!(|data: &[u8]| moot_fuzz::check_parser::<Pi>(data));
