//! Arbitrary bytes through the parse driver and the kimi dialect; see `check_parser`.
#![no_main]
use moot::runtime::kimi::stream::Kimi;
libfuzzer_sys::fuzz_target!(|data: &[u8]| moot_fuzz::check_parser::<Kimi>(data));
