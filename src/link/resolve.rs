//! Which archive members' device code a link takes, as LLVM 22's
//! `clang-linker-wrapper` decides it, from the device objects' symbols
//! (per device triple): a member is taken when its device code defines a
//! symbol that the device code taken so far needs (a strong undefined
//! reference), or a new global symbol that is not hidden (one the host may
//! use, such as a declare-target variable); and always under
//! `--whole-archive`. Members are scanned again while any is taken.

use std::collections::HashMap;

use object::{Object as _, ObjectSymbol as _, SymbolFlags};

/// One global symbol of a device object.
#[derive(Debug, Clone)]
pub struct Sym {
    /// Its name.
    pub name: String,
    /// Undefined here.
    pub undefined: bool,
    /// Weak.
    pub weak: bool,
    /// Hidden visibility.
    pub hidden: bool,
}

/// The global symbols of a device object (ELF; nothing for anything else).
pub fn symbols(data: &[u8]) -> Vec<Sym> {
    let Ok(file) = object::File::parse(data) else {
        return Vec::new();
    };
    file.symbols()
        .filter(|s| s.is_global() && !s.is_local())
        .filter_map(|s| {
            let name = s.name().ok()?;
            if name.is_empty() {
                return None;
            }
            let hidden = match s.flags() {
                SymbolFlags::Elf { st_other, .. } => {
                    st_other.visibility() == object::elf::STV_HIDDEN
                }
                _ => false,
            };
            Some(Sym {
                name: name.to_string(),
                undefined: s.is_undefined(),
                weak: s.is_weak(),
                hidden,
            })
        })
        .collect()
}

/// What the symbol table knows of a name.
#[derive(Debug, Clone, Copy)]
struct State {
    undefined: bool,
    weak: bool,
}

/// The device symbol table of one link: per device triple, the symbols of
/// the device code taken so far.
#[derive(Debug, Default)]
pub struct Resolver {
    table: HashMap<(String, String), State>,
}

impl Resolver {
    /// Whether an archive member whose device code (for `triple`) has
    /// `syms` is taken.
    pub fn wanted(&self, triple: &str, syms: &[Sym]) -> bool {
        syms.iter().filter(|s| !s.undefined).any(|s| {
            match self.table.get(&(triple.to_string(), s.name.clone())) {
                None => !s.hidden,
                Some(old) => old.undefined && (!old.weak || !s.hidden),
            }
        })
    }

    /// Adds taken device code (for `triple`) to the table.
    pub fn add(&mut self, triple: &str, syms: &[Sym]) {
        for s in syms {
            let key = (triple.to_string(), s.name.clone());
            match self.table.get_mut(&key) {
                None => {
                    self.table.insert(
                        key,
                        State {
                            undefined: s.undefined,
                            weak: s.weak,
                        },
                    );
                }
                Some(old) => {
                    if !s.undefined {
                        old.undefined = false;
                        old.weak = s.weak;
                    }
                }
            }
        }
    }
}
