//! x86-64 Windows (the Microsoft x64 calling convention), as LLVM 22's
//! `llc` encodes the wrapper's functions for `x86_64-pc-windows-msvc`.
//!
//! What differs from the System V code of `arch::x86_64`: arguments go in
//! rcx, rdx, r8, r9, then on the stack above 32 bytes of "shadow space"
//! the caller always reserves; rsi and rdi are callee-saved; every
//! function that calls reserves its frame in the prologue (`sub rsp`) and
//! describes the prologue in an `UNWIND_INFO` record (`.xdata`) that its
//! `.pdata` entry points at; and a call right before the epilogue is
//! followed by a `nop`, so that the return address never lies in the
//! epilogue (the unwinder recognises epilogues by their bytes). Every
//! address is RIP-relative (`IMAGE_REL_AMD64_REL32`), calls included: the
//! linker points calls to imported functions at import thunks.
//!
//! ```text
//! sub  rsp, 40                 ; shadow space, and 16-byte alignment
//! lea  rcx, [rip + arg]        ; IMAGE_REL_AMD64_REL32 arg
//! call callee                  ; IMAGE_REL_AMD64_REL32 callee
//! nop
//! add  rsp, 40
//! ret
//! ```

use object::pe;

use super::asm::{self, Target, Unwind};
use crate::error::Result;
use crate::wrap::arch::Fatbin;
use crate::wrap::arch::x86_64::{Rel, nops};

/// `IMAGE_REL_AMD64_REL32`: a 32-bit displacement from the end of the field.
const REL32: u16 = pe::IMAGE_REL_AMD64_REL32.0;
/// `call rel32`
const CALL: u8 = 0xe8;
/// `nop`
const NOP: u8 = 0x90;
/// `ret`
const RET: u8 = 0xc3;
/// `lea rcx, [rip + disp32]`: REX.W, opcode, ModRM (rcx, RIP-relative).
const LEA_RCX_RIP: [u8; 3] = [0x48, 0x8d, 0x0d];

/// The registers the prologues save, by their x64 unwind numbers
/// (the order of the ModRM encoding, r8–r15 after rdi).
#[derive(Debug, Clone, Copy)]
enum Reg {
    Rbx = 3,
    Rsi = 6,
    Rdi = 7,
    R14 = 14,
}

/// `UWOP_PUSH_NONVOL`: a register pushed; its number in the upper nibble.
const UWOP_PUSH_NONVOL: u8 = 0;
/// `UWOP_ALLOC_SMALL`: 8 to 128 bytes reserved; (size / 8 - 1) in the
/// upper nibble.
const UWOP_ALLOC_SMALL: u8 = 2;

/// The assembler core with x86-64's displacements, and the prologue's
/// unwind codes of the function being written.
#[derive(Debug, Default)]
struct Asm {
    a: asm::Asm<Rel>,
    /// (offset after the instruction, operation and its info).
    prolog: Vec<(u8, u8)>,
}

impl Asm {
    fn bytes(&mut self, b: &[u8]) {
        self.a.bytes(b);
    }

    fn begin(&mut self, name: &str) {
        self.a.begin(name);
        self.prolog.clear();
    }

    /// An unwind code for the instruction just written.
    fn unwind(&mut self, op: u8, info: u8) {
        let at = u8::try_from(self.a.in_function()).unwrap_or(u8::MAX);
        self.prolog.push((at, op | (info << 4)));
    }

    /// `push reg` in the prologue.
    fn push(&mut self, reg: Reg) {
        let n = reg as u8;
        if n >= 8 {
            self.bytes(&[0x41]); // REX.B: r8–r15
        }
        self.bytes(&[0x50 + (n & 7)]);
        self.unwind(UWOP_PUSH_NONVOL, n);
    }

    /// `pop reg` in the epilogue.
    fn pop(&mut self, reg: Reg) {
        let n = reg as u8;
        if n >= 8 {
            self.bytes(&[0x41]);
        }
        self.bytes(&[0x58 + (n & 7)]);
    }

    /// `sub rsp, n` in the prologue (n a multiple of 8, at most 128).
    fn sub_rsp(&mut self, n: u8) {
        self.bytes(&[0x48, 0x83, 0xec, n]);
        self.unwind(UWOP_ALLOC_SMALL, n / 8 - 1);
    }

    /// `add rsp, n`
    fn add_rsp(&mut self, n: u8) {
        self.bytes(&[0x48, 0x83, 0xc4, n]);
    }

    /// An instruction ending in a RIP-relative field that refers to `to`.
    fn rip(&mut self, opcode: &[u8], to: Target) {
        self.bytes(opcode);
        self.a.reloc(REL32, to);
        self.bytes(&[0; 4]);
    }

    /// `call name`
    fn call(&mut self, name: &str) {
        self.rip(&[CALL], Target::Named(name.to_string()));
    }

    /// An instruction ending in a displacement to `l`.
    fn to(&mut self, opcode: &[u8], l: asm::Label, rel: Rel) {
        self.bytes(opcode);
        self.a.fixup(rel, l);
        let width = match rel {
            Rel::Rel8 => 1,
            Rel::Rel32 => 4,
        };
        self.bytes(&[0; 4][..width]);
    }

    /// NOPs up to the next multiple of 16.
    fn align16(&mut self) {
        let here = self.a.here();
        self.bytes(&nops(here.next_multiple_of(16) - here));
    }

    /// Ends the function: its `UNWIND_INFO` from the prologue's codes.
    fn end(&mut self) -> Result<()> {
        let size = self.prolog.last().map_or(0, |&(at, _)| at);
        let count = u8::try_from(self.prolog.len()).unwrap_or(u8::MAX);
        // Version 1, no flags; prologue size; code count; no frame register.
        let mut info = vec![1, size, count, 0];
        // The codes, last instruction first, padded to an even count.
        for &(at, op) in self.prolog.iter().rev() {
            info.extend_from_slice(&[at, op]);
        }
        if self.prolog.len() % 2 == 1 {
            info.extend_from_slice(&[0, 0]);
        }
        self.a.end(Unwind::Xdata(info))
    }
}

/// The OpenMP constructor and destructor: register the descriptor and
/// `atexit` the destructor; unregister it.
pub(super) fn openmp_code() -> Result<asm::Code> {
    let mut a = Asm::default();
    let desc = || Target::Named(".omp_offloading.descriptor".into());
    let unreg = ".omp_offloading.descriptor_unreg";
    a.begin(".omp_offloading.descriptor_reg");
    a.sub_rsp(40);
    a.rip(&LEA_RCX_RIP, desc()); // rcx = &descriptor
    a.call("__tgt_register_lib");
    a.rip(&LEA_RCX_RIP, Target::Named(unreg.into())); // rcx = the destructor
    a.call("atexit");
    epilogue(&mut a, 40, &[])?;
    a.align16();
    a.begin(unreg);
    a.sub_rsp(40);
    a.rip(&LEA_RCX_RIP, desc());
    a.call("__tgt_unregister_lib");
    epilogue(&mut a, 40, &[])?;
    a.a.finish(&[])
}

/// `nop` after the last call, free the frame, restore `saved` (pushed in
/// the reverse order), return; the function ends.
fn epilogue(a: &mut Asm, frame: u8, saved: &[Reg]) -> Result<()> {
    a.bytes(&[NOP]);
    a.add_rsp(frame);
    for &r in saved {
        a.pop(r);
    }
    a.bytes(&[RET]);
    a.end()
}

/// The CUDA or HIP registration code of LLVM 22 for x64 Windows: the
/// constructor, the `atexit` handler and the entry loop, each 16-aligned.
pub(super) fn fatbin_code(which: Fatbin) -> Result<asm::Code> {
    let p = match which {
        Fatbin::Cuda => "cuda",
        Fatbin::Hip => "hip",
    };
    let runtime = |f: &str| format!("__{p}{f}");
    let handle = || Target::Named(format!(".{p}.binary_handle"));
    let mut a = Asm::default();

    // The constructor. CUDA keeps the handle in rsi (callee-saved) for
    // the call that ends the registration, which HIP does not make.
    a.begin(&format!(".{p}.fatbin_reg"));
    let cuda = which == Fatbin::Cuda;
    if cuda {
        a.push(Reg::Rsi);
        a.sub_rsp(32);
    } else {
        a.sub_rsp(40);
    }
    a.rip(&LEA_RCX_RIP, Target::Named(".fatbin_wrapper".into()));
    a.call(&runtime("RegisterFatBinary"));
    if cuda {
        a.bytes(&[0x48, 0x89, 0xc6]); // mov rsi, rax
    }
    a.rip(&[0x48, 0x89, 0x05], handle()); // mov [rip + handle], rax
    a.bytes(&[0x48, 0x89, 0xc1]); // mov rcx, rax
    a.call(&format!(".{p}.globals_reg"));
    if cuda {
        a.bytes(&[0x48, 0x89, 0xf1]); // mov rcx, rsi
        a.call("__cudaRegisterFatBinaryEnd");
    }
    let unreg = format!(".{p}.fatbin_unreg");
    a.rip(&LEA_RCX_RIP, Target::Named(unreg.clone())); // rcx = the handler
    a.call("atexit");
    if cuda {
        epilogue(&mut a, 32, &[Reg::Rsi])?;
    } else {
        epilogue(&mut a, 40, &[])?;
    }
    a.align16();

    // The atexit handler.
    a.begin(&unreg);
    a.sub_rsp(40);
    a.rip(&[0x48, 0x8b, 0x0d], handle()); // mov rcx, [rip + handle]
    a.call(&runtime("UnregisterFatBinary"));
    epilogue(&mut a, 40, &[])?;
    a.align16();

    let cases = match which {
        Fatbin::Cuda => {
            cuda_globals(&mut a)?;
            Vec::new()
        }
        Fatbin::Hip => hip_globals(&mut a)?,
    };
    a.a.finish(&cases)
}

/// `struct __tgt_offload_entry`'s size: the loop's step.
const ENTRY_SIZE: u8 = 56;

/// The loop's prologue: save `saved`, reserve `frame` bytes (shadow space
/// and up to six stack arguments), load the bounds (rdi = stop, rbx =
/// start) and leave at once if they are equal (`je done`, 32-bit).
fn loop_prologue(a: &mut Asm, saved: &[Reg], frame: u8, done: asm::Label) {
    for &r in saved {
        a.push(r);
    }
    a.sub_rsp(frame);
    let entries = |end: &str| Target::Named(format!("__{end}_llvm_offload_entries"));
    a.rip(&[0x48, 0x8d, 0x3d], entries("stop")); // lea rdi, [rip + __stop_…]
    a.rip(&[0x48, 0x8d, 0x1d], entries("start")); // lea rbx, [rip + __start_…]
    a.bytes(&[0x48, 0x39, 0xfb]); // cmp rbx, rdi
    a.to(&[0x0f, 0x84], done, Rel::Rel32); // je done
    a.bytes(&[0x48, 0x89, 0xce]); // mov rsi, rcx (the handle)
}

/// The handle, an entry's address and its name as the first four
/// arguments (`h, addr, name, name`; r8 = address, r9 = name on entry).
fn handle_address_name(a: &mut Asm) {
    a.bytes(&[0x48, 0x89, 0xf1]); // mov rcx, rsi
    a.bytes(&[0x4c, 0x89, 0xc2]); // mov rdx, r8
    a.bytes(&[0x4d, 0x89, 0xc8]); // mov r8, r9
}

/// A kernel: `RegisterFunction(h, addr, name, name, -1, 0 × 5)`, the
/// last six arguments on the stack above the shadow space.
fn register_function(a: &mut Asm, name: &str) {
    for slot in [0x48, 0x40, 0x38, 0x30, 0x28] {
        a.bytes(&[0x48, 0xc7, 0x44, 0x24, slot, 0, 0, 0, 0]); // mov qword [rsp + slot], 0
    }
    a.bytes(&[0xc7, 0x44, 0x24, 0x20, 0xff, 0xff, 0xff, 0xff]); // mov dword [rsp + 0x20], -1
    handle_address_name(a);
    a.call(name);
}

/// The step to the next entry (`next`), the end check, and at `check`
/// the kind check (`kind`) and the entry's address (r8), name (r9) and
/// size (rax); a zero size is a kernel (`je func`). `far`: the end is
/// more than 127 bytes away.
fn loop_step(a: &mut Asm, labels: [asm::Label; 4], kind: u8, far: bool) {
    let [next, check, done, func] = labels;
    a.a.bind(next);
    a.bytes(&[0x48, 0x83, 0xc3, ENTRY_SIZE]); // add rbx, 56
    a.bytes(&[0x48, 0x39, 0xfb]); // cmp rbx, rdi
    if far {
        a.to(&[0x0f, 0x84], done, Rel::Rel32); // je done
    } else {
        a.to(&[0x74], done, Rel::Rel8); // je done
    }
    a.a.bind(check);
    a.bytes(&[0x66, 0x83, 0x7b, 0x0a, kind]); // cmp word [rbx + 0xa], kind
    a.to(&[0x75], next, Rel::Rel8); // jne next
    a.bytes(&[0x4c, 0x8b, 0x43, 0x10]); // mov r8, [rbx + 0x10] (address)
    a.bytes(&[0x4c, 0x8b, 0x4b, 0x18]); // mov r9, [rbx + 0x18] (name)
    a.bytes(&[0x48, 0x8b, 0x43, 0x20]); // mov rax, [rbx + 0x20] (size)
    a.bytes(&[0x48, 0x85, 0xc0]); // test rax, rax
    a.to(&[0x74], func, Rel::Rel8); // je func
    a.bytes(&[0x8b, 0x4b, 0x0c]); // mov ecx, [rbx + 0xc] (flags)
}

/// A variable: `RegisterVar(h, addr, name, name, extern, size, constant,
/// 0)`, with edx = extern, ecx = flags; then back to `next`.
fn register_var(a: &mut Asm, name: &str, next: asm::Label, rel: Rel) {
    a.bytes(&[0x83, 0xe1, 0x10]); // and ecx, 0x10
    a.bytes(&[0xc1, 0xe9, 0x04]); // shr ecx, 4 (constant)
    a.bytes(&[0x89, 0x4c, 0x24, 0x30]); // mov [rsp + 0x30], ecx
    a.bytes(&[0x48, 0x89, 0x44, 0x24, 0x28]); // mov [rsp + 0x28], rax (size)
    a.bytes(&[0x89, 0x54, 0x24, 0x20]); // mov [rsp + 0x20], edx (extern)
    a.bytes(&[0xc7, 0x44, 0x24, 0x38, 0, 0, 0, 0]); // mov dword [rsp + 0x38], 0
    handle_address_name(a);
    a.call(name);
    a.to(&[0xeb], next, rel); // jmp next
}

/// edx = the extern bit of the flags in ecx.
fn extern_bit(a: &mut Asm) {
    a.bytes(&[0x89, 0xca]); // mov edx, ecx
    a.bytes(&[0x83, 0xe2, 0x08]); // and edx, 8
    a.bytes(&[0xc1, 0xea, 0x03]); // shr edx, 3
}

/// The loop's epilogue at `done`.
fn loop_epilogue(a: &mut Asm, frame: u8, saved: &[Reg]) -> Result<()> {
    a.add_rsp(frame);
    for &r in saved.iter().rev() {
        a.pop(r);
    }
    a.bytes(&[RET]);
    a.end()
}

/// The CUDA entry loop (`.cuda.globals_reg`): kernels, variables and
/// managed variables (flags & 7 of 0 and 1; surfaces and textures are
/// skipped).
fn cuda_globals(a: &mut Asm) -> Result<()> {
    let [next, check, done, func, managed] = [(); 5].map(|()| a.a.label());
    let saved = [Reg::Rsi, Reg::Rdi, Reg::Rbx];
    a.begin(".cuda.globals_reg");
    loop_prologue(a, &saved, 0x50, done);
    a.to(&[0xeb], check, Rel::Rel8); // jmp check
    a.a.bind(func);
    register_function(a, "__cudaRegisterFunction");
    a.align16();
    loop_step(a, [next, check, done, func], 2, false);
    a.bytes(&[0x89, 0xca]); // mov edx, ecx
    a.bytes(&[0x83, 0xe2, 0x07]); // and edx, 7 (the variable's type)
    a.bytes(&[0x83, 0xfa, 0x01]); // cmp edx, 1
    a.to(&[0x74], managed, Rel::Rel8); // je managed
    a.bytes(&[0x85, 0xd2]); // test edx, edx
    a.to(&[0x75], next, Rel::Rel8); // jne next
    extern_bit(a);
    register_var(a, "__cudaRegisterVar", next, Rel::Rel8);
    // A managed variable: RegisterManagedVar(h, aux_addr, addr, name,
    // size, align).
    a.a.bind(managed);
    a.bytes(&[0x48, 0x8b, 0x53, 0x30]); // mov rdx, [rbx + 0x30] (aux_addr)
    a.bytes(&[0x8b, 0x4b, 0x28]); // mov ecx, [rbx + 0x28] (data: alignment)
    a.bytes(&[0x89, 0x4c, 0x24, 0x28]); // mov [rsp + 0x28], ecx
    a.bytes(&[0x48, 0x89, 0x44, 0x24, 0x20]); // mov [rsp + 0x20], rax (size)
    a.bytes(&[0x48, 0x89, 0xf1]); // mov rcx, rsi
    a.call("__cudaRegisterManagedVar");
    a.to(&[0xeb], next, Rel::Rel8); // jmp next
    a.a.bind(done);
    loop_epilogue(a, 0x50, &saved)
}

/// The HIP entry loop (`.hip.globals_reg`): a jump table (in `.rdata`,
/// addressed by r14) over the variable's type: variable, managed
/// variable, surface, texture. Returns the cases in table order.
fn hip_globals(a: &mut Asm) -> Result<Vec<asm::Label>> {
    let [next, check, done, func] = [(); 4].map(|()| a.a.label());
    let [var, managed, surface, texture] = [(); 4].map(|()| a.a.label());
    let saved = [Reg::R14, Reg::Rsi, Reg::Rdi, Reg::Rbx];
    a.begin(".hip.globals_reg");
    loop_prologue(a, &saved, 0x58, done);
    a.rip(&[0x4c, 0x8d, 0x35], Target::JumpTable); // lea r14, [rip + table]
    a.to(&[0xeb], check, Rel::Rel8); // jmp check
    a.a.bind(func);
    register_function(a, "__hipRegisterFunction");
    a.align16();
    loop_step(a, [next, check, done, func], 4, true);
    a.bytes(&[0x41, 0x89, 0xcb]); // mov r11d, ecx
    a.bytes(&[0x41, 0x83, 0xe3, 0x07]); // and r11d, 7 (the variable's type)
    a.bytes(&[0x41, 0x83, 0xfb, 0x03]); // cmp r11d, 3
    a.to(&[0x77], next, Rel::Rel8); // ja next
    a.bytes(&[0x44, 0x8b, 0x53, 0x28]); // mov r10d, [rbx + 0x28] (data)
    extern_bit(a);
    a.bytes(&[0x45, 0x89, 0xdb]); // mov r11d, r11d (zero-extend)
    a.bytes(&[0x4f, 0x63, 0x1c, 0x9e]); // movsxd r11, [r14 + r11 * 4]
    a.bytes(&[0x4d, 0x01, 0xf3]); // add r11, r14
    a.bytes(&[0x41, 0xff, 0xe3]); // jmp r11
    a.a.bind(var);
    register_var(a, "__hipRegisterVar", next, Rel::Rel8);
    // A surface: RegisterSurface(h, addr, name, name, dim, extern).
    a.a.bind(surface);
    a.bytes(&[0x89, 0x54, 0x24, 0x28]); // mov [rsp + 0x28], edx (extern)
    a.bytes(&[0x44, 0x89, 0x54, 0x24, 0x20]); // mov [rsp + 0x20], r10d (dim)
    handle_address_name(a);
    a.call("__hipRegisterSurface");
    a.to(&[0xe9], next, Rel::Rel32); // jmp next
    // A texture: RegisterTexture(h, addr, name, name, dim, normalized,
    // extern).
    a.a.bind(texture);
    a.bytes(&[0x83, 0xe1, 0x20]); // and ecx, 0x20
    a.bytes(&[0xc1, 0xe9, 0x05]); // shr ecx, 5 (normalized)
    a.bytes(&[0x89, 0x54, 0x24, 0x30]); // mov [rsp + 0x30], edx (extern)
    a.bytes(&[0x89, 0x4c, 0x24, 0x28]); // mov [rsp + 0x28], ecx
    a.bytes(&[0x44, 0x89, 0x54, 0x24, 0x20]); // mov [rsp + 0x20], r10d (dim)
    handle_address_name(a);
    a.call("__hipRegisterTexture");
    a.to(&[0xe9], next, Rel::Rel32); // jmp next
    // A managed variable: RegisterManagedVar(h, aux_addr, addr, name,
    // size, align).
    a.a.bind(managed);
    a.bytes(&[0x48, 0x8b, 0x53, 0x30]); // mov rdx, [rbx + 0x30] (aux_addr)
    a.bytes(&[0x44, 0x89, 0x54, 0x24, 0x28]); // mov [rsp + 0x28], r10d (alignment)
    a.bytes(&[0x48, 0x89, 0x44, 0x24, 0x20]); // mov [rsp + 0x20], rax (size)
    a.bytes(&[0x48, 0x89, 0xf1]); // mov rcx, rsi
    a.call("__hipRegisterManagedVar");
    a.to(&[0xe9], next, Rel::Rel32); // jmp next
    a.a.bind(done);
    loop_epilogue(a, 0x58, &saved)?;
    Ok(vec![var, managed, surface, texture])
}
