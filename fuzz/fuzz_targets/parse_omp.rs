//! Arbitrary bytes through the parse driver and the omp dialect; see `check_parser`.
#![no_main]
use moot::runtime::omp::stream::Omp;
libfuzzer_sys::fuzz_target!(|data: &[u8]| moot_fuzz::check_parser::<Omp>(data));
