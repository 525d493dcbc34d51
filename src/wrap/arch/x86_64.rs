//! x86-64 (System V psABI, LP64), as LLVM 22's `llc -relocation-model=pic`
//! encodes the wrapper's functions (docs/formats/wrapper-objects.md):
//!
//! ```text
//! push rax                     ; 16-byte stack alignment at each call
//! lea  rdi, [rip + arg]        ; R_X86_64_PC32 arg - 4 (none for a function in the same section)
//! call callee                  ; R_X86_64_PLT32 callee - 4
//! …                            ; one lea/call pair per call
//! pop  rax
//! ret
//! ```

use gimli::X86_64 as Reg;
use object::elf;

use super::asm::{self, Label};
use super::code::{Arg, Call, Cpu, Fatbin, FatbinCode, Function, Span, Target, addend, internal};
use crate::error::{Error, Result};

/// The x86-64 encoder.
#[derive(Debug)]
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
    fn function(&self, at: u64, calls: &[Call]) -> Result<Function> {
        let mut a = Asm::default();
        a.begin(8);
        a.push(&[PUSH_RAX]);
        for call in calls {
            match call.arg {
                Arg::Data {
                    section, offset, ..
                } => {
                    // S + A - P with P the field: the target is relative to
                    // the end of the instruction, 4 bytes further.
                    a.rip(&LEA_RDI_RIP, Target::Symbol(section), addend(offset)? - 4);
                }
                Arg::Code { offset, .. } => {
                    // Same section: the assembler resolves it, no relocation.
                    a.bytes(&LEA_RDI_RIP);
                    let next = at + a.here() + 4;
                    let disp = i32::try_from(addend(offset)? - addend(next)?)
                        .map_err(|_| Error::usage("wrapper code too large"))?;
                    a.bytes(&disp.to_le_bytes());
                }
            }
            a.call(Target::Symbol(call.callee));
        }
        a.pop(&[POP_RAX]);
        a.bytes(&[RET]);
        a.function()
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

pub(crate) fn nops(mut len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len);
    while len > 0 {
        let n = len.min(NOPS.len());
        v.extend_from_slice(NOPS[n - 1]);
        len -= n;
    }
    v
}

// ---------------------------------------------------------------------------
// The assembler: the shared core plus this CPU's fixups and instructions
// ---------------------------------------------------------------------------

/// A jump or call displacement to a label, relative to the end of the
/// field (x86 instructions end with it here).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Rel {
    /// One byte (`jcc rel8`, `jmp rel8`).
    Rel8,
    /// Four bytes (`call rel32`, `jcc rel32`, `lea [rip + disp32]`).
    Rel32,
}

impl Rel {
    fn width(self) -> usize {
        match self {
            Rel::Rel8 => 1,
            Rel::Rel32 => 4,
        }
    }
}

impl asm::Fixup for Rel {
    fn apply(self, code: &mut [u8], at: usize, target: usize) -> Result<()> {
        let broken = || internal("a jump of the registration code is out of range");
        let next = at + self.width();
        let disp = i64::try_from(target).map_err(|_| broken())?
            - i64::try_from(next).map_err(|_| broken())?;
        let field = code.get_mut(at..next).ok_or_else(broken)?;
        // Instructions are little-endian.
        match self {
            Rel::Rel8 => {
                field.copy_from_slice(&i8::try_from(disp).map_err(|_| broken())?.to_le_bytes())
            }
            Rel::Rel32 => {
                field.copy_from_slice(&i32::try_from(disp).map_err(|_| broken())?.to_le_bytes())
            }
        }
        Ok(())
    }
}

/// The shared assembler core with x86-64's displacements.
type Asm = asm::Asm<Rel>;

/// x86-64 instructions that need more than bytes: stack moves (with their
/// unwind rules), RIP-relative fields, calls and jumps.
trait X86Asm {
    /// An instruction that pushes 8 bytes.
    fn push(&mut self, bytes: &[u8]);
    /// An instruction that pops 8 bytes.
    fn pop(&mut self, bytes: &[u8]);
    /// `push 0`
    fn push_zero(&mut self);
    /// `add rsp, n`
    fn add_rsp(&mut self, n: u8);
    /// `sub rsp, n`
    fn sub_rsp(&mut self, n: u8);
    /// An instruction ending in a RIP-relative 32-bit field that refers to
    /// `target` plus `addend`.
    fn rip(&mut self, opcode: &[u8], target: Target, addend: i64);
    /// `call target` through the PLT.
    fn call(&mut self, target: Target);
    /// An instruction ending in a displacement to `l`.
    fn to(&mut self, opcode: &[u8], l: Label, rel: Rel);
    /// NOPs up to the next multiple of 16.
    fn align16(&mut self);
}

impl X86Asm for Asm {
    fn push(&mut self, bytes: &[u8]) {
        self.bytes(bytes);
        self.moved(8);
    }

    fn pop(&mut self, bytes: &[u8]) {
        self.bytes(bytes);
        self.moved(-8);
    }

    fn push_zero(&mut self) {
        self.push(&[0x6a, 0x00]);
    }

    fn add_rsp(&mut self, n: u8) {
        self.bytes(&[0x48, 0x83, 0xc4, n]);
        self.moved(-i32::from(n));
    }

    fn sub_rsp(&mut self, n: u8) {
        self.bytes(&[0x48, 0x83, 0xec, n]);
        self.moved(i32::from(n));
    }

    fn rip(&mut self, opcode: &[u8], target: Target, addend: i64) {
        self.bytes(opcode);
        self.reloc(elf::R_X86_64_PC32, target, addend);
        self.bytes(&[0; 4]);
    }

    fn call(&mut self, target: Target) {
        self.bytes(&[CALL_REL32]);
        self.reloc(elf::R_X86_64_PLT32, target, -4);
        self.bytes(&[0; 4]);
    }

    fn to(&mut self, opcode: &[u8], l: Label, rel: Rel) {
        self.bytes(opcode);
        self.fixup(rel, l);
        self.bytes(&[0; 4][..rel.width()]);
    }

    fn align16(&mut self) {
        let here = usize::try_from(self.here()).unwrap_or(0);
        self.bytes(&nops(here.next_multiple_of(16) - here));
    }
}

// ---------------------------------------------------------------------------
// CUDA and HIP registration code (docs/formats/wrapper-objects.md)
// ---------------------------------------------------------------------------

/// `struct __tgt_offload_entry` fields the loop reads (56-byte entries).
const ENTRY_SIZE: u8 = 56;

/// The handle and an entry's address and name as the first four arguments
/// (`h, addr, name, name`): `mov rdi, rbx; mov rsi, rdx; mov rdx, rcx`.
fn handle_address_name(a: &mut Asm) {
    a.bytes(&[0x48, 0x89, 0xdf]); // mov rdi, rbx
    a.bytes(&[0x48, 0x89, 0xd6]); // mov rsi, rdx
    a.bytes(&[0x48, 0x89, 0xca]); // mov rdx, rcx
}

/// The `atexit` handler at `unreg`: load the handle, unregister; then
/// padding to the next function.
fn unregister(a: &mut Asm, unreg: Label, name: &'static str) -> Span {
    a.bind(unreg);
    a.begin(8);
    a.push(&[PUSH_RAX]);
    a.rip(&[0x48, 0x8b, 0x3d], Target::Handle, -4); // mov rdi, [rip + handle]
    a.call(Target::Runtime(name));
    a.pop(&[POP_RAX]);
    a.bytes(&[RET]);
    let span = a.end();
    a.align16();
    span
}

/// A kernel: `PRegisterFunction(h, addr, name, name, -1, 0 × 5)`, the last
/// four zeros on the stack; then padding to the loop's next step.
fn register_function(a: &mut Asm, name: &'static str) {
    handle_address_name(a);
    a.bytes(&[0x41, 0xb8, 0xff, 0xff, 0xff, 0xff]); // mov r8d, -1
    a.bytes(&[0x45, 0x31, 0xc9]); // xor r9d, r9d
    for _ in 0..4 {
        a.push_zero();
    }
    a.call(Target::Runtime(name));
    a.add_rsp(0x20);
    a.align16();
}

/// The loop's step at `next`: the next entry (`je done` with a `done_rel`
/// displacement at the end), then at `check` the kind test (`cmp word
/// [r15 + 10], kind`) and the address and name in rdx and rcx.
fn next_entry(a: &mut Asm, next: Label, check: Label, done: Label, done_rel: Rel, kind: u8) {
    a.bind(next);
    a.bytes(&[0x49, 0x83, 0xc7, ENTRY_SIZE]); // add r15, 56
    a.bytes(&[0x4d, 0x39, 0xf7]); // cmp r15, r14
    match done_rel {
        Rel::Rel8 => a.to(&[0x74], done, done_rel), // je done
        Rel::Rel32 => a.to(&[0x0f, 0x84], done, done_rel), // je done
    }
    a.bind(check);
    a.bytes(&[0x66, 0x41, 0x83, 0x7f, 0x0a, kind]); // cmp word [r15 + 10], kind
    a.to(&[0x75], next, Rel::Rel8); // jne next
    a.bytes(&[0x49, 0x8b, 0x57, 0x10]); // mov rdx, [r15 + 16] (address)
    a.bytes(&[0x49, 0x8b, 0x4f, 0x18]); // mov rcx, [r15 + 24] (name)
}

/// The CUDA registration code of LLVM 22 (`llc -relocation-model=pic`):
/// the constructor registers the fatbin, keeps the handle, runs the entry
/// loop, ends the registration and `atexit`s the unregistration. The loop
/// registers kernels (size 0), variables and managed variables of the
/// entries whose kind is CUDA (2); surfaces and textures are skipped.
fn cuda_code() -> Result<FatbinCode> {
    let mut a = Asm::default();
    let (globals, unreg) = (a.label(), a.label());
    let reg = cuda_constructor(&mut a, globals, unreg);
    let unreg_span = unregister(&mut a, unreg, "__cudaUnregisterFatBinary");
    let globals_span = cuda_globals(&mut a, globals);
    a.finish([reg, unreg_span, globals_span], &[])
}

/// The CUDA constructor (`.cuda.fatbin_reg`), then padding.
fn cuda_constructor(a: &mut Asm, globals: Label, unreg: Label) -> Span {
    use Target::*;
    a.begin(8);
    a.push(&[0x53]); // push rbx
    a.saved(&[(Reg::RBX, -16)]);
    a.rip(&LEA_RDI_RIP, Wrapper, -4); // lea rdi, [rip + .fatbin_wrapper]
    a.call(Runtime("__cudaRegisterFatBinary"));
    a.bytes(&[0x48, 0x89, 0xc3]); // mov rbx, rax
    a.rip(&[0x48, 0x89, 0x05], Handle, -4); // mov [rip + handle], rax
    a.bytes(&[0x48, 0x89, 0xc7]); // mov rdi, rax
    a.to(&[CALL_REL32], globals, Rel::Rel32); // call .cuda.globals_reg
    a.bytes(&[0x48, 0x89, 0xdf]); // mov rdi, rbx
    a.call(Runtime("__cudaRegisterFatBinaryEnd"));
    a.to(&LEA_RDI_RIP, unreg, Rel::Rel32); // lea rdi, [rip + .cuda.fatbin_unreg]
    a.call(Runtime("atexit"));
    a.pop(&[0x5b]); // pop rbx
    a.bytes(&[RET]);
    let reg = a.end();
    a.align16();
    reg
}

/// The CUDA entry loop (`.cuda.globals_reg`) at `globals`.
fn cuda_globals(a: &mut Asm, globals: Label) -> Span {
    use Target::*;
    let (func, next, check, managed, done) =
        (a.label(), a.label(), a.label(), a.label(), a.label());
    a.bind(globals);
    a.begin(8);
    a.push(&[0x41, 0x57]); // push r15
    a.push(&[0x41, 0x56]); // push r14
    a.push(&[0x53]); // push rbx
    a.saved(&[(Reg::RBX, -32), (Reg::R14, -24), (Reg::R15, -16)]);
    a.rip(&[0x4c, 0x8d, 0x35], EntriesStop, -4); // lea r14, [rip + __stop_…]
    a.rip(&[0x4c, 0x8d, 0x3d], EntriesStart, -4); // lea r15, [rip + __start_…]
    a.bytes(&[0x4d, 0x39, 0xf7]); // cmp r15, r14
    a.to(&[0x0f, 0x84], done, Rel::Rel32); // je done
    a.bytes(&[0x48, 0x89, 0xfb]); // mov rbx, rdi (the handle)
    a.to(&[0xeb], check, Rel::Rel8); // jmp check
    a.bind(func);
    register_function(a, "__cudaRegisterFunction");
    next_entry(a, next, check, done, Rel::Rel8, 2); // kind CUDA
    a.bytes(&[0x49, 0x8b, 0x47, 0x20]); // mov rax, [r15 + 32] (size)
    a.bytes(&[0x48, 0x85, 0xc0]); // test rax, rax
    a.to(&[0x74], func, Rel::Rel8); // je func
    a.bytes(&[0x45, 0x8b, 0x57, 0x0c]); // mov r10d, [r15 + 12] (flags)
    a.bytes(&[0x44, 0x89, 0xd6]); // mov esi, r10d
    a.bytes(&[0x83, 0xe6, 0x07]); // and esi, 7
    a.bytes(&[0x83, 0xfe, 0x01]); // cmp esi, 1
    a.to(&[0x74], managed, Rel::Rel8); // je managed
    a.bytes(&[0x85, 0xf6]); // test esi, esi
    a.to(&[0x75], next, Rel::Rel8); // jne next
    // A variable: __cudaRegisterVar(h, addr, name, name, extern, size,
    // constant, 0).
    a.bytes(&[0x45, 0x89, 0xd0]); // mov r8d, r10d
    a.bytes(&[0x41, 0x83, 0xe0, 0x08]); // and r8d, 8
    a.bytes(&[0x41, 0xc1, 0xe8, 0x03]); // shr r8d, 3
    a.bytes(&[0x41, 0x83, 0xe2, 0x10]); // and r10d, 16
    a.bytes(&[0x41, 0xc1, 0xea, 0x04]); // shr r10d, 4
    handle_address_name(a);
    a.bytes(&[0x49, 0x89, 0xc1]); // mov r9, rax
    a.push_zero();
    a.push(&[0x41, 0x52]); // push r10
    a.call(Runtime("__cudaRegisterVar"));
    a.add_rsp(0x10);
    a.to(&[0xeb], next, Rel::Rel8); // jmp next
    // A managed variable: __cudaRegisterManagedVar(h, aux, addr, name,
    // size, (u32) data).
    a.bind(managed);
    a.bytes(&[0x49, 0x8b, 0x77, 0x30]); // mov rsi, [r15 + 48] (aux address)
    a.bytes(&[0x45, 0x8b, 0x4f, 0x28]); // mov r9d, [r15 + 40] (data)
    a.bytes(&[0x48, 0x89, 0xdf]); // mov rdi, rbx
    a.bytes(&[0x49, 0x89, 0xc0]); // mov r8, rax
    a.call(Runtime("__cudaRegisterManagedVar"));
    a.to(&[0xeb], next, Rel::Rel8); // jmp next
    a.bind(done);
    a.pop(&[0x5b]); // pop rbx
    a.pop(&[0x41, 0x5e]); // pop r14
    a.pop(&[0x41, 0x5f]); // pop r15
    a.bytes(&[RET]);
    a.end()
}

/// The HIP registration code of LLVM 22: as CUDA's without the end of
/// registration, with kind HIP (4), and with surfaces and textures
/// registered too, through a jump table on the entry type.
fn hip_code() -> Result<FatbinCode> {
    let mut a = Asm::default();
    let (globals, unreg) = (a.label(), a.label());
    let reg = hip_constructor(&mut a, globals, unreg);
    let unreg_span = unregister(&mut a, unreg, "__hipUnregisterFatBinary");
    let (globals_span, cases) = hip_globals(&mut a, globals);
    a.finish([reg, unreg_span, globals_span], &cases)
}

/// The HIP constructor (`.hip.fatbin_reg`), then padding.
fn hip_constructor(a: &mut Asm, globals: Label, unreg: Label) -> Span {
    use Target::*;
    a.begin(8);
    a.push(&[PUSH_RAX]);
    a.rip(&LEA_RDI_RIP, Wrapper, -4); // lea rdi, [rip + .fatbin_wrapper]
    a.call(Runtime("__hipRegisterFatBinary"));
    a.rip(&[0x48, 0x89, 0x05], Handle, -4); // mov [rip + handle], rax
    a.bytes(&[0x48, 0x89, 0xc7]); // mov rdi, rax
    a.to(&[CALL_REL32], globals, Rel::Rel32); // call .hip.globals_reg
    a.to(&LEA_RDI_RIP, unreg, Rel::Rel32); // lea rdi, [rip + .hip.fatbin_unreg]
    a.call(Runtime("atexit"));
    a.pop(&[POP_RAX]);
    a.bytes(&[RET]);
    let reg = a.end();
    a.align16();
    reg
}

/// The HIP entry loop (`.hip.globals_reg`) at `globals`, and its jump
/// table's cases by entry type (0 to 3).
fn hip_globals(a: &mut Asm, globals: Label) -> (Span, [Label; 4]) {
    use Target::*;
    let [func, next, check, done] = [(); 4].map(|()| a.label());
    a.bind(globals);
    a.begin(8);
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
    a.rip(&[0x4c, 0x8d, 0x35], EntriesStop, -4); // lea r14, [rip + __stop_…]
    a.rip(&[0x4c, 0x8d, 0x3d], EntriesStart, -4); // lea r15, [rip + __start_…]
    a.bytes(&[0x4d, 0x39, 0xf7]); // cmp r15, r14
    a.to(&[0x0f, 0x84], done, Rel::Rel32); // je done
    a.bytes(&[0x48, 0x89, 0xfb]); // mov rbx, rdi (the handle)
    a.rip(&[0x4c, 0x8d, 0x25], JumpTable, -4); // lea r12, [rip + table]
    a.to(&[0xeb], check, Rel::Rel8); // jmp check
    a.bind(func);
    register_function(a, "__hipRegisterFunction");
    next_entry(a, next, check, done, Rel::Rel32, 4); // kind HIP
    a.bytes(&[0x4d, 0x8b, 0x4f, 0x20]); // mov r9, [r15 + 32] (size)
    a.bytes(&[0x4d, 0x85, 0xc9]); // test r9, r9
    a.to(&[0x74], func, Rel::Rel8); // je func
    a.bytes(&[0x41, 0x8b, 0x47, 0x0c]); // mov eax, [r15 + 12] (flags)
    a.bytes(&[0x89, 0xc6]); // mov esi, eax
    a.bytes(&[0x83, 0xe6, 0x07]); // and esi, 7
    a.bytes(&[0x83, 0xfe, 0x03]); // cmp esi, 3
    a.to(&[0x77], next, Rel::Rel8); // ja next
    a.bytes(&[0x45, 0x8b, 0x5f, 0x28]); // mov r11d, [r15 + 40] (data)
    a.bytes(&[0x41, 0x89, 0xc2]); // mov r10d, eax
    a.bytes(&[0x41, 0x83, 0xe2, 0x08]); // and r10d, 8
    a.bytes(&[0x41, 0xc1, 0xea, 0x03]); // shr r10d, 3 (extern)
    a.bytes(&[0x89, 0xf6]); // mov esi, esi
    a.bytes(&[0x49, 0x63, 0x34, 0xb4]); // movsxd rsi, [r12 + rsi * 4]
    a.bytes(&[0x4c, 0x01, 0xe6]); // add rsi, r12
    a.bytes(&[0xff, 0xe6]); // jmp rsi
    let cases = hip_cases(a, next);
    a.bind(done);
    a.add_rsp(8);
    a.pop(&[0x5b]); // pop rbx
    a.pop(&[0x41, 0x5c]); // pop r12
    a.pop(&[0x41, 0x5e]); // pop r14
    a.pop(&[0x41, 0x5f]); // pop r15
    a.bytes(&[RET]);
    (a.end(), cases)
}

/// The HIP loop's cases, each jumping back to `next`; returns them in jump
/// table order (variable, managed variable, surface, texture).
fn hip_cases(a: &mut Asm, next: Label) -> [Label; 4] {
    use Target::*;
    let [global, surface, texture, pop16, managed] = [(); 5].map(|()| a.label());
    // A variable: __hipRegisterVar(h, addr, name, name, extern, size,
    // constant, 0).
    a.bind(global);
    a.bytes(&[0x83, 0xe0, 0x10]); // and eax, 16
    a.bytes(&[0xc1, 0xe8, 0x04]); // shr eax, 4
    handle_address_name(a);
    a.bytes(&[0x45, 0x89, 0xd0]); // mov r8d, r10d
    a.push_zero();
    a.push(&[PUSH_RAX]);
    a.call(Runtime("__hipRegisterVar"));
    a.to(&[0xeb], pop16, Rel::Rel8); // jmp pop16
    // A surface: __hipRegisterSurface(h, addr, name, name, (u32) data,
    // extern).
    a.bind(surface);
    a.cfa_is(48);
    handle_address_name(a);
    a.bytes(&[0x45, 0x89, 0xd8]); // mov r8d, r11d
    a.bytes(&[0x45, 0x89, 0xd1]); // mov r9d, r10d
    a.call(Runtime("__hipRegisterSurface"));
    a.to(&[0xeb], next, Rel::Rel8); // jmp next
    // A texture: __hipRegisterTexture(h, addr, name, name, (u32) data,
    // normalized, extern).
    a.bind(texture);
    a.bytes(&[0x83, 0xe0, 0x20]); // and eax, 32
    a.bytes(&[0xc1, 0xe8, 0x05]); // shr eax, 5
    a.sub_rsp(8);
    handle_address_name(a);
    a.bytes(&[0x45, 0x89, 0xd8]); // mov r8d, r11d
    a.bytes(&[0x41, 0x89, 0xc1]); // mov r9d, eax
    a.push(&[0x41, 0x52]); // push r10
    a.call(Runtime("__hipRegisterTexture"));
    a.bind(pop16);
    a.add_rsp(0x10);
    a.to(&[0xe9], next, Rel::Rel32); // jmp next
    // A managed variable: __hipRegisterManagedVar(h, aux, addr, name,
    // size, (u32) data).
    a.bind(managed);
    a.bytes(&[0x49, 0x8b, 0x77, 0x30]); // mov rsi, [r15 + 48] (aux address)
    a.bytes(&[0x48, 0x89, 0xdf]); // mov rdi, rbx
    a.bytes(&[0x4d, 0x89, 0xc8]); // mov r8, r9
    a.bytes(&[0x45, 0x89, 0xd9]); // mov r9d, r11d
    a.call(Runtime("__hipRegisterManagedVar"));
    a.to(&[0xe9], next, Rel::Rel32); // jmp next
    [global, managed, surface, texture]
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
        let calls = super::super::register_calls((f, g), (sec, 0x20), (sec, 0x20));
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
