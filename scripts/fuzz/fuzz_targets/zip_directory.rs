//! Any bytes as a zip's central directory (`offload_kit::fuzz::zip_directory`):
//! entries that overlap counted, entries of one name refused.
#![cfg_attr(all(fuzzing, not(fuzzing_replay)), no_main)]

offload_kit_fuzz::target!(zip_directory);
