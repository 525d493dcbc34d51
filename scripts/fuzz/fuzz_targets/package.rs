//! Any bytes as a package (`offload_kit::fuzz::package`): zip, tar (plain,
//! gzip, xz, zstd) and Debian packages, every member read to its end.
#![cfg_attr(all(fuzzing, not(fuzzing_replay)), no_main)]

offload_kit_fuzz::target!(package);
