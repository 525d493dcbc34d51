//! Any bytes through the scanner in every mode (`offload_kit::fuzz::scan`):
//! no panic, a consistent report, and image bytes where the offsets say.
#![cfg_attr(all(fuzzing, not(fuzzing_replay)), no_main)]

offload_kit_fuzz::target!(scan);
