//! Any bytes read as OffloadBinaries: no panic, and what is read must survive
//! a write and a re-read (`offload_kit::fuzz::offload_binary_read`).
#![cfg_attr(all(fuzzing, not(fuzzing_replay)), no_main)]

offload_kit_fuzz::target!(offload_binary_read);
