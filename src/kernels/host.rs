//! ELF images for CPUs (OpenMP offloading to the host's architecture):
//! the functions and variables they define and export. OpenMP names each
//! target region's outlined function `__omp_offloading_<device>_<file>_<function>_l<line>`:
//! those are the kernels.

use super::elf::{self, Parsed};
use super::{Allowance, Format, Kernel, Listing, Symbol, SymbolKind, text};
use crate::error::Result;

/// The prefix of OpenMP kernels' names.
const OMP_KERNEL: &[u8] = b"__omp_offloading_";
/// The prefix of the offload entry table's own symbols (one per kernel
/// and declare-target global): bookkeeping, not what the image exports.
const ENTRY: &[u8] = b".offloading.entry.";

pub(super) fn read(bytes: &[u8], allowance: &Allowance) -> Result<Listing> {
    elf::with_parsed(bytes, |p| from_parsed(p, allowance))
}

fn from_parsed(p: &Parsed<'_>, allowance: &Allowance) -> Result<Listing> {
    let mut l = Listing::new(Format::Elf);
    for s in p
        .symbols()
        .filter(|s| s.exported() && !s.name.starts_with(ENTRY))
    {
        let Some(kind) = s.function_or_variable() else {
            continue;
        };
        allowance.spend(1)?;
        if kind == SymbolKind::Function && s.name.starts_with(OMP_KERNEL) {
            l.kernels.push(Kernel::new(text(s.name)));
        } else {
            l.symbols.push(Symbol::new(s.name, kind, s.size));
        }
    }
    Ok(l)
}
