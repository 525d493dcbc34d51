//! Any bytes through `offload_kit::fuzz::bundle_read`: never a panic.
#![cfg_attr(all(fuzzing, not(fuzzing_replay)), no_main)]

offload_kit_fuzz::target!(bundle_read);
