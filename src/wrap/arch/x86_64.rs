//! x86-64 (System V psABI, LP64), as LLVM 22's `llc -relocation-model=pic`
//! encodes the wrapper's functions (wrapper-abi.md §4.4, Appendix A):
//!
//! ```text
//! push rax                     ; 16-byte stack alignment at each call
//! lea  rdi, [rip + arg]        ; R_X86_64_PC32 arg - 4 (none for a function in the same section)
//! call callee                  ; R_X86_64_PLT32 callee - 4
//! …                            ; one lea/call pair per call
//! pop  rax
//! ret
//! ```

use gimli::write::{CallFrameInstruction, CommonInformationEntry};
use gimli::{DW_EH_PE_pcrel, DW_EH_PE_sdata4, Encoding, Format, X86_64 as Reg};
use object::elf;

use super::{
    Arg, Call, CodeReloc, Cpu, Fatbin, FatbinCode, Function, Span, Target, TargetReloc, addend,
    internal,
};
use crate::error::{Error, Result};

/// The x86-64 encoder.
pub(crate) struct X86_64;

/// `push rax`
const PUSH_RAX: u8 = 0x50;
/// `lea rdi, [rip + disp32]`: REX.W, opcode, ModRM (rdi, RIP-relative).
const LEA_RDI_RIP: [u8; 3] = [0x48, 0x8d, 0x3d];
/// `call rel32`
const CALL_REL32: u8 = 0xe8;
/// `pop rax`
const POP_RAX: u8 = 0x58;
/// `ret`
const RET: u8 = 0xc3;

/// The multi-byte NOPs LLVM pads with, by length 1..=10 (the recommended
/// forms of the Intel SDM, "NOP", and a CS-prefixed 10-byte one); longer
/// padding is 10-byte NOPs and the rest.
const NOPS: [&[u8]; 10] = [
    &[0x90],                                           // nop
    &[0x66, 0x90],                                     // xchg ax, ax
    &[0x0f, 0x1f, 0x00],                               // nop [rax]
    &[0x0f, 0x1f, 0x40, 0x00],                         // nop [rax + 0]
    &[0x0f, 0x1f, 0x44, 0x00, 0x00],                   // nop [rax + rax + 0]
    &[0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00],             // nop [rax + rax + 0] (16-bit)
    &[0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00],       // nop [rax + 0] (disp32)
    &[0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00], // nop [rax + rax + 0] (disp32)
    &[0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
    &[0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
];

impl Cpu for X86_64 {
    fn machine(&self) -> elf::Machine {
        elf::EM_X86_64
    }

    fn e_flags(&self) -> u32 {
        // The psABI defines no flags.
        0
    }

    fn code_align(&self) -> u64 {
        16
    }

    fn data_align(&self) -> u64 {
        // LLVM aligns global arrays of 16 bytes or more to 16 on x86-64.
        16
    }

    fn byte_array_align(&self) -> u64 {
        // i8 is byte-aligned.
        1
    }

    fn abs64(&self) -> elf::RelocationType {
        elf::R_X86_64_64
    }

    fn eh_pcrel32(&self) -> elf::RelocationType {
        elf::R_X86_64_PC32
    }

    fn eh_frame_type(&self) -> elf::SectionType {
        elf::SHT_X86_64_UNWIND
    }

    fn cie(&self) -> CommonInformationEntry {
        let encoding = Encoding {
            format: Format::Dwarf32,
            // .eh_frame CIEs are version 1.
            version: 1,
            // gimli pads each CIE and FDE to this many bytes; LLVM pads
            // .eh_frame records to 4 (pointers here are 4-byte PC-relative,
            // so nothing else depends on it).
            address_size: 4,
        };
        // Code alignment 1: x86 instructions are byte-aligned. Data alignment
        // -8: saved registers sit in 8-byte slots below the CFA.
        let mut cie = CommonInformationEntry::new(encoding, 1, -8, Reg::RA);
        cie.fde_address_encoding = DW_EH_PE_pcrel | DW_EH_PE_sdata4;
        // On entry the CFA is rsp + 8 and the return address is at CFA - 8.
        cie.add_instruction(CallFrameInstruction::Cfa(Reg::RSP, 8));
        cie.add_instruction(CallFrameInstruction::Offset(Reg::RA, -8));
        cie
    }

    fn function(&self, at: u64, calls: &[Call]) -> Result<Function> {
        let mut f = Function::default();
        f.code.push(PUSH_RAX);
        f.cfi
            .push((cfi_offset(&f.code)?, CallFrameInstruction::CfaOffset(16)));
        for call in calls {
            f.code.extend_from_slice(&LEA_RDI_RIP);
            let field = len64(&f.code);
            match call.arg {
                Arg::Data {
                    section, offset, ..
                } => {
                    // S + A - P with P the field: the target is relative to
                    // the end of the instruction, 4 bytes further.
                    f.relocs.push(CodeReloc {
                        offset: field,
                        r_type: elf::R_X86_64_PC32,
                        symbol: section,
                        addend: addend(offset)? - 4,
                    });
                    f.code.extend_from_slice(&[0; 4]);
                }
                Arg::Code { offset, .. } => {
                    // Same section: the assembler resolves it, no relocation.
                    let next = at + field + 4;
                    let disp = i32::try_from(addend(offset)? - addend(next)?)
                        .map_err(|_| Error::usage("wrapper code too large"))?;
                    f.code.extend_from_slice(&disp.to_le_bytes());
                }
            }
            f.code.push(CALL_REL32);
            f.relocs.push(CodeReloc {
                offset: len64(&f.code),
                r_type: elf::R_X86_64_PLT32,
                symbol: call.callee,
                addend: -4,
            });
            f.code.extend_from_slice(&[0; 4]);
        }
        f.code.push(POP_RAX);
        f.cfi
            .push((cfi_offset(&f.code)?, CallFrameInstruction::CfaOffset(8)));
        f.code.push(RET);
        Ok(f)
    }

    fn padding(&self, len: usize) -> Vec<u8> {
        nops(len)
    }

    fn fatbin_code(&self, which: Fatbin) -> Result<FatbinCode> {
        match which {
            Fatbin::Cuda => cuda_code(),
            Fatbin::Hip => hip_code(),
        }
    }
}

fn nops(mut len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    while len > 0 {
        let n = len.min(NOPS.len());
        v.extend_from_slice(NOPS[n - 1]);
        len -= n;
    }
    v
}

// ---------------------------------------------------------------------------
// CUDA and HIP registration code (wrapper-abi.md §5)
// ---------------------------------------------------------------------------

/// A position in the code, bound once.
#[derive(Debug, Clone, Copy)]
struct Label(usize);

/// A jump or call displacement to fill in once its label is bound.
struct Fixup {
    /// Offset of the displacement field.
    at: usize,
    label: Label,
    /// 1 (rel8) or 4 (rel32) bytes.
    width: usize,
}

/// A minimal assembler for the fixed registration code: instruction bytes
/// (each written with its assembly in a comment), labels for local jumps
/// and calls, relocations for everything outside the section, and the
/// unwind rule after every instruction that moves the stack pointer, as
/// llc emits them (the CFA as laid out, one function after another).
#[derive(Default)]
struct Asm {
    code: Vec<u8>,
    relocs: Vec<TargetReloc>,
    labels: Vec<Option<usize>>,
    fixups: Vec<Fixup>,
    /// Start of the function being written.
    start: usize,
    /// Its CFA offset from the stack pointer at this point.
    cfa: i32,
    cfi: Vec<(u32, CallFrameInstruction)>,
}

impl Asm {
    fn op(&mut self, bytes: &[u8]) {
        self.code.extend_from_slice(bytes);
    }

    fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    fn bind(&mut self, l: Label) {
        self.labels[l.0] = Some(self.code.len());
    }

    /// Starts a function: the CFA is the stack pointer plus the return
    /// address.
    fn begin(&mut self) {
        self.start = self.code.len();
        self.cfa = 8;
        self.cfi.clear();
    }

    fn end(&mut self) -> Span {
        Span {
            offset: len64(&self.code[..self.start]),
            len: len64(&self.code[self.start..]),
            cfi: std::mem::take(&mut self.cfi),
        }
    }

    fn rule(&mut self, insn: CallFrameInstruction) {
        let at = u32::try_from(self.code.len() - self.start).unwrap_or(u32::MAX);
        self.cfi.push((at, insn));
    }

    /// Records that the stack pointer moved by `by` bytes (down is positive).
    fn moved(&mut self, by: i32) {
        self.cfa += by;
        self.rule(CallFrameInstruction::CfaOffset(self.cfa));
    }

    /// A block reached only by jumps, with the CFA `cfa` there.
    fn cfa_is(&mut self, cfa: i32) {
        if self.cfa != cfa {
            self.cfa = cfa;
            self.rule(CallFrameInstruction::CfaOffset(cfa));
        }
    }

    /// Registers the prologue saved, with their CFA offsets.
    fn saved(&mut self, regs: &[(gimli::Register, i32)]) {
        for &(r, off) in regs {
            self.rule(CallFrameInstruction::Offset(r, off));
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.op(bytes);
        self.moved(8);
    }

    fn pop(&mut self, bytes: &[u8]) {
        self.op(bytes);
        self.moved(-8);
    }

    /// `push 0`
    fn push_zero(&mut self) {
        self.push(&[0x6a, 0x00]);
    }

    /// `add rsp, n`
    fn add_rsp(&mut self, n: u8) {
        self.op(&[0x48, 0x83, 0xc4, n]);
        self.moved(-i32::from(n));
    }

    /// `sub rsp, n`
    fn sub_rsp(&mut self, n: u8) {
        self.op(&[0x48, 0x83, 0xec, n]);
        self.moved(i32::from(n));
    }

    /// An instruction ending in a RIP-relative 32-bit field that refers to
    /// `target`.
    fn rip(&mut self, opcode: &[u8], target: Target) {
        self.op(opcode);
        self.relocs.push(TargetReloc {
            offset: len64(&self.code),
            r_type: elf::R_X86_64_PC32,
            target,
            addend: -4,
        });
        self.op(&[0; 4]);
    }

    /// `call name` through the PLT.
    fn call(&mut self, name: &'static str) {
        self.op(&[CALL_REL32]);
        self.relocs.push(TargetReloc {
            offset: len64(&self.code),
            r_type: elf::R_X86_64_PLT32,
            target: Target::Runtime(name),
            addend: -4,
        });
        self.op(&[0; 4]);
    }

    /// An instruction ending in a displacement to `l`, of `width` bytes.
    fn to(&mut self, opcode: &[u8], l: Label, width: usize) {
        self.op(opcode);
        self.fixups.push(Fixup {
            at: self.code.len(),
            label: l,
            width,
        });
        self.op(&[0; 4][..width]);
    }

    /// NOPs up to the next multiple of 16.
    fn align16(&mut self) {
        let pad = self.code.len().next_multiple_of(16) - self.code.len();
        self.code.extend(nops(pad));
    }

    /// The code section with every displacement filled in, and its
    /// functions (`jump_table`: code offsets of the table's cases).
    fn finish(
        mut self,
        reg: Span,
        unreg: Span,
        globals: Span,
        jump_table: Vec<u64>,
    ) -> Result<FatbinCode> {
        let broken = || internal("a jump of the registration code is out of range");
        for f in &self.fixups {
            let target = self.labels[f.label.0].ok_or_else(broken)?;
            let next = f.at + f.width;
            let disp = i64::try_from(target).map_err(|_| broken())?
                - i64::try_from(next).map_err(|_| broken())?;
            let field = &mut self.code[f.at..next];
            if f.width == 1 {
                field.copy_from_slice(&[i8::try_from(disp).map_err(|_| broken())? as u8]);
            } else {
                let d = i32::try_from(disp).map_err(|_| broken())?;
                field.copy_from_slice(&d.to_le_bytes());
            }
        }
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

/// `struct __tgt_offload_entry` fields the loop reads (56-byte entries).
const ENTRY_SIZE: u8 = 56;

/// The handle and an entry's address and name as the first four arguments
/// (`h, addr, name, name`): `mov rdi, rbx; mov rsi, rdx; mov rdx, rcx`.
fn handle_address_name(a: &mut Asm) {
    a.op(&[0x48, 0x89, 0xdf]); // mov rdi, rbx
    a.op(&[0x48, 0x89, 0xd6]); // mov rsi, rdx
    a.op(&[0x48, 0x89, 0xca]); // mov rdx, rcx
}

/// The `atexit` handler at `unreg`: load the handle, unregister; then
/// padding to the next function.
fn unregister(a: &mut Asm, unreg: Label, name: &'static str) -> Span {
    a.bind(unreg);
    a.begin();
    a.push(&[PUSH_RAX]);
    a.rip(&[0x48, 0x8b, 0x3d], Target::Handle); // mov rdi, [rip + handle]
    a.call(name);
    a.pop(&[POP_RAX]);
    a.op(&[RET]);
    let span = a.end();
    a.align16();
    span
}

/// A kernel: `PRegisterFunction(h, addr, name, name, -1, 0 × 5)`, the last
/// four zeros on the stack; then padding to the loop's next step.
fn register_function(a: &mut Asm, name: &'static str) {
    handle_address_name(a);
    a.op(&[0x41, 0xb8, 0xff, 0xff, 0xff, 0xff]); // mov r8d, -1
    a.op(&[0x45, 0x31, 0xc9]); // xor r9d, r9d
    for _ in 0..4 {
        a.push_zero();
    }
    a.call(name);
    a.add_rsp(0x20);
    a.align16();
}

/// The loop's step at `next`: the next entry (`je done` with a `done_width`
/// displacement at the end), then at `check` the kind test (`cmp word
/// [r15 + 10], kind`) and the address and name in rdx and rcx.
fn next_entry(a: &mut Asm, next: Label, check: Label, done: Label, done_width: usize, kind: u8) {
    a.bind(next);
    a.op(&[0x49, 0x83, 0xc7, ENTRY_SIZE]); // add r15, 56
    a.op(&[0x4d, 0x39, 0xf7]); // cmp r15, r14
    if done_width == 1 {
        a.to(&[0x74], done, 1); // je done
    } else {
        a.to(&[0x0f, 0x84], done, 4); // je done
    }
    a.bind(check);
    a.op(&[0x66, 0x41, 0x83, 0x7f, 0x0a, kind]); // cmp word [r15 + 10], kind
    a.to(&[0x75], next, 1); // jne next
    a.op(&[0x49, 0x8b, 0x57, 0x10]); // mov rdx, [r15 + 16] (address)
    a.op(&[0x49, 0x8b, 0x4f, 0x18]); // mov rcx, [r15 + 24] (name)
}

/// The CUDA registration code of LLVM 22 (`llc -relocation-model=pic`):
/// the constructor registers the fatbin, keeps the handle, runs the entry
/// loop, ends the registration and `atexit`s the unregistration. The loop
/// registers kernels (size 0), variables and managed variables of the
/// entries whose kind is CUDA (2); surfaces and textures are skipped.
fn cuda_code() -> Result<FatbinCode> {
    use Target::*;
    let mut a = Asm::default();
    let (globals, unreg) = (a.label(), a.label());

    a.begin();
    a.push(&[0x53]); // push rbx
    a.saved(&[(Reg::RBX, -16)]);
    a.rip(&LEA_RDI_RIP, Wrapper); // lea rdi, [rip + .fatbin_wrapper]
    a.call("__cudaRegisterFatBinary");
    a.op(&[0x48, 0x89, 0xc3]); // mov rbx, rax
    a.rip(&[0x48, 0x89, 0x05], Handle); // mov [rip + handle], rax
    a.op(&[0x48, 0x89, 0xc7]); // mov rdi, rax
    a.to(&[CALL_REL32], globals, 4); // call .cuda.globals_reg
    a.op(&[0x48, 0x89, 0xdf]); // mov rdi, rbx
    a.call("__cudaRegisterFatBinaryEnd");
    a.to(&LEA_RDI_RIP, unreg, 4); // lea rdi, [rip + .cuda.fatbin_unreg]
    a.call("atexit");
    a.pop(&[0x5b]); // pop rbx
    a.op(&[RET]);
    let reg = a.end();
    a.align16();

    let unreg_span = unregister(&mut a, unreg, "__cudaUnregisterFatBinary");

    let (func, next, check, managed, done) =
        (a.label(), a.label(), a.label(), a.label(), a.label());
    a.bind(globals);
    a.begin();
    a.push(&[0x41, 0x57]); // push r15
    a.push(&[0x41, 0x56]); // push r14
    a.push(&[0x53]); // push rbx
    a.saved(&[(Reg::RBX, -32), (Reg::R14, -24), (Reg::R15, -16)]);
    a.rip(&[0x4c, 0x8d, 0x35], EntriesStop); // lea r14, [rip + __stop_…]
    a.rip(&[0x4c, 0x8d, 0x3d], EntriesStart); // lea r15, [rip + __start_…]
    a.op(&[0x4d, 0x39, 0xf7]); // cmp r15, r14
    a.to(&[0x0f, 0x84], done, 4); // je done
    a.op(&[0x48, 0x89, 0xfb]); // mov rbx, rdi (the handle)
    a.to(&[0xeb], check, 1); // jmp check
    a.bind(func);
    register_function(&mut a, "__cudaRegisterFunction");
    next_entry(&mut a, next, check, done, 1, 2); // kind CUDA
    a.op(&[0x49, 0x8b, 0x47, 0x20]); // mov rax, [r15 + 32] (size)
    a.op(&[0x48, 0x85, 0xc0]); // test rax, rax
    a.to(&[0x74], func, 1); // je func
    a.op(&[0x45, 0x8b, 0x57, 0x0c]); // mov r10d, [r15 + 12] (flags)
    a.op(&[0x44, 0x89, 0xd6]); // mov esi, r10d
    a.op(&[0x83, 0xe6, 0x07]); // and esi, 7
    a.op(&[0x83, 0xfe, 0x01]); // cmp esi, 1
    a.to(&[0x74], managed, 1); // je managed
    a.op(&[0x85, 0xf6]); // test esi, esi
    a.to(&[0x75], next, 1); // jne next
    // A variable: __cudaRegisterVar(h, addr, name, name, extern, size,
    // constant, 0).
    a.op(&[0x45, 0x89, 0xd0]); // mov r8d, r10d
    a.op(&[0x41, 0x83, 0xe0, 0x08]); // and r8d, 8
    a.op(&[0x41, 0xc1, 0xe8, 0x03]); // shr r8d, 3
    a.op(&[0x41, 0x83, 0xe2, 0x10]); // and r10d, 16
    a.op(&[0x41, 0xc1, 0xea, 0x04]); // shr r10d, 4
    handle_address_name(&mut a);
    a.op(&[0x49, 0x89, 0xc1]); // mov r9, rax
    a.push_zero();
    a.push(&[0x41, 0x52]); // push r10
    a.call("__cudaRegisterVar");
    a.add_rsp(0x10);
    a.to(&[0xeb], next, 1); // jmp next
    // A managed variable: __cudaRegisterManagedVar(h, aux, addr, name,
    // size, (u32) data).
    a.bind(managed);
    a.op(&[0x49, 0x8b, 0x77, 0x30]); // mov rsi, [r15 + 48] (aux address)
    a.op(&[0x45, 0x8b, 0x4f, 0x28]); // mov r9d, [r15 + 40] (data)
    a.op(&[0x48, 0x89, 0xdf]); // mov rdi, rbx
    a.op(&[0x49, 0x89, 0xc0]); // mov r8, rax
    a.call("__cudaRegisterManagedVar");
    a.to(&[0xeb], next, 1); // jmp next
    a.bind(done);
    a.pop(&[0x5b]); // pop rbx
    a.pop(&[0x41, 0x5e]); // pop r14
    a.pop(&[0x41, 0x5f]); // pop r15
    a.op(&[RET]);
    let globals_span = a.end();

    a.finish(reg, unreg_span, globals_span, Vec::new())
}

/// The HIP registration code of LLVM 22: as CUDA's without the end of
/// registration, with kind HIP (4), and with surfaces and textures
/// registered too, through a jump table on the entry type.
fn hip_code() -> Result<FatbinCode> {
    use Target::*;
    let mut a = Asm::default();
    let (globals, unreg) = (a.label(), a.label());

    a.begin();
    a.push(&[PUSH_RAX]);
    a.rip(&LEA_RDI_RIP, Wrapper); // lea rdi, [rip + .fatbin_wrapper]
    a.call("__hipRegisterFatBinary");
    a.rip(&[0x48, 0x89, 0x05], Handle); // mov [rip + handle], rax
    a.op(&[0x48, 0x89, 0xc7]); // mov rdi, rax
    a.to(&[CALL_REL32], globals, 4); // call .hip.globals_reg
    a.to(&LEA_RDI_RIP, unreg, 4); // lea rdi, [rip + .hip.fatbin_unreg]
    a.call("atexit");
    a.pop(&[POP_RAX]);
    a.op(&[RET]);
    let reg = a.end();
    a.align16();

    let unreg_span = unregister(&mut a, unreg, "__hipUnregisterFatBinary");

    let [
        func,
        next,
        check,
        global,
        surface,
        texture,
        pop16,
        managed,
        done,
    ] = [(); 9].map(|()| a.label());
    a.bind(globals);
    a.begin();
    a.push(&[0x41, 0x57]); // push r15
    a.push(&[0x41, 0x56]); // push r14
    a.push(&[0x41, 0x54]); // push r12
    a.push(&[0x53]); // push rbx
    a.push(&[PUSH_RAX]); // (alignment)
    a.saved(&[
        (Reg::RBX, -40),
        (Reg::R12, -32),
        (Reg::R14, -24),
        (Reg::R15, -16),
    ]);
    a.rip(&[0x4c, 0x8d, 0x35], EntriesStop); // lea r14, [rip + __stop_…]
    a.rip(&[0x4c, 0x8d, 0x3d], EntriesStart); // lea r15, [rip + __start_…]
    a.op(&[0x4d, 0x39, 0xf7]); // cmp r15, r14
    a.to(&[0x0f, 0x84], done, 4); // je done
    a.op(&[0x48, 0x89, 0xfb]); // mov rbx, rdi (the handle)
    a.rip(&[0x4c, 0x8d, 0x25], JumpTable); // lea r12, [rip + table]
    a.to(&[0xeb], check, 1); // jmp check
    a.bind(func);
    register_function(&mut a, "__hipRegisterFunction");
    next_entry(&mut a, next, check, done, 4, 4); // kind HIP
    a.op(&[0x4d, 0x8b, 0x4f, 0x20]); // mov r9, [r15 + 32] (size)
    a.op(&[0x4d, 0x85, 0xc9]); // test r9, r9
    a.to(&[0x74], func, 1); // je func
    a.op(&[0x41, 0x8b, 0x47, 0x0c]); // mov eax, [r15 + 12] (flags)
    a.op(&[0x89, 0xc6]); // mov esi, eax
    a.op(&[0x83, 0xe6, 0x07]); // and esi, 7
    a.op(&[0x83, 0xfe, 0x03]); // cmp esi, 3
    a.to(&[0x77], next, 1); // ja next
    a.op(&[0x45, 0x8b, 0x5f, 0x28]); // mov r11d, [r15 + 40] (data)
    a.op(&[0x41, 0x89, 0xc2]); // mov r10d, eax
    a.op(&[0x41, 0x83, 0xe2, 0x08]); // and r10d, 8
    a.op(&[0x41, 0xc1, 0xea, 0x03]); // shr r10d, 3 (extern)
    a.op(&[0x89, 0xf6]); // mov esi, esi
    a.op(&[0x49, 0x63, 0x34, 0xb4]); // movsxd rsi, [r12 + rsi * 4]
    a.op(&[0x4c, 0x01, 0xe6]); // add rsi, r12
    a.op(&[0xff, 0xe6]); // jmp rsi
    // A variable: __hipRegisterVar(h, addr, name, name, extern, size,
    // constant, 0).
    a.bind(global);
    a.op(&[0x83, 0xe0, 0x10]); // and eax, 16
    a.op(&[0xc1, 0xe8, 0x04]); // shr eax, 4
    handle_address_name(&mut a);
    a.op(&[0x45, 0x89, 0xd0]); // mov r8d, r10d
    a.push_zero();
    a.push(&[PUSH_RAX]);
    a.call("__hipRegisterVar");
    a.to(&[0xeb], pop16, 1); // jmp pop16
    // A surface: __hipRegisterSurface(h, addr, name, name, (u32) data,
    // extern).
    a.bind(surface);
    a.cfa_is(48);
    handle_address_name(&mut a);
    a.op(&[0x45, 0x89, 0xd8]); // mov r8d, r11d
    a.op(&[0x45, 0x89, 0xd1]); // mov r9d, r10d
    a.call("__hipRegisterSurface");
    a.to(&[0xeb], next, 1); // jmp next
    // A texture: __hipRegisterTexture(h, addr, name, name, (u32) data,
    // normalized, extern).
    a.bind(texture);
    a.op(&[0x83, 0xe0, 0x20]); // and eax, 32
    a.op(&[0xc1, 0xe8, 0x05]); // shr eax, 5
    a.sub_rsp(8);
    handle_address_name(&mut a);
    a.op(&[0x45, 0x89, 0xd8]); // mov r8d, r11d
    a.op(&[0x41, 0x89, 0xc1]); // mov r9d, eax
    a.push(&[0x41, 0x52]); // push r10
    a.call("__hipRegisterTexture");
    a.bind(pop16);
    a.add_rsp(0x10);
    a.to(&[0xe9], next, 4); // jmp next
    // A managed variable: __hipRegisterManagedVar(h, aux, addr, name,
    // size, (u32) data).
    a.bind(managed);
    a.op(&[0x49, 0x8b, 0x77, 0x30]); // mov rsi, [r15 + 48] (aux address)
    a.op(&[0x48, 0x89, 0xdf]); // mov rdi, rbx
    a.op(&[0x4d, 0x89, 0xc8]); // mov r8, r9
    a.op(&[0x45, 0x89, 0xd9]); // mov r9d, r11d
    a.call("__hipRegisterManagedVar");
    a.to(&[0xe9], next, 4); // jmp next
    a.bind(done);
    a.add_rsp(8);
    a.pop(&[0x5b]); // pop rbx
    a.pop(&[0x41, 0x5c]); // pop r12
    a.pop(&[0x41, 0x5e]); // pop r14
    a.pop(&[0x41, 0x5f]); // pop r15
    a.op(&[RET]);
    let globals_span = a.end();

    let table = [global, managed, surface, texture];
    let mut jump_table = Vec::with_capacity(table.len());
    for l in table {
        let at = a.labels[l.0].ok_or_else(|| internal("a jump table case has no label"))?;
        jump_table.push(len64(&a.code[..at]));
    }
    a.finish(reg, unreg_span, globals_span, jump_table)
}

fn len64(code: &[u8]) -> u64 {
    // A function is a few dozen bytes; usize always fits in u64 here.
    u64::try_from(code.len()).unwrap_or(u64::MAX)
}

fn cfi_offset(code: &[u8]) -> Result<u32> {
    u32::try_from(code.len()).map_err(|_| Error::usage("wrapper function too large"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wrap::relocatable::SymbolId;

    fn syms() -> (SymbolId, SymbolId, SymbolId) {
        (SymbolId::nth(0), SymbolId::nth(1), SymbolId::nth(2))
    }

    /// The constructor LLVM 22 writes (Appendix A): register the descriptor
    /// at `.data.rel.ro + 0x20`, then `atexit` the function at 0x20.
    #[test]
    fn llvm_constructor_bytes() {
        let (f, g, sec) = syms();
        let calls = [
            Call {
                callee: f,
                arg: Arg::Data {
                    symbol: sec,
                    section: sec,
                    offset: 0x20,
                },
            },
            Call {
                callee: g,
                arg: Arg::Code {
                    section: sec,
                    offset: 0x20,
                },
            },
        ];
        let func = X86_64.function(0, &calls).unwrap();
        #[rustfmt::skip]
        let want: &[u8] = &[
            0x50,                                     // push rax
            0x48, 0x8d, 0x3d, 0x00, 0x00, 0x00, 0x00, // lea rdi, [rip + desc]
            0xe8, 0x00, 0x00, 0x00, 0x00,             // call __tgt_register_lib
            0x48, 0x8d, 0x3d, 0x0c, 0x00, 0x00, 0x00, // lea rdi, [rip + 0xc] (unreg at 0x20)
            0xe8, 0x00, 0x00, 0x00, 0x00,             // call atexit
            0x58,                                     // pop rax
            0xc3,                                     // ret
        ];
        assert_eq!(func.code, want);
        let relocs: Vec<(u64, elf::RelocationType, i64)> = func
            .relocs
            .iter()
            .map(|r| (r.offset, r.r_type, r.addend))
            .collect();
        assert_eq!(
            relocs,
            [
                (4, elf::R_X86_64_PC32, 0x1c),
                (9, elf::R_X86_64_PLT32, -4),
                (0x15, elf::R_X86_64_PLT32, -4),
            ]
        );
        assert_eq!(func.cfi[0].0, 1);
        assert_eq!(func.cfi[1].0, 0x1a);
        // The padding to 0x20 is LLVM's 5-byte NOP.
        assert_eq!(X86_64.padding(5), [0x0f, 0x1f, 0x44, 0x00, 0x00]);
    }

    #[test]
    fn padding_lengths() {
        for n in 0..40 {
            assert_eq!(X86_64.padding(n).len(), n);
        }
    }
}
