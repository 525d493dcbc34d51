//! Any bytes as container image metadata (`offload_kit::fuzz::image_metadata`):
//! a `docker save` archive, and a tar of an OCI layout's JSON files.
#![cfg_attr(all(fuzzing, not(fuzzing_replay)), no_main)]

offload_kit_fuzz::target!(image_metadata);
