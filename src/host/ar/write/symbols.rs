//! Why the archive writer cannot list a member's symbols, in the words
//! of each check that fails.

/// Why the symbols of a member LLVM lists cannot be listed (the member
/// is then refused).
#[derive(Debug)]
pub(super) enum SymbolsError {
    /// A COFF object's header is past the end of the member.
    CoffHeader,
    /// A COFF object's section table is past the end of the member.
    CoffSections,
    /// A COFF object counts symbols but has no symbol table.
    CoffSymtabMissing,
    /// The name of COFF symbol N is in an empty string table.
    CoffNameNoStrings(usize),
    /// The name of COFF symbol N is past the string table.
    CoffNamePast(usize),
    /// An ELF file whose class is neither 32 nor 64 bits.
    ElfClass,
    /// An ELF file that does not parse.
    Elf(object::read::Error),
    /// LLVM bitcode whose symbol table cannot be read.
    Bitcode(&'static str),
    /// An object format (named) whose symbols this writer cannot list.
    Other(&'static str),
}

impl std::fmt::Display for SymbolsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SymbolsError::CoffHeader => f.write_str("COFF header past the end"),
            SymbolsError::CoffSections => f.write_str("COFF section table past the end"),
            SymbolsError::CoffSymtabMissing => f.write_str("COFF symbol table missing"),
            SymbolsError::CoffNameNoStrings(i) => {
                write!(f, "the name of COFF symbol {i} is in an empty string table")
            }
            SymbolsError::CoffNamePast(i) => {
                write!(f, "the name of COFF symbol {i} is past the string table")
            }
            SymbolsError::ElfClass => f.write_str("invalid ELF class"),
            SymbolsError::Elf(e) => write!(f, "invalid ELF file: {e}"),
            SymbolsError::Bitcode(e) => {
                write!(
                    f,
                    "cannot read the symbol table of this LLVM bitcode file: {e}"
                )
            }
            SymbolsError::Other(format) => write!(
                f,
                "LLVM lists the symbols of {format} files in the archive symbol table, which \
                 offload-kit cannot do"
            ),
        }
    }
}
