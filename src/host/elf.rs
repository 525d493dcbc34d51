//! What the first bytes of an ELF file say (class, byte order, type,
//! machine), read through `object::elf`'s constants without parsing the
//! rest of the file: enough to pass over shared objects, name a host
//! triple or tell a CUDA cubin from an AMDGPU code object.

use object::elf;

use crate::bytes::at_in_order;

/// An ELF file's identification and the header fields after it, as far
/// as the bytes given hold them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peek<'data> {
    head: &'data [u8],
}

/// Where `EI_CLASS` and `EI_DATA` lie.
const CLASS: usize = std::mem::offset_of!(elf::Ident, class);
const DATA: usize = std::mem::offset_of!(elf::Ident, data);
/// Where `EI_OSABI` and `EI_ABIVERSION` lie.
const OS_ABI: usize = std::mem::offset_of!(elf::Ident, os_abi);
const ABI_VERSION: usize = std::mem::offset_of!(elf::Ident, abi_version);
/// `e_type`'s and `e_machine`'s offsets in the header (the same in both
/// classes).
const E_TYPE: usize = std::mem::offset_of!(elf::FileHeader64<object::LittleEndian>, e_type);
const E_MACHINE: usize = std::mem::offset_of!(elf::FileHeader64<object::LittleEndian>, e_machine);
/// `e_flags`' offset in each class (after the entry point and the two
/// table offsets, which are as wide as the class's addresses).
const E_FLAGS_32: usize = std::mem::offset_of!(elf::FileHeader32<object::LittleEndian>, e_flags);
const E_FLAGS_64: usize = std::mem::offset_of!(elf::FileHeader64<object::LittleEndian>, e_flags);

/// The header `data` starts with, if it starts with the ELF magic.
pub fn peek(data: &[u8]) -> Option<Peek<'_>> {
    data.starts_with(&elf::ELFMAG)
        .then_some(Peek { head: data })
}

impl Peek<'_> {
    /// Whether it is a 64-bit file (`ELFCLASS64`).
    pub fn is_64(&self) -> bool {
        self.head.get(CLASS) == Some(&elf::ELFCLASS64.0)
    }

    /// Whether it is big-endian (`ELFDATA2MSB`).
    pub fn is_big_endian(&self) -> bool {
        self.head.get(DATA) == Some(&elf::ELFDATA2MSB.0)
    }

    /// A 16-bit field at `at`, in the file's byte order.
    fn half(&self, at: usize) -> Option<u16> {
        at_in_order(self.head, at, self.is_big_endian())
    }

    /// A 32-bit field at `at`, in the file's byte order.
    fn word(&self, at: usize) -> Option<u32> {
        at_in_order(self.head, at, self.is_big_endian())
    }

    /// `EI_OSABI` (`ELFOSABI_AMDGPU_HSA`, `ELFOSABI_CUDA` …), if the bytes
    /// reach it.
    pub fn os_abi(&self) -> Option<u8> {
        self.head.get(OS_ABI).copied()
    }

    /// `EI_ABIVERSION`, if the bytes reach it.
    pub fn abi_version(&self) -> Option<u8> {
        self.head.get(ABI_VERSION).copied()
    }

    /// `e_flags` (processor-specific: a cubin's SM, an AMDGPU code
    /// object's processor and features), if the bytes reach it.
    pub fn flags(&self) -> Option<u32> {
        self.word(if self.is_64() { E_FLAGS_64 } else { E_FLAGS_32 })
    }

    /// `e_type` (`ET_REL`, `ET_EXEC`, `ET_DYN` …), if the bytes reach it.
    pub fn file_type(&self) -> Option<elf::FileType> {
        self.half(E_TYPE).map(elf::FileType)
    }

    /// `e_machine` (`EM_X86_64`, `EM_AMDGPU`, `EM_CUDA` …), if the bytes
    /// reach it.
    pub fn machine(&self) -> Option<elf::Machine> {
        self.half(E_MACHINE).map(elf::Machine)
    }

    /// Whether its header says it has a section header table (a nonzero
    /// `e_shoff` or `e_shnum`), whether or not that table can be read.
    pub fn has_section_table(&self) -> bool {
        let (shoff, shnum) = match self.is_64() {
            true => (0x28..0x30, 0x3c),
            false => (0x20..0x24, 0x30),
        };
        let offset_set = self
            .head
            .get(shoff)
            .is_some_and(|b| b.iter().any(|&x| x != 0));
        offset_set || self.half(shnum).is_some_and(|n| n != 0)
    }

    /// Whether it is a shared object (`ET_DYN`).
    pub fn is_shared_object(&self) -> bool {
        self.file_type() == Some(elf::ET_DYN)
    }
}

/// Whether `data` is an ELF shared object (`ET_DYN`).
pub fn is_shared_object(data: &[u8]) -> bool {
    peek(data).is_some_and(|p| p.is_shared_object())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_in_the_files_byte_order() {
        let mut h = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0];
        h.resize(20, 0);
        h[16] = 3;
        h[18] = 62;
        let p = peek(&h).unwrap();
        assert!(p.is_64() && !p.is_big_endian());
        assert_eq!(
            (p.file_type(), p.machine()),
            (Some(elf::ET_DYN), Some(elf::EM_X86_64))
        );
        assert!(is_shared_object(&h));
        // Big-endian: the same bytes read the other way.
        h[5] = 2;
        h[16..20].copy_from_slice(&[0, 1, 0, 22]);
        let p = peek(&h).unwrap();
        assert_eq!(
            (p.file_type(), p.machine()),
            (Some(elf::ET_REL), Some(elf::EM_S390))
        );
        // Short headers say what they hold, and no more.
        assert_eq!(peek(&h[..18]).unwrap().machine(), None);
        assert_eq!(peek(&h[..17]).unwrap().file_type(), None);
        assert!(peek(b"\x7fEL").is_none() && peek(b"!<arch>\n").is_none());
    }

    #[test]
    fn flags_where_each_class_keeps_them() {
        // ELF64: e_flags at 48; ELF32: at 36 (addresses are 4 bytes).
        let mut h = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 64, 4];
        h.resize(64, 0);
        h[48..52].copy_from_slice(&0x53fu32.to_le_bytes());
        let p = peek(&h).unwrap();
        assert_eq!(
            (p.os_abi(), p.abi_version(), p.flags()),
            (Some(64), Some(4), Some(0x53f))
        );
        h[4] = 1;
        h[36..40].copy_from_slice(&0x0050_0000u32.to_le_bytes());
        assert_eq!(peek(&h).unwrap().flags(), Some(0x0050_0000));
        h[5] = 2;
        assert_eq!(peek(&h).unwrap().flags(), Some(0x0000_5000));
        assert_eq!(peek(&h[..39]).unwrap().flags(), None);
        assert_eq!(peek(&h[..7]).unwrap().os_abi(), None);
    }
}
