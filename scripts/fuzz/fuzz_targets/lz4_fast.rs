//! Any bytes through `offload_kit::fuzz::lz4_fast`: LZ4 blocks made to
//! reach every path of the decoding loop (src/fatbin/lz4/fast.rs), decoded
//! by both of our decoders, lz4_flex and C liblz4 alike (the same bytes,
//! or all refuse, but where liblz4 is known to differ); never a panic.
#![cfg_attr(all(fuzzing, not(fuzzing_replay)), no_main)]

offload_kit_fuzz::target!(lz4_fast);
