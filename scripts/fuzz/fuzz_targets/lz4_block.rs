//! Any bytes through `offload_kit::fuzz::lz4_block`: a declared size and
//! an LZ4 block, decoded by the fatbin entries' streaming decoder and by
//! lz4_flex alike (the same bytes, or both refuse); never a panic.
#![cfg_attr(all(fuzzing, not(fuzzing_replay)), no_main)]

offload_kit_fuzz::target!(lz4_block);
