//! CUDA cubins: the entry functions (kernels), the other exported
//! symbols, and each kernel's resources.
//!
//! (First cut: entries and symbols only; resources to follow.)

use super::elf::{self, Parsed};
use super::{Format, Kernel, Listing, Symbol, SymbolKind};
use crate::error::Result;

/// `STO_CUDA_ENTRY` in `st_other`: the function is a kernel.
const STO_ENTRY: u8 = 0x10;

pub(super) fn read(bytes: &[u8]) -> Result<Listing> {
    elf::with_parsed(bytes, |p| Ok(from_parsed(p)))
}

fn from_parsed(p: &Parsed<'_>) -> Listing {
    let mut l = Listing::new(Format::Cubin);
    for s in p.symbols.iter().filter(|s| s.exported()) {
        if s.kind == object::elf::STT_FUNC.0 {
            if s.other & STO_ENTRY != 0 {
                l.kernels.push(Kernel::new(elf::text(s.name)));
            } else {
                l.symbols.push(Symbol {
                    name: elf::text(s.name),
                    demangled: None,
                    kind: SymbolKind::Function,
                    size: s.size,
                });
            }
        } else if s.kind == object::elf::STT_OBJECT.0 {
            l.symbols.push(Symbol {
                name: elf::text(s.name),
                demangled: None,
                kind: SymbolKind::Variable,
                size: s.size,
            });
        }
    }
    l
}
