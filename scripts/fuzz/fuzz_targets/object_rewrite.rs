//! Any bytes through `offload_kit::fuzz::object_rewrite`: never a panic.
#![cfg_attr(all(fuzzing, not(fuzzing_replay)), no_main)]

offload_kit_fuzz::target!(object_rewrite);
