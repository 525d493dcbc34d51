//! `llvm::Triple` as LLVM 22 parses, normalizes and compares target triples.
//!
//! The bundler keys every entry of a bundle by an ID that contains a triple
//! (§5 of the formats spec), and it writes that triple in LLVM's normalized
//! form. Matching entries to requested targets compares triples the way
//! `Triple::isCompatibleWith` does: on the *parsed* enums, so `linux5.0`
//! equals `linux` but vendor `pc` differs from `unknown`. Reproducing IDs and
//! matches byte for byte therefore needs LLVM's name tables and its
//! normalization algorithm, both of which are here.
//!
//! Provenance: the enums are those of the installed LLVM 22.1.8 header
//! `llvm/TargetParser/Triple.h`; the name tables and the algorithms were read
//! from `llvm/lib/TargetParser/Triple.cpp` and `ARMTargetParser{,Common}.cpp`
//! and then checked against `libLLVM-22.so` itself: every identifier-like
//! string in the library (and every suffix of one) was parsed in every
//! position, and the normalization of tens of thousands of generated triples
//! was compared. The bundler-level behaviour is also checked at test time
//! against `clang-offload-bundler` (`linker-tests/bundle_ids.rs`).
//!
//! What is covered: parsing of all five components (architecture with
//! sub-architecture, vendor, OS, environment, object format), the two
//! constructors the bundler uses ([`Triple::parse`] and
//! [`Triple::from_components`]), [`normalize`] with its canonical forms, and
//! [`Triple::is_compatible_with`]. Version numbers (`macosx10.15`) are kept in
//! the text but not interpreted, except where normalization of DXIL needs the
//! shader-model version.
//!
//! The parts: `tables.rs` holds LLVM's name tables (the enums with their
//! spellings, the names and prefixes components match), `components.rs` the
//! parser of each component, `arm.rs` the ARM architecture rules, and
//! `normalize.rs` [`normalize`]; this file is the [`Triple`] itself.

use std::fmt;

mod arm;
mod components;
mod normalize;
mod tables;
#[cfg(test)]
mod tests;

pub use components::{
    parse_arch, parse_environment, parse_object_format, parse_os, parse_sub_arch, parse_vendor,
};
pub use normalize::{CanonicalForm, UnsupportedShaderModel, normalize, try_normalize};
pub use tables::{Arch, Environment, ObjectFormat, Os, SubArch, Vendor};

/// A parsed target triple: the text as given plus the enums LLVM derives
/// from it. Like `llvm::Triple`, construction never fails and never changes
/// the text; unknown parts parse as `Unknown`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Triple {
    data: String,
    arch: Arch,
    sub_arch: SubArch,
    vendor: Vendor,
    os: Os,
    environment: Environment,
    object_format: ObjectFormat,
}

impl Triple {
    /// `Triple(const Twine &)`: splits on `-` into at most four components
    /// (the fourth keeps further dashes) and parses each in its position.
    /// A lone MIPS architecture name implies a GNU environment, as in LLVM.
    pub fn parse(text: &str) -> Triple {
        let mut t = Triple {
            data: text.to_owned(),
            arch: Arch::Unknown,
            sub_arch: SubArch::None,
            vendor: Vendor::Unknown,
            os: Os::Unknown,
            environment: Environment::Unknown,
            object_format: ObjectFormat::Unknown,
        };
        let mut parts = text.splitn(4, '-');
        // `splitn` always yields a first item, even for "".
        let first = parts.next().unwrap_or("");
        t.arch = parse_arch(first);
        t.sub_arch = parse_sub_arch(first);
        match parts.next() {
            Some(vendor) => {
                t.vendor = parse_vendor(vendor);
                if let Some(os) = parts.next() {
                    t.os = parse_os(os);
                    if let Some(env) = parts.next() {
                        t.environment = parse_environment(env);
                        t.object_format = parse_object_format(env);
                    }
                }
            }
            None => t.environment = lone_mips_environment(first),
        }
        if t.object_format == ObjectFormat::Unknown {
            t.object_format = default_object_format(&t);
        }
        t
    }

    /// `Triple(Arch, Vendor, OS, Environment)`: joins the four texts with
    /// `-` and parses each one *in its own position*, whatever it contains.
    /// This is how the bundler rebuilds the triple of a bundle-entry ID.
    pub fn from_components(arch: &str, vendor: &str, os: &str, environment: &str) -> Triple {
        let mut t = Triple {
            data: format!("{arch}-{vendor}-{os}-{environment}"),
            arch: parse_arch(arch),
            sub_arch: parse_sub_arch(arch),
            vendor: parse_vendor(vendor),
            os: parse_os(os),
            environment: parse_environment(environment),
            object_format: parse_object_format(environment),
        };
        if t.object_format == ObjectFormat::Unknown {
            t.object_format = default_object_format(&t);
        }
        t
    }

    /// The text, unchanged (`Triple::str`).
    pub fn as_str(&self) -> &str {
        &self.data
    }

    /// The first component of the text (`getArchName`).
    pub fn arch_name(&self) -> &str {
        self.data.split('-').next().unwrap_or("")
    }

    /// The second component (`getVendorName`).
    pub fn vendor_name(&self) -> &str {
        self.data.split('-').nth(1).unwrap_or("")
    }

    /// The third component (`getOSName`).
    pub fn os_name(&self) -> &str {
        self.data.split('-').nth(2).unwrap_or("")
    }

    /// Everything after the third dash (`getEnvironmentName`).
    pub fn environment_name(&self) -> &str {
        self.data.splitn(4, '-').nth(3).unwrap_or("")
    }

    /// The parsed architecture.
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// The parsed sub-architecture.
    pub fn sub_arch(&self) -> SubArch {
        self.sub_arch
    }

    /// The parsed vendor.
    pub fn vendor(&self) -> Vendor {
        self.vendor
    }

    /// The parsed OS.
    pub fn os(&self) -> Os {
        self.os
    }

    /// The parsed environment.
    pub fn environment(&self) -> Environment {
        self.environment
    }

    /// The object format: parsed from the environment's suffix, or the
    /// default for the architecture and OS.
    pub fn object_format(&self) -> ObjectFormat {
        self.object_format
    }

    /// `isAMDGCN`.
    pub fn is_amdgcn(&self) -> bool {
        self.arch == Arch::Amdgcn
    }

    /// `isAMDGPU`: `r600` or `amdgcn`.
    pub fn is_amdgpu(&self) -> bool {
        matches!(self.arch, Arch::R600 | Arch::Amdgcn)
    }

    /// `isOSDarwin`: macOS and the other Apple systems.
    pub fn is_os_darwin(&self) -> bool {
        matches!(
            self.os,
            Os::Darwin
                | Os::MacOsx
                | Os::Ios
                | Os::TvOs
                | Os::WatchOs
                | Os::DriverKit
                | Os::XrOs
                | Os::BridgeOs
        )
    }

    /// `isWindowsGNUEnvironment`.
    pub fn is_windows_gnu_environment(&self) -> bool {
        self.os == Os::Win32 && self.environment == Environment::Gnu
    }

    /// The normalized text of this triple (`Triple::normalize(Form)`).
    pub fn normalize(&self, form: CanonicalForm) -> String {
        normalize(&self.data, form)
    }

    /// [`Triple::normalize`], failing where LLVM 22 aborts.
    pub fn try_normalize(&self, form: CanonicalForm) -> Result<String, UnsupportedShaderModel> {
        try_normalize(&self.data, form)
    }

    /// `Triple::isCompatibleWith`: equal parsed enums, with LLVM's two
    /// special cases. ARM and Thumb of the same byte order are compatible
    /// when sub-architecture, vendor and OS match (plus environment and
    /// object format unless the vendor is Apple). For an Apple vendor the
    /// environment and object format are ignored. A Windows GNU triple on
    /// the left ignores the vendor. Not symmetric in general, like LLVM's.
    pub fn is_compatible_with(&self, other: &Triple) -> bool {
        let ignore_vendor = self.is_windows_gnu_environment();
        let same_vendor = self.vendor == other.vendor || ignore_vendor;
        let arm_thumb_pair = matches!(
            (self.arch, other.arch),
            (Arch::Thumb, Arch::Arm)
                | (Arch::Arm, Arch::Thumb)
                | (Arch::Thumbeb, Arch::Armeb)
                | (Arch::Armeb, Arch::Thumbeb)
        );
        if arm_thumb_pair {
            if self.vendor == Vendor::Apple {
                return self.sub_arch == other.sub_arch
                    && self.vendor == other.vendor
                    && self.os == other.os;
            }
            return self.sub_arch == other.sub_arch
                && same_vendor
                && self.os == other.os
                && self.environment == other.environment
                && self.object_format == other.object_format;
        }
        if self.vendor == Vendor::Apple {
            return self.arch == other.arch
                && self.sub_arch == other.sub_arch
                && same_vendor
                && self.os == other.os;
        }
        self.arch == other.arch
            && self.sub_arch == other.sub_arch
            && same_vendor
            && self.os == other.os
            && self.environment == other.environment
            && self.object_format == other.object_format
    }
}

impl fmt::Display for Triple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.data)
    }
}

/// [`Triple::parse`], which never fails.
impl std::str::FromStr for Triple {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Triple, Self::Err> {
        Ok(Triple::parse(text))
    }
}

/// [`Triple::parse`].
impl From<&str> for Triple {
    fn from(text: &str) -> Triple {
        Triple::parse(text)
    }
}

/// The environment LLVM implies for a triple that is only a MIPS name.
fn lone_mips_environment(arch: &str) -> Environment {
    if arch.starts_with("mipsn32") {
        Environment::GnuAbiN32
    } else if arch.starts_with("mips64") || arch.starts_with("mipsisa64") {
        Environment::GnuAbi64
    } else if arch.starts_with("mipsisa32")
        || matches!(arch, "mips" | "mipsel" | "mipsr6" | "mipsr6el")
    {
        Environment::Gnu
    } else {
        Environment::Unknown
    }
}

/// `getDefaultFormat`: the object format implied by architecture and OS.
fn default_object_format(t: &Triple) -> ObjectFormat {
    match t.arch {
        Arch::Unknown
        | Arch::Aarch64
        | Arch::Aarch64_32
        | Arch::Arm
        | Arch::Thumb
        | Arch::X86
        | Arch::X86_64 => {
            if matches!(t.os, Os::Win32 | Os::Uefi) {
                ObjectFormat::Coff
            } else if t.is_os_darwin() {
                ObjectFormat::MachO
            } else {
                ObjectFormat::Elf
            }
        }
        Arch::Mipsel if t.os == Os::Win32 => ObjectFormat::Coff,
        Arch::Ppc | Arch::Ppc64 if t.os == Os::Aix => ObjectFormat::Xcoff,
        Arch::Ppc | Arch::Ppc64 if t.is_os_darwin() => ObjectFormat::MachO,
        Arch::Systemz if t.os == Os::Zos => ObjectFormat::Goff,
        Arch::Wasm32 | Arch::Wasm64 => ObjectFormat::Wasm,
        Arch::Spirv | Arch::Spirv32 | Arch::Spirv64 => ObjectFormat::Spirv,
        Arch::Dxil => ObjectFormat::DxContainer,
        _ => ObjectFormat::Elf,
    }
}
