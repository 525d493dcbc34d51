//! The assembler the Windows code is written through: bytes, labels with
//! the CPU's fixups (`arch`'s x86-64 displacements and AArch64 branches),
//! relocations against symbols by name, and the functions written with
//! their unwind data. It is smaller than `arch::asm`, whose relocations are
//! ELF's and whose unwind rules are DWARF's: COFF relocations name a type
//! of their own, and Windows unwinds from `.pdata`/`.xdata`.

use crate::error::Result;
use crate::wrap::arch::asm::Fixup;
use crate::wrap::arch::internal;

/// A position in the code, bound once.
#[derive(Debug, Clone, Copy)]
pub(super) struct Label(usize);

/// What a relocation in the code refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Target {
    /// A symbol, by name: the object's own or one defined elsewhere.
    Named(String),
    /// The jump table of the entry loop (the `.rdata` section).
    JumpTable,
}

/// A relocation in the code; its addend is the field's bytes (always 0).
#[derive(Debug, Clone)]
pub(super) struct CodeReloc {
    /// Offset in the code.
    pub offset: u32,
    /// `IMAGE_REL_*` type.
    pub r_type: u16,
    /// What it refers to.
    pub target: Target,
}

/// How a function unwinds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Unwind {
    /// An unwind record in `.xdata` (x64 `UNWIND_INFO`, or an ARM64
    /// `.xdata` record), pointed at from `.pdata`.
    Xdata(Vec<u8>),
    /// ARM64's packed form: the whole record in the `.pdata` entry's second
    /// word.
    Packed(u32),
}

/// A function of the code.
#[derive(Debug, Clone)]
pub(super) struct Func {
    /// Its symbol's name.
    pub name: String,
    /// Offset in the code.
    pub offset: u32,
    /// Length, without the padding after it.
    pub len: u32,
    /// Its unwind data.
    pub unwind: Unwind,
}

/// The code section, as llc lays it out.
#[derive(Debug, Default)]
pub(super) struct Code {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// The relocations, by offset.
    pub relocs: Vec<CodeReloc>,
    /// The functions, by offset.
    pub funcs: Vec<Func>,
    /// The jump table's cases (code offsets), in table order; empty when
    /// the code has none.
    pub jump_table: Vec<u32>,
}

/// The code being written; `F` is the CPU's kind of label fixup.
#[derive(Debug)]
pub(super) struct Asm<F> {
    code: Vec<u8>,
    relocs: Vec<CodeReloc>,
    labels: Vec<Option<usize>>,
    fixups: Vec<(usize, Label, F)>,
    funcs: Vec<Func>,
    /// The function being written: its name and start.
    current: (String, usize),
}

impl<F> Default for Asm<F> {
    fn default() -> Self {
        Asm {
            code: Vec::new(),
            relocs: Vec::new(),
            labels: Vec::new(),
            fixups: Vec::new(),
            funcs: Vec::new(),
            current: (String::new(), 0),
        }
    }
}

impl<F: Fixup> Asm<F> {
    /// Appends instruction bytes.
    pub(super) fn bytes(&mut self, bytes: &[u8]) {
        self.code.extend_from_slice(bytes);
    }

    /// The offset the next byte lands at, from the start of the code.
    pub(super) fn here(&self) -> usize {
        self.code.len()
    }

    /// The offset the next byte lands at, from the start of the function.
    pub(super) fn in_function(&self) -> usize {
        self.code.len() - self.current.1
    }

    /// A new label, bound later with [`Asm::bind`].
    pub(super) fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// Binds `l` to the current offset.
    pub(super) fn bind(&mut self, l: Label) {
        if let Some(slot) = self.labels.get_mut(l.0) {
            *slot = Some(self.code.len());
        }
    }

    /// Marks a field at the current offset, filled in with `how` once `l`
    /// is bound (the CPU writes the field's placeholder bytes next).
    pub(super) fn fixup(&mut self, how: F, l: Label) {
        self.fixups.push((self.code.len(), l, how));
    }

    /// A relocation at the current offset (the CPU writes the field next).
    pub(super) fn reloc(&mut self, r_type: u16, target: Target) {
        self.relocs.push(CodeReloc {
            offset: u32::try_from(self.code.len()).unwrap_or(u32::MAX),
            r_type,
            target,
        });
    }

    /// Starts the function `name` here.
    pub(super) fn begin(&mut self, name: &str) {
        self.current = (name.to_string(), self.code.len());
    }

    /// Ends the function begun last, which unwinds as `unwind` says.
    pub(super) fn end(&mut self, unwind: Unwind) -> Result<()> {
        let too_large = || internal("the registration code is too large");
        let (name, start) = std::mem::take(&mut self.current);
        self.funcs.push(Func {
            name,
            offset: u32::try_from(start).map_err(|_| too_large())?,
            len: u32::try_from(self.code.len() - start).map_err(|_| too_large())?,
            unwind,
        });
        Ok(())
    }

    /// The code with every label reference filled in, and the offsets of
    /// the jump table's `cases`.
    pub(super) fn finish(mut self, cases: &[Label]) -> Result<Code> {
        let offset = |labels: &[Option<usize>], l: Label| {
            labels
                .get(l.0)
                .copied()
                .flatten()
                .ok_or_else(|| internal("a label of the registration code is not bound"))
        };
        for &(at, l, how) in &self.fixups {
            let target = offset(&self.labels, l)?;
            how.apply(&mut self.code, at, target)?;
        }
        let jump_table = cases
            .iter()
            .map(|&l| {
                let at = offset(&self.labels, l)?;
                u32::try_from(at).map_err(|_| internal("a case is out of range"))
            })
            .collect::<Result<_>>()?;
        Ok(Code {
            bytes: self.code,
            relocs: self.relocs,
            funcs: self.funcs,
            jump_table,
        })
    }
}
