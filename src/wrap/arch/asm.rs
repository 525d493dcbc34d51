//! The assembler core every CPU's encoder writes through: the code bytes,
//! labels for local jumps and calls, relocations against [`Target`]s, the
//! unwind rules (CFA tracking) and the spans of the functions written.
//!
//! The core knows nothing of instruction encodings. A CPU writes its
//! instructions as bytes and marks, at the current offset, a field that
//! refers to a label ([`Asm::fixup`], with a CPU-specific [`Fixup`] kind
//! that fills the field in once the label's offset is known) or to
//! something outside the code ([`Asm::reloc`]). Unwind rules are recorded
//! at the current offset too, relative to the start of the function being
//! written ([`Asm::begin`] to [`Asm::end`]), as llc emits them: one rule
//! after each instruction that moves the stack pointer or saves a
//! register.

use gimli::write::CallFrameInstruction;
use object::elf::RelocationType;

use super::code::{CodeReloc, FatbinCode, Function, Span, Target, TargetReloc, addend, internal};
use crate::error::Result;
use crate::num::{len64, u64_from};

/// A position in the code, bound once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Label(usize);

/// How a CPU fills in a field that refers to a label: the displacement
/// forms of its jumps, calls and address computations.
pub(crate) trait Fixup: Copy {
    /// Fills in the field marked at `at` in `code` so that it refers to
    /// offset `target` of the same code.
    fn apply(self, code: &mut [u8], at: usize, target: usize) -> Result<()>;
}

/// The code being written; `F` is the CPU's kind of label fixup.
#[derive(Debug)]
pub(crate) struct Asm<F> {
    code: Vec<u8>,
    relocs: Vec<TargetReloc>,
    labels: Vec<Option<usize>>,
    /// (offset of the field, label, how to fill it in).
    fixups: Vec<(usize, Label, F)>,
    /// Relocations whose addend is a label's offset: (index in `relocs`,
    /// label).
    to_labels: Vec<(usize, Label)>,
    /// Start of the function being written.
    start: usize,
    /// Its CFA's offset from the stack pointer at this point.
    cfa: i32,
    cfi: Vec<(u32, CallFrameInstruction)>,
}

impl<F> Default for Asm<F> {
    fn default() -> Self {
        Asm {
            code: Vec::new(),
            relocs: Vec::new(),
            labels: Vec::new(),
            fixups: Vec::new(),
            to_labels: Vec::new(),
            start: 0,
            cfa: 0,
            cfi: Vec::new(),
        }
    }
}

impl<F: Fixup> Asm<F> {
    /// Appends instruction bytes.
    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        self.code.extend_from_slice(bytes);
    }

    /// The offset the next byte lands at, from the start of the code.
    pub(crate) fn here(&self) -> u64 {
        len64(&self.code)
    }

    /// The offset the next byte lands at, from the start of the function.
    pub(crate) fn in_function(&self) -> u64 {
        u64_from(self.code.len() - self.start)
    }

    /// A new label, bound later with [`Asm::bind`].
    pub(crate) fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// Binds `l` to the current offset.
    pub(crate) fn bind(&mut self, l: Label) {
        self.labels[l.0] = Some(self.code.len());
    }

    /// The offset `l` is bound to.
    pub(crate) fn offset_of(&self, l: Label) -> Result<u64> {
        self.labels[l.0]
            .map(u64_from)
            .ok_or_else(|| internal("a label of the registration code is not bound"))
    }

    /// Marks a field at the current offset, to be filled in with `how` once
    /// `l` is bound (the CPU writes the field's placeholder bytes next).
    pub(crate) fn fixup(&mut self, how: F, l: Label) {
        self.fixups.push((self.code.len(), l, how));
    }

    /// A relocation at the current offset (the CPU writes the field next).
    pub(crate) fn reloc(&mut self, r_type: RelocationType, target: Target, addend: i64) {
        self.relocs.push(TargetReloc {
            offset: self.here(),
            r_type,
            target,
            addend,
        });
    }

    /// A relocation at the current offset against the code itself, whose
    /// addend is the offset of `l` (how AArch64 takes the address of a
    /// function of the same section).
    pub(crate) fn reloc_to(&mut self, r_type: RelocationType, l: Label) {
        self.to_labels.push((self.relocs.len(), l));
        self.reloc(r_type, Target::Code, 0);
    }

    /// Starts a function whose CFA is `cfa` bytes above the stack pointer
    /// on entry.
    pub(crate) fn begin(&mut self, cfa: i32) {
        self.start = self.code.len();
        self.cfa = cfa;
        self.cfi.clear();
    }

    /// Ends the function begun last: where it is and its unwind rules.
    pub(crate) fn end(&mut self) -> Span {
        Span {
            offset: u64_from(self.start),
            len: self.in_function(),
            cfi: std::mem::take(&mut self.cfi),
        }
    }

    fn rule(&mut self, insn: CallFrameInstruction) {
        let at = u32::try_from(self.code.len() - self.start).unwrap_or(u32::MAX);
        self.cfi.push((at, insn));
    }

    /// From here the CFA is `cfa` bytes above the stack pointer.
    pub(crate) fn cfa_offset(&mut self, cfa: i32) {
        self.cfa = cfa;
        self.rule(CallFrameInstruction::CfaOffset(cfa));
    }

    /// The stack pointer moved by `by` bytes (down is positive).
    pub(crate) fn moved(&mut self, by: i32) {
        self.cfa_offset(self.cfa + by);
    }

    /// A block reached only by jumps, with the CFA `cfa` there: a rule only
    /// if that differs from the CFA of the code just before.
    pub(crate) fn cfa_is(&mut self, cfa: i32) {
        if self.cfa != cfa {
            self.cfa_offset(cfa);
        }
    }

    /// Registers saved by the prologue, at these offsets from the CFA.
    pub(crate) fn saved(&mut self, regs: &[(gimli::Register, i32)]) {
        for &(r, off) in regs {
            self.rule(CallFrameInstruction::Offset(r, off));
        }
    }

    /// Registers restored by the epilogue (to their rule on entry).
    pub(crate) fn restored(&mut self, regs: &[gimli::Register]) {
        for &r in regs {
            self.rule(CallFrameInstruction::Restore(r));
        }
    }

    /// Fills in every label reference.
    fn resolve(&mut self) -> Result<()> {
        for &(at, l, how) in &self.fixups {
            let target = self.labels[l.0]
                .ok_or_else(|| internal("a jump of the registration code has no target"))?;
            how.apply(&mut self.code, at, target)?;
        }
        for &(i, l) in &self.to_labels {
            let at = self.offset_of(l)?;
            self.relocs[i].addend = addend(at)?;
        }
        Ok(())
    }

    /// The one function written (from offset 0), its relocations all
    /// against symbols of the object or named undefined symbols.
    pub(crate) fn function(mut self) -> Result<Function> {
        self.resolve()?;
        let relocs = self
            .relocs
            .iter()
            .map(|r| match r.target {
                Target::Symbol(_) | Target::Runtime(_) | Target::Label(..) => Ok(CodeReloc {
                    offset: r.offset,
                    r_type: r.r_type,
                    target: r.target,
                    addend: r.addend,
                }),
                _ => Err(internal("a function refers to something not a symbol")),
            })
            .collect::<Result<_>>()?;
        Ok(Function {
            code: self.code,
            relocs,
            cfi: self.cfi,
        })
    }

    /// The CUDA or HIP code section with every label reference filled in,
    /// its functions, and the offsets of the jump table's cases (in table
    /// order).
    pub(crate) fn finish(
        mut self,
        [reg, unreg, globals]: [Span; 3],
        cases: &[Label],
    ) -> Result<FatbinCode> {
        self.resolve()?;
        let jump_table = cases
            .iter()
            .map(|&l| self.offset_of(l))
            .collect::<Result<_>>()?;
        Ok(FatbinCode {
            code: self.code,
            relocs: self.relocs,
            reg,
            unreg,
            globals,
            jump_table,
        })
    }
}
