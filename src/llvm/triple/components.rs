//! The component parsers (`Triple::parseArch` … `parseFormat`): one
//! component's text to its enum, through the tables in `tables.rs` and
//! the ARM rules in `arm.rs`.

use super::arm;
use super::tables::{
    ARCH_NAMES, DXIL_VERSIONS, ENVIRONMENT_PREFIXES, FORMAT_SUFFIXES, KALIMBA_VERSIONS,
    OS_PREFIXES, SPIRV_VERSIONS,
};
use super::{Arch, Environment, ObjectFormat, Os, SubArch, Vendor};

/// `Triple::parseArch`: the architecture a triple's first component names.
pub fn parse_arch(name: &str) -> Arch {
    if let Some(&(_, arch)) = ARCH_NAMES.iter().find(|(n, _)| *n == name) {
        return arch;
    }
    // Any "kalimba…" is kalimba; it sits inside LLVM's main switch.
    if name.starts_with("kalimba") {
        return Arch::Kalimba;
    }
    if name.starts_with("arm") || name.starts_with("thumb") || name.starts_with("aarch64") {
        return arm::parse_arm_arch(name);
    }
    if name.starts_with("bpf") {
        return parse_bpf_arch(name);
    }
    Arch::Unknown
}

/// BPF names. Plain `bpf` means the host's byte order: every host LLVM 22 is
/// tested on here is little-endian.
fn parse_bpf_arch(name: &str) -> Arch {
    match name {
        "bpf" | "bpf_le" | "bpfel" => Arch::Bpfel,
        "bpf_be" | "bpfeb" => Arch::Bpfeb,
        _ => Arch::Unknown,
    }
}

/// `Triple::parseSubArch`: the sub-architecture a first component names.
pub fn parse_sub_arch(name: &str) -> SubArch {
    if name.starts_with("mips") && (name.ends_with("r6el") || name.ends_with("r6")) {
        return SubArch::MipsR6;
    }
    match name {
        "powerpcspe" => return SubArch::PpcSpe,
        "arm64e" => return SubArch::Aarch64Arm64e,
        "arm64ec" => return SubArch::Aarch64Arm64ec,
        "aarch64_lfi" => return SubArch::Aarch64Lfi,
        _ => {}
    }
    if name.starts_with("spirv") {
        return ends_with_table(name, SPIRV_VERSIONS).unwrap_or(SubArch::None);
    }
    if name.starts_with("dxil") {
        return ends_with_table(name, DXIL_VERSIONS).unwrap_or(SubArch::None);
    }
    match arm::canonical_arch_name(name) {
        // Only names the ARM canonicaliser rejects reach the Kalimba check.
        None => ends_with_table(name, KALIMBA_VERSIONS).unwrap_or(SubArch::None),
        Some(canonical) => arm::sub_arch_of(arm::parse_arch(canonical)),
    }
}

fn ends_with_table<T: Copy>(name: &str, table: &[(&str, T)]) -> Option<T> {
    table
        .iter()
        .find(|(suffix, _)| name.ends_with(suffix))
        .map(|&(_, v)| v)
}

fn starts_with_table<T: Copy>(name: &str, table: &[(&str, T)]) -> Option<T> {
    table
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|&(_, v)| v)
}

/// `Triple::parseVendor` (exact names).
pub fn parse_vendor(name: &str) -> Vendor {
    match name {
        "apple" => Vendor::Apple,
        "pc" => Vendor::Pc,
        "scei" | "sie" => Vendor::Scei,
        "fsl" => Vendor::Freescale,
        "ibm" => Vendor::Ibm,
        "img" => Vendor::ImaginationTechnologies,
        "mti" => Vendor::MipsTechnologies,
        "nvidia" => Vendor::Nvidia,
        "csr" => Vendor::Csr,
        "amd" => Vendor::Amd,
        "mesa" => Vendor::Mesa,
        "suse" => Vendor::Suse,
        "oe" => Vendor::OpenEmbedded,
        "intel" => Vendor::Intel,
        "meta" => Vendor::Meta,
        _ => Vendor::Unknown,
    }
}

/// `Triple::parseOS` (prefix match).
pub fn parse_os(name: &str) -> Os {
    starts_with_table(name, OS_PREFIXES).unwrap_or(Os::Unknown)
}

/// `Triple::parseEnvironment` (prefix match).
pub fn parse_environment(name: &str) -> Environment {
    starts_with_table(name, ENVIRONMENT_PREFIXES).unwrap_or(Environment::Unknown)
}

/// `Triple::parseFormat`: the object format an environment component *ends*
/// with (`gnu-elf`, `msvc-coff`, `elf`). `xcoff` is tested before `coff`.
/// There is no spelling for DXContainer.
pub fn parse_object_format(name: &str) -> ObjectFormat {
    ends_with_table(name, FORMAT_SUFFIXES).unwrap_or(ObjectFormat::Unknown)
}
