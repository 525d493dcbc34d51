//! Unit tests of the rewrite's parts. The rewrite as a whole is checked
//! against clang-offload-bundler, which runs llvm-objcopy, by the linker
//! tests (`bundler::object_bundles`).

use super::crel::{self, Crel};

#[test]
fn compact_relocations_round_trip() {
    for is_64 in [true, false] {
        let top = if is_64 { u64::MAX } else { u64::from(u32::MAX) };
        let entries = [
            Crel {
                offset: 8,
                sym: 3,
                ty: 2,
                addend: top - 3,
            },
            Crel {
                offset: 16,
                sym: 3,
                ty: 2,
                addend: top - 3,
            },
            Crel {
                offset: 0x10_0000,
                sym: 1,
                ty: 4,
                addend: 100_000,
            },
            Crel {
                offset: 0x10_0008,
                sym: 70_000,
                ty: 4,
                addend: 0,
            },
        ];
        let bytes = crel::encode(&entries, is_64);
        assert_eq!(crel::decode(&bytes, is_64).unwrap(), entries);
        // Offsets all multiples of 8: shift 3 in the header.
        assert_eq!(bytes[0] & 3, 3);
    }
    assert!(crel::decode(&[0x28, 0x01], true).is_err(), "truncated");
    assert!(crel::decode(&[], true).is_err());
}
