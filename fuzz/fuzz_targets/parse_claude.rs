//! Arbitrary bytes through the parse driver and the claude dialect; see `check_parser`.
#![no_main]
libfuzzer_sys::fuzz_target!(
    |data: &[u8]| moot_fuzz::check_parser::<moot::runtime::claude::stream::Claude>(data)
);
