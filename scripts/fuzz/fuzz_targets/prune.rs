//! Any bytes through `prune` (`offload_kit::fuzz::prune`): objects, linked
//! libraries, archives and bare containers, kept and dropped targets,
//! shrunk and not; no panic, no output larger than its input, the kept
//! images unchanged, the same file when pruned again.
#![cfg_attr(all(fuzzing, not(fuzzing_replay)), no_main)]

offload_kit_fuzz::target!(prune);
