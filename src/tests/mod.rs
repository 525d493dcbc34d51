//! Cross-module tests over the committed fixtures.

mod golden;
mod naive;
pub(crate) mod pe;

/// xorshift64*: deterministic pseudo-random numbers for tests (so that a
/// failure repeats), without a dependency.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// The next number.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// An index below `n` (0 when `n` is 0).
    pub(crate) fn index(&mut self, n: usize) -> usize {
        usize::try_from(self.below(u64::try_from(n).unwrap_or(u64::MAX))).unwrap_or(0)
    }
}

/// OffloadBinaries (version 1) back to back, one per image: its kind,
/// triple, arch and bytes, offload kind OpenMP.
pub(crate) fn offload_binaries(
    images: &[(crate::offload_binary::ImageKind, &str, &str, &[u8])],
) -> Vec<u8> {
    use crate::offload_binary::{ImageSpec, OffloadKind, Version, layout};
    let specs: Vec<ImageSpec> = images
        .iter()
        .map(|(kind, triple, arch, data)| ImageSpec {
            image_kind: *kind,
            offload_kind: OffloadKind::OFK_OpenMP,
            strings: vec![
                (b"triple".to_vec(), triple.as_bytes().to_vec()),
                (b"arch".to_vec(), arch.as_bytes().to_vec()),
            ],
            size: data.len() as u64,
            ..ImageSpec::default()
        })
        .collect();
    let data: Vec<&[u8]> = images.iter().map(|i| i.3).collect();
    let mut out = Vec::new();
    layout(&specs, Version::V1)
        .expect("lays out")
        .write_to(&mut out, &data)
        .expect("writes");
    out
}
