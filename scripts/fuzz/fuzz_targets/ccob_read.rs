//! Any bytes through `offload_kit::fuzz::ccob_read`: never a panic.
#![cfg_attr(all(fuzzing, not(fuzzing_replay)), no_main)]

offload_kit_fuzz::target!(ccob_read);
