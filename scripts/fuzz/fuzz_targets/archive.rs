//! Any bytes as an `ar` archive (`offload_kit::fuzz::archive`): the
//! drop-in's member reader, a write and re-read, symbol tables, and the
//! scanner's archive walk with thin members naming the archive again.
#![cfg_attr(all(fuzzing, not(fuzzing_replay)), no_main)]

offload_kit_fuzz::target!(archive);
