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

use std::fmt;

/// Declares a field-less enum whose variants carry LLVM's spelling, with
/// `ALL` (LLVM's enum order) and `name()`.
macro_rules! llvm_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $($variant:ident => $text:literal,)* }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $(
                #[doc = concat!("`", $text, "`")]
                $variant,
            )*
        }

        impl $name {
            /// Every value, in the order of LLVM's enum.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// LLVM's name for the value (`Triple::get…TypeName`).
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

llvm_enum! {
    /// The architecture (`Triple::ArchType`). Names are LLVM's
    /// `getArchTypeName` (so `i386` for x86 and `s390x` for SystemZ).
    pub enum Arch {
        Unknown => "unknown",
        Arm => "arm",
        Armeb => "armeb",
        Aarch64 => "aarch64",
        Aarch64Be => "aarch64_be",
        Aarch64_32 => "aarch64_32",
        Arc => "arc",
        Avr => "avr",
        Bpfel => "bpfel",
        Bpfeb => "bpfeb",
        Csky => "csky",
        Dxil => "dxil",
        Hexagon => "hexagon",
        Loongarch32 => "loongarch32",
        Loongarch64 => "loongarch64",
        M68k => "m68k",
        Mips => "mips",
        Mipsel => "mipsel",
        Mips64 => "mips64",
        Mips64el => "mips64el",
        Msp430 => "msp430",
        Ppc => "powerpc",
        Ppcle => "powerpcle",
        Ppc64 => "powerpc64",
        Ppc64le => "powerpc64le",
        R600 => "r600",
        Amdgcn => "amdgcn",
        Riscv32 => "riscv32",
        Riscv64 => "riscv64",
        Riscv32be => "riscv32be",
        Riscv64be => "riscv64be",
        Sparc => "sparc",
        Sparcv9 => "sparcv9",
        Sparcel => "sparcel",
        Systemz => "s390x",
        Tce => "tce",
        Tcele => "tcele",
        Thumb => "thumb",
        Thumbeb => "thumbeb",
        X86 => "i386",
        X86_64 => "x86_64",
        Xcore => "xcore",
        Xtensa => "xtensa",
        Nvptx => "nvptx",
        Nvptx64 => "nvptx64",
        Amdil => "amdil",
        Amdil64 => "amdil64",
        Hsail => "hsail",
        Hsail64 => "hsail64",
        Spir => "spir",
        Spir64 => "spir64",
        Spirv => "spirv",
        Spirv32 => "spirv32",
        Spirv64 => "spirv64",
        Kalimba => "kalimba",
        Shave => "shave",
        Lanai => "lanai",
        Wasm32 => "wasm32",
        Wasm64 => "wasm64",
        Renderscript32 => "renderscript32",
        Renderscript64 => "renderscript64",
        Ve => "ve",
    }
}

llvm_enum! {
    /// The sub-architecture (`Triple::SubArchType`). LLVM has no names for
    /// these; the text here is descriptive only.
    pub enum SubArch {
        None => "none",
        ArmV9_7a => "armv9.7a",
        ArmV9_6a => "armv9.6a",
        ArmV9_5a => "armv9.5a",
        ArmV9_4a => "armv9.4a",
        ArmV9_3a => "armv9.3a",
        ArmV9_2a => "armv9.2a",
        ArmV9_1a => "armv9.1a",
        ArmV9 => "armv9",
        ArmV8_9a => "armv8.9a",
        ArmV8_8a => "armv8.8a",
        ArmV8_7a => "armv8.7a",
        ArmV8_6a => "armv8.6a",
        ArmV8_5a => "armv8.5a",
        ArmV8_4a => "armv8.4a",
        ArmV8_3a => "armv8.3a",
        ArmV8_2a => "armv8.2a",
        ArmV8_1a => "armv8.1a",
        ArmV8 => "armv8",
        ArmV8r => "armv8r",
        ArmV8mBaseline => "armv8m.base",
        ArmV8mMainline => "armv8m.main",
        ArmV8_1mMainline => "armv8.1m.main",
        ArmV7 => "armv7",
        ArmV7em => "armv7em",
        ArmV7m => "armv7m",
        ArmV7s => "armv7s",
        ArmV7k => "armv7k",
        ArmV7ve => "armv7ve",
        ArmV6 => "armv6",
        ArmV6m => "armv6m",
        ArmV6k => "armv6k",
        ArmV6t2 => "armv6t2",
        ArmV5 => "armv5",
        ArmV5te => "armv5te",
        ArmV4t => "armv4t",
        Aarch64Arm64e => "arm64e",
        Aarch64Arm64ec => "arm64ec",
        Aarch64Lfi => "aarch64_lfi",
        KalimbaV3 => "kalimba3",
        KalimbaV4 => "kalimba4",
        KalimbaV5 => "kalimba5",
        MipsR6 => "mips r6",
        PpcSpe => "powerpcspe",
        SpirvV10 => "spirv1.0",
        SpirvV11 => "spirv1.1",
        SpirvV12 => "spirv1.2",
        SpirvV13 => "spirv1.3",
        SpirvV14 => "spirv1.4",
        SpirvV15 => "spirv1.5",
        SpirvV16 => "spirv1.6",
        DxilV1_0 => "dxilv1.0",
        DxilV1_1 => "dxilv1.1",
        DxilV1_2 => "dxilv1.2",
        DxilV1_3 => "dxilv1.3",
        DxilV1_4 => "dxilv1.4",
        DxilV1_5 => "dxilv1.5",
        DxilV1_6 => "dxilv1.6",
        DxilV1_7 => "dxilv1.7",
        DxilV1_8 => "dxilv1.8",
        DxilV1_9 => "dxilv1.9",
    }
}

llvm_enum! {
    /// The vendor (`Triple::VendorType`).
    pub enum Vendor {
        Unknown => "unknown",
        Apple => "apple",
        Pc => "pc",
        Scei => "scei",
        Freescale => "fsl",
        Ibm => "ibm",
        ImaginationTechnologies => "img",
        MipsTechnologies => "mti",
        Nvidia => "nvidia",
        Csr => "csr",
        Amd => "amd",
        Mesa => "mesa",
        Suse => "suse",
        OpenEmbedded => "oe",
        Intel => "intel",
        Meta => "meta",
    }
}

llvm_enum! {
    /// The operating system (`Triple::OSType`).
    pub enum Os {
        Unknown => "unknown",
        Darwin => "darwin",
        DragonFly => "dragonfly",
        FreeBsd => "freebsd",
        Fuchsia => "fuchsia",
        Ios => "ios",
        KFreeBsd => "kfreebsd",
        Linux => "linux",
        Lv2 => "lv2",
        MacOsx => "macosx",
        Managarm => "managarm",
        NetBsd => "netbsd",
        OpenBsd => "openbsd",
        Solaris => "solaris",
        Uefi => "uefi",
        Win32 => "windows",
        Zos => "zos",
        Haiku => "haiku",
        Rtems => "rtems",
        Aix => "aix",
        Cuda => "cuda",
        Nvcl => "nvcl",
        AmdHsa => "amdhsa",
        Ps4 => "ps4",
        Ps5 => "ps5",
        ElfIamcu => "elfiamcu",
        TvOs => "tvos",
        WatchOs => "watchos",
        BridgeOs => "bridgeos",
        DriverKit => "driverkit",
        XrOs => "xros",
        Mesa3d => "mesa3d",
        AmdPal => "amdpal",
        HermitCore => "hermit",
        Hurd => "hurd",
        Wasi => "wasi",
        WasiP1 => "wasip1",
        WasiP2 => "wasip2",
        WasiP3 => "wasip3",
        Emscripten => "emscripten",
        ShaderModel => "shadermodel",
        LiteOs => "liteos",
        Serenity => "serenity",
        Vulkan => "vulkan",
        CheriotRtos => "cheriotrtos",
    }
}

llvm_enum! {
    /// The environment (`Triple::EnvironmentType`).
    pub enum Environment {
        Unknown => "unknown",
        Gnu => "gnu",
        GnuT64 => "gnut64",
        GnuAbiN32 => "gnuabin32",
        GnuAbi64 => "gnuabi64",
        GnuEabi => "gnueabi",
        GnuEabiT64 => "gnueabit64",
        GnuEabiHf => "gnueabihf",
        GnuEabiHfT64 => "gnueabihft64",
        GnuF32 => "gnuf32",
        GnuF64 => "gnuf64",
        GnuSf => "gnusf",
        GnuX32 => "gnux32",
        GnuIlp32 => "gnu_ilp32",
        Code16 => "code16",
        Eabi => "eabi",
        EabiHf => "eabihf",
        Android => "android",
        Musl => "musl",
        MuslAbiN32 => "muslabin32",
        MuslAbi64 => "muslabi64",
        MuslEabi => "musleabi",
        MuslEabiHf => "musleabihf",
        MuslF32 => "muslf32",
        MuslSf => "muslsf",
        MuslX32 => "muslx32",
        MuslWali => "muslwali",
        Llvm => "llvm",
        Msvc => "msvc",
        Itanium => "itanium",
        Cygnus => "cygnus",
        CoreClr => "coreclr",
        Simulator => "simulator",
        MacAbi => "macabi",
        Pixel => "pixel",
        Vertex => "vertex",
        Geometry => "geometry",
        Hull => "hull",
        Domain => "domain",
        Compute => "compute",
        Library => "library",
        RayGeneration => "raygeneration",
        Intersection => "intersection",
        AnyHit => "anyhit",
        ClosestHit => "closesthit",
        Miss => "miss",
        Callable => "callable",
        Mesh => "mesh",
        Amplification => "amplification",
        RootSignature => "rootsignature",
        OpenCl => "opencl",
        OpenHos => "ohos",
        Mlibc => "mlibc",
        PAuthTest => "pauthtest",
        Mtia => "mtia",
    }
}

llvm_enum! {
    /// The object file format (`Triple::ObjectFormatType`). The unknown
    /// format has an empty name, as in LLVM.
    pub enum ObjectFormat {
        Unknown => "",
        Coff => "coff",
        DxContainer => "dxcontainer",
        Elf => "elf",
        Goff => "goff",
        MachO => "macho",
        Spirv => "spirv",
        Wasm => "wasm",
        Xcoff => "xcoff",
    }
}

/// How many components [`normalize`] returns (`Triple::CanonicalForm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CanonicalForm {
    /// As many components as the normalized triple has.
    Any,
    /// `arch-vendor-os`: extra components are dropped.
    ThreeIdent,
    /// `arch-vendor-os-environment`: missing ones become `unknown`.
    FourIdent,
    /// `arch-vendor-os-environment-format`.
    FiveIdent,
}

// ---------------------------------------------------------------------------
// Component parsers
// ---------------------------------------------------------------------------

/// Architecture names matched exactly (LLVM's main `parseArch` switch).
/// ARM-family and BPF names that are not listed fall through to the
/// dedicated parsers below, as in LLVM.
const ARCH_NAMES: &[(&str, Arch)] = &[
    ("i386", Arch::X86),
    ("i486", Arch::X86),
    ("i586", Arch::X86),
    ("i686", Arch::X86),
    ("i786", Arch::X86),
    ("i886", Arch::X86),
    ("i986", Arch::X86),
    ("amd64", Arch::X86_64),
    ("x86_64", Arch::X86_64),
    ("x86_64h", Arch::X86_64),
    ("powerpc", Arch::Ppc),
    ("powerpcspe", Arch::Ppc),
    ("ppc", Arch::Ppc),
    ("ppc32", Arch::Ppc),
    ("powerpcle", Arch::Ppcle),
    ("ppcle", Arch::Ppcle),
    ("ppc32le", Arch::Ppcle),
    ("powerpc64", Arch::Ppc64),
    ("ppu", Arch::Ppc64),
    ("ppc64", Arch::Ppc64),
    ("powerpc64le", Arch::Ppc64le),
    ("ppc64le", Arch::Ppc64le),
    ("xscale", Arch::Arm),
    ("xscaleeb", Arch::Armeb),
    ("aarch64", Arch::Aarch64),
    ("aarch64_be", Arch::Aarch64Be),
    ("aarch64_32", Arch::Aarch64_32),
    ("aarch64_lfi", Arch::Aarch64),
    ("arc", Arch::Arc),
    ("arm64", Arch::Aarch64),
    ("arm64_32", Arch::Aarch64_32),
    ("arm64e", Arch::Aarch64),
    ("arm64ec", Arch::Aarch64),
    ("arm", Arch::Arm),
    ("armeb", Arch::Armeb),
    ("thumb", Arch::Thumb),
    ("thumbeb", Arch::Thumbeb),
    ("avr", Arch::Avr),
    ("m68k", Arch::M68k),
    ("msp430", Arch::Msp430),
    ("mips", Arch::Mips),
    ("mipseb", Arch::Mips),
    ("mipsallegrex", Arch::Mips),
    ("mipsisa32r6", Arch::Mips),
    ("mipsr6", Arch::Mips),
    ("mipsel", Arch::Mipsel),
    ("mipsallegrexel", Arch::Mipsel),
    ("mipsisa32r6el", Arch::Mipsel),
    ("mipsr6el", Arch::Mipsel),
    ("mips64", Arch::Mips64),
    ("mips64eb", Arch::Mips64),
    ("mipsn32", Arch::Mips64),
    ("mipsisa64r6", Arch::Mips64),
    ("mips64r6", Arch::Mips64),
    ("mipsn32r6", Arch::Mips64),
    ("mips64el", Arch::Mips64el),
    ("mipsn32el", Arch::Mips64el),
    ("mipsisa64r6el", Arch::Mips64el),
    ("mips64r6el", Arch::Mips64el),
    ("mipsn32r6el", Arch::Mips64el),
    ("r600", Arch::R600),
    ("amdgcn", Arch::Amdgcn),
    ("riscv32", Arch::Riscv32),
    ("riscv64", Arch::Riscv64),
    ("riscv32be", Arch::Riscv32be),
    ("riscv64be", Arch::Riscv64be),
    ("hexagon", Arch::Hexagon),
    ("s390x", Arch::Systemz),
    ("systemz", Arch::Systemz),
    ("sparc", Arch::Sparc),
    ("sparcel", Arch::Sparcel),
    ("sparcv9", Arch::Sparcv9),
    ("sparc64", Arch::Sparcv9),
    ("tce", Arch::Tce),
    ("tcele", Arch::Tcele),
    ("xcore", Arch::Xcore),
    ("nvptx", Arch::Nvptx),
    ("nvptx64", Arch::Nvptx64),
    ("amdil", Arch::Amdil),
    ("amdil64", Arch::Amdil64),
    ("hsail", Arch::Hsail),
    ("hsail64", Arch::Hsail64),
    ("spir", Arch::Spir),
    ("spir64", Arch::Spir64),
    ("spirv", Arch::Spirv),
    ("spirv1.5", Arch::Spirv),
    ("spirv1.6", Arch::Spirv),
    ("spirv32", Arch::Spirv32),
    ("spirv32v1.0", Arch::Spirv32),
    ("spirv32v1.1", Arch::Spirv32),
    ("spirv32v1.2", Arch::Spirv32),
    ("spirv32v1.3", Arch::Spirv32),
    ("spirv32v1.4", Arch::Spirv32),
    ("spirv32v1.5", Arch::Spirv32),
    ("spirv32v1.6", Arch::Spirv32),
    ("spirv64", Arch::Spirv64),
    ("spirv64v1.0", Arch::Spirv64),
    ("spirv64v1.1", Arch::Spirv64),
    ("spirv64v1.2", Arch::Spirv64),
    ("spirv64v1.3", Arch::Spirv64),
    ("spirv64v1.4", Arch::Spirv64),
    ("spirv64v1.5", Arch::Spirv64),
    ("spirv64v1.6", Arch::Spirv64),
    ("lanai", Arch::Lanai),
    ("renderscript32", Arch::Renderscript32),
    ("renderscript64", Arch::Renderscript64),
    ("shave", Arch::Shave),
    ("ve", Arch::Ve),
    ("wasm32", Arch::Wasm32),
    ("wasm64", Arch::Wasm64),
    ("csky", Arch::Csky),
    ("loongarch32", Arch::Loongarch32),
    ("loongarch64", Arch::Loongarch64),
    ("dxil", Arch::Dxil),
    ("dxilv1.0", Arch::Dxil),
    ("dxilv1.1", Arch::Dxil),
    ("dxilv1.2", Arch::Dxil),
    ("dxilv1.3", Arch::Dxil),
    ("dxilv1.4", Arch::Dxil),
    ("dxilv1.5", Arch::Dxil),
    ("dxilv1.6", Arch::Dxil),
    ("dxilv1.7", Arch::Dxil),
    ("dxilv1.8", Arch::Dxil),
    ("dxilv1.9", Arch::Dxil),
    ("xtensa", Arch::Xtensa),
];

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
        const SPIRV: &[(&str, SubArch)] = &[
            ("v1.0", SubArch::SpirvV10),
            ("v1.1", SubArch::SpirvV11),
            ("v1.2", SubArch::SpirvV12),
            ("v1.3", SubArch::SpirvV13),
            ("v1.4", SubArch::SpirvV14),
            ("v1.5", SubArch::SpirvV15),
            ("v1.6", SubArch::SpirvV16),
        ];
        return ends_with_table(name, SPIRV).unwrap_or(SubArch::None);
    }
    if name.starts_with("dxil") {
        const DXIL: &[(&str, SubArch)] = &[
            ("v1.0", SubArch::DxilV1_0),
            ("v1.1", SubArch::DxilV1_1),
            ("v1.2", SubArch::DxilV1_2),
            ("v1.3", SubArch::DxilV1_3),
            ("v1.4", SubArch::DxilV1_4),
            ("v1.5", SubArch::DxilV1_5),
            ("v1.6", SubArch::DxilV1_6),
            ("v1.7", SubArch::DxilV1_7),
            ("v1.8", SubArch::DxilV1_8),
            ("v1.9", SubArch::DxilV1_9),
        ];
        return ends_with_table(name, DXIL).unwrap_or(SubArch::None);
    }
    match arm::canonical_arch_name(name) {
        // Only names the ARM canonicaliser rejects reach the Kalimba check.
        None => {
            const KALIMBA: &[(&str, SubArch)] = &[
                ("kalimba3", SubArch::KalimbaV3),
                ("kalimba4", SubArch::KalimbaV4),
                ("kalimba5", SubArch::KalimbaV5),
            ];
            ends_with_table(name, KALIMBA).unwrap_or(SubArch::None)
        }
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

/// OS prefixes: an OS component *starts with* one of these, so version
/// suffixes (`linux5.0`, `macosx10.15`) parse. Where one prefix extends
/// another (`wasip1` and `wasi`), the longer one comes first.
const OS_PREFIXES: &[(&str, Os)] = &[
    ("darwin", Os::Darwin),
    ("dragonfly", Os::DragonFly),
    ("freebsd", Os::FreeBsd),
    ("fuchsia", Os::Fuchsia),
    ("ios", Os::Ios),
    ("kfreebsd", Os::KFreeBsd),
    ("linux", Os::Linux),
    ("lv2", Os::Lv2),
    ("macos", Os::MacOsx),
    ("managarm", Os::Managarm),
    ("netbsd", Os::NetBsd),
    ("openbsd", Os::OpenBsd),
    ("solaris", Os::Solaris),
    ("uefi", Os::Uefi),
    ("win32", Os::Win32),
    ("windows", Os::Win32),
    ("zos", Os::Zos),
    ("haiku", Os::Haiku),
    ("rtems", Os::Rtems),
    ("aix", Os::Aix),
    ("cuda", Os::Cuda),
    ("nvcl", Os::Nvcl),
    ("amdhsa", Os::AmdHsa),
    ("ps4", Os::Ps4),
    ("ps5", Os::Ps5),
    ("elfiamcu", Os::ElfIamcu),
    ("tvos", Os::TvOs),
    ("watchos", Os::WatchOs),
    ("bridgeos", Os::BridgeOs),
    ("driverkit", Os::DriverKit),
    ("xros", Os::XrOs),
    ("visionos", Os::XrOs),
    ("mesa3d", Os::Mesa3d),
    ("amdpal", Os::AmdPal),
    ("hermit", Os::HermitCore),
    ("hurd", Os::Hurd),
    ("wasip1", Os::WasiP1),
    ("wasip2", Os::WasiP2),
    ("wasip3", Os::WasiP3),
    ("wasi", Os::Wasi),
    ("emscripten", Os::Emscripten),
    ("shadermodel", Os::ShaderModel),
    ("liteos", Os::LiteOs),
    ("serenity", Os::Serenity),
    ("vulkan", Os::Vulkan),
    ("cheriotrtos", Os::CheriotRtos),
];

/// `Triple::parseOS` (prefix match).
pub fn parse_os(name: &str) -> Os {
    starts_with_table(name, OS_PREFIXES).unwrap_or(Os::Unknown)
}

/// Environment prefixes, longer ones before the prefixes they extend.
const ENVIRONMENT_PREFIXES: &[(&str, Environment)] = &[
    ("eabihf", Environment::EabiHf),
    ("eabi", Environment::Eabi),
    ("gnuabin32", Environment::GnuAbiN32),
    ("gnuabi64", Environment::GnuAbi64),
    ("gnueabihft64", Environment::GnuEabiHfT64),
    ("gnueabihf", Environment::GnuEabiHf),
    ("gnueabit64", Environment::GnuEabiT64),
    ("gnueabi", Environment::GnuEabi),
    ("gnuf32", Environment::GnuF32),
    ("gnuf64", Environment::GnuF64),
    ("gnusf", Environment::GnuSf),
    ("gnux32", Environment::GnuX32),
    ("gnu_ilp32", Environment::GnuIlp32),
    ("code16", Environment::Code16),
    ("gnut64", Environment::GnuT64),
    ("gnu", Environment::Gnu),
    ("android", Environment::Android),
    ("muslabin32", Environment::MuslAbiN32),
    ("muslabi64", Environment::MuslAbi64),
    ("musleabihf", Environment::MuslEabiHf),
    ("musleabi", Environment::MuslEabi),
    ("muslf32", Environment::MuslF32),
    ("muslsf", Environment::MuslSf),
    ("muslx32", Environment::MuslX32),
    ("muslwali", Environment::MuslWali),
    ("musl", Environment::Musl),
    ("msvc", Environment::Msvc),
    ("itanium", Environment::Itanium),
    ("cygnus", Environment::Cygnus),
    ("coreclr", Environment::CoreClr),
    ("simulator", Environment::Simulator),
    ("macabi", Environment::MacAbi),
    ("pixel", Environment::Pixel),
    ("vertex", Environment::Vertex),
    ("geometry", Environment::Geometry),
    ("hull", Environment::Hull),
    ("domain", Environment::Domain),
    ("compute", Environment::Compute),
    ("library", Environment::Library),
    ("raygeneration", Environment::RayGeneration),
    ("intersection", Environment::Intersection),
    ("anyhit", Environment::AnyHit),
    ("closesthit", Environment::ClosestHit),
    ("miss", Environment::Miss),
    ("callable", Environment::Callable),
    ("mesh", Environment::Mesh),
    ("amplification", Environment::Amplification),
    ("rootsignature", Environment::RootSignature),
    ("opencl", Environment::OpenCl),
    ("ohos", Environment::OpenHos),
    ("pauthtest", Environment::PAuthTest),
    ("llvm", Environment::Llvm),
    ("mlibc", Environment::Mlibc),
    ("mtia", Environment::Mtia),
];

/// `Triple::parseEnvironment` (prefix match).
pub fn parse_environment(name: &str) -> Environment {
    starts_with_table(name, ENVIRONMENT_PREFIXES).unwrap_or(Environment::Unknown)
}

/// `Triple::parseFormat`: the object format an environment component *ends*
/// with (`gnu-elf`, `msvc-coff`, `elf`). `xcoff` is tested before `coff`.
/// There is no spelling for DXContainer.
pub fn parse_object_format(name: &str) -> ObjectFormat {
    const FORMATS: &[(&str, ObjectFormat)] = &[
        ("xcoff", ObjectFormat::Xcoff),
        ("coff", ObjectFormat::Coff),
        ("elf", ObjectFormat::Elf),
        ("goff", ObjectFormat::Goff),
        ("macho", ObjectFormat::MachO),
        ("wasm", ObjectFormat::Wasm),
        ("spirv", ObjectFormat::Spirv),
    ];
    ends_with_table(name, FORMATS).unwrap_or(ObjectFormat::Unknown)
}

// ---------------------------------------------------------------------------
// The triple
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Normalization
// ---------------------------------------------------------------------------

/// `Triple::normalize`: rewrites a triple into the canonical
/// `arch-vendor-os[-environment[-format]]` order.
///
/// Components already in a position where they parse stay there. The others
/// are moved, position by position (architecture, vendor, OS, environment),
/// to the first place where one parses: a component moved left pushes the
/// movable components in its way to the right; a component moved right gets
/// empty components inserted before it. Empty or unrecognised components
/// become `unknown`. Then LLVM's special cases apply: a three-part
/// `arch-none-env` keeps `none` as the OS, `androideabi` becomes `android`,
/// SUSE's `gnueabi` means `gnueabihf`, Windows (and `mingw`/`cygwin`) get
/// `windows` plus an environment, and DXIL takes its version from the shader
/// model. Finally the result is cut or padded to `form`.
pub fn normalize(text: &str, form: CanonicalForm) -> String {
    match try_normalize(text, form) {
        Ok(n) => n,
        Err(UnsupportedShaderModel { normalized }) => normalized,
    }
}

/// LLVM 22 aborts normalization ("LLVM ERROR: Unsupported Shader Model
/// version", exit code 1) for a `dxil` triple whose OS is `shadermodel6.Y`
/// with Y ≥ 10. [`try_normalize`] reports that case with this error;
/// [`normalize`] instead returns the text with `dxil` left unversioned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsupportedShaderModel {
    /// The normalization with the architecture left as `dxil`.
    pub normalized: String,
}

impl fmt::Display for UnsupportedShaderModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Unsupported Shader Model version")
    }
}

impl std::error::Error for UnsupportedShaderModel {}

/// [`normalize`], failing where LLVM 22 aborts (see
/// [`UnsupportedShaderModel`]).
pub fn try_normalize(text: &str, form: CanonicalForm) -> Result<String, UnsupportedShaderModel> {
    let mut unsupported = false;
    let mut comps: Vec<String> = text.split('-').map(str::to_owned).collect();

    // The current parse of each position, as LLVM keeps them: each attempt
    // below overwrites them, and later special cases read the last value.
    let mut arch = comps.first().map_or(Arch::Unknown, |c| parse_arch(c));
    let mut vendor = comps.get(1).map_or(Vendor::Unknown, |c| parse_vendor(c));
    let mut os = Os::Unknown;
    let mut is_cygwin = false;
    let mut is_mingw = false;
    if let Some(c) = comps.get(2) {
        os = parse_os(c);
        is_cygwin = c.starts_with("cygwin");
        is_mingw = c.starts_with("mingw");
    }
    let mut environment = comps
        .get(3)
        .map_or(Environment::Unknown, |c| parse_environment(c));
    let mut object_format = comps
        .get(4)
        .map_or(ObjectFormat::Unknown, |c| parse_object_format(c));

    let mut found = [
        arch != Arch::Unknown,
        vendor != Vendor::Unknown,
        os != Os::Unknown,
        environment != Environment::Unknown,
    ];
    let fixed = |found: &[bool; 4], i: usize| i < 4 && found[i];

    for pos in 0..4 {
        if found[pos] {
            continue;
        }
        let mut idx = 0;
        while idx < comps.len() {
            if fixed(&found, idx) {
                idx += 1;
                continue;
            }
            let comp = comps[idx].clone();
            let valid = match pos {
                0 => {
                    arch = parse_arch(&comp);
                    arch != Arch::Unknown
                }
                1 => {
                    vendor = parse_vendor(&comp);
                    vendor != Vendor::Unknown
                }
                2 => {
                    os = parse_os(&comp);
                    is_cygwin = comp.starts_with("cygwin");
                    is_mingw = comp.starts_with("mingw");
                    os != Os::Unknown || is_cygwin || is_mingw
                }
                _ => {
                    environment = parse_environment(&comp);
                    if environment != Environment::Unknown {
                        true
                    } else {
                        object_format = parse_object_format(&comp);
                        object_format != ObjectFormat::Unknown
                    }
                }
            };
            if !valid {
                idx += 1;
                continue;
            }
            if pos < idx {
                move_left(&mut comps, &found, idx, pos);
            } else if pos > idx {
                move_right(&mut comps, &found, idx, pos);
            }
            found[pos] = true;
            break;
        }
    }

    // "arch-none-env": `none` is the OS, not the vendor.
    if found[0]
        && !found[1]
        && !found[2]
        && found[3]
        && comps.get(1).is_some_and(|c| c == "none")
        && comps.get(2).is_some_and(|c| c.is_empty())
    {
        comps.swap(1, 2);
    }

    for c in &mut comps {
        if c.is_empty() {
            *c = "unknown".to_owned();
        }
    }

    if environment == Environment::Android
        && let Some(version) = comps.get(3).and_then(|c| c.strip_prefix("androideabi"))
    {
        comps[3] = format!("android{version}");
    }

    if vendor == Vendor::Suse && environment == Environment::GnuEabi {
        set_component(&mut comps, 3, "gnueabihf");
    }

    if os == Os::Win32 {
        comps.resize(4, String::new());
        comps[2] = "windows".to_owned();
        if environment == Environment::Unknown {
            comps[3] = if matches!(object_format, ObjectFormat::Unknown | ObjectFormat::Coff) {
                "msvc".to_owned()
            } else {
                object_format.name().to_owned()
            };
        }
    } else if is_mingw {
        comps.resize(4, String::new());
        comps[2] = "windows".to_owned();
        comps[3] = "gnu".to_owned();
    } else if is_cygwin {
        comps.resize(4, String::new());
        comps[2] = "windows".to_owned();
        comps[3] = "cygnus".to_owned();
    }
    if (is_mingw || is_cygwin || (os == Os::Win32 && environment != Environment::Unknown))
        && !matches!(object_format, ObjectFormat::Unknown | ObjectFormat::Coff)
    {
        comps.resize(5, String::new());
        comps[4] = object_format.name().to_owned();
    }

    if comps.first().is_some_and(|c| c == "dxil") {
        comps.truncate(4);
        if os == Os::ShaderModel {
            match comps.get(2).map(|c| dxil_arch_for_shader_model(c)) {
                Some(Some(name)) => comps[0] = name.to_owned(),
                Some(None) => unsupported = true,
                None => {}
            }
        }
    }

    let width = match form {
        CanonicalForm::Any => None,
        CanonicalForm::ThreeIdent => Some(3),
        CanonicalForm::FourIdent => Some(4),
        CanonicalForm::FiveIdent => Some(5),
    };
    if let Some(width) = width {
        comps.resize(width, "unknown".to_owned());
    }
    let normalized = comps.join("-");
    if unsupported {
        Err(UnsupportedShaderModel { normalized })
    } else {
        Ok(normalized)
    }
}

fn set_component(comps: &mut [String], i: usize, value: &str) {
    if let Some(c) = comps.get_mut(i) {
        value.clone_into(c);
    }
}

/// Moves the component at `from` left to `to`, pushing the movable
/// components in between one place right; the first empty component (at
/// worst the hole left at `from`) absorbs the shift.
fn move_left(comps: &mut [String], found: &[bool; 4], from: usize, to: usize) {
    let mut carried = std::mem::take(&mut comps[from]);
    let mut i = to;
    while !carried.is_empty() {
        while i < 4 && found[i] {
            i += 1;
        }
        let Some(slot) = comps.get_mut(i) else {
            break;
        };
        std::mem::swap(&mut carried, slot);
        i += 1;
    }
}

/// Moves the component at `from` right to `to` by inserting empty
/// components in front of it, one at a time, shifting the movable components
/// after it (and appending one if the last is pushed off the end).
fn move_right(comps: &mut Vec<String>, found: &[bool; 4], mut from: usize, to: usize) {
    loop {
        let mut carried = String::new();
        let mut i = from;
        while i < comps.len() {
            std::mem::swap(&mut carried, &mut comps[i]);
            if carried.is_empty() {
                break;
            }
            i += 1;
            while i < 4 && found[i] {
                i += 1;
            }
        }
        if !carried.is_empty() {
            comps.push(carried);
        }
        from += 1;
        while from < 4 && found[from] {
            from += 1;
        }
        if from >= to {
            break;
        }
    }
}

/// The DXIL architecture name LLVM derives from a `shadermodelX.Y` OS name:
/// SM 6.Y gives `dxilv1.Y` (Y up to 9), `shadermodel6.x` the latest, and
/// anything else `dxilv1.0`. `None` where LLVM 22 aborts: 6.Y with Y ≥ 10.
fn dxil_arch_for_shader_model(os_name: &str) -> Option<&'static str> {
    const BY_MINOR: [&str; 10] = [
        "dxilv1.0", "dxilv1.1", "dxilv1.2", "dxilv1.3", "dxilv1.4", "dxilv1.5", "dxilv1.6",
        "dxilv1.7", "dxilv1.8", "dxilv1.9",
    ];
    let rest = os_name.strip_prefix("shadermodel").unwrap_or(os_name);
    match parse_version(rest) {
        Some((6, Some(minor))) => usize::try_from(minor)
            .ok()
            .and_then(|m| BY_MINOR.get(m).copied()),
        None if os_name == "shadermodel6.x" => Some("dxilv1.9"),
        _ => Some("dxilv1.0"),
    }
}

/// `VersionTuple::tryParse` reduced to what DXIL needs: `major[.minor…]`,
/// all digits, at most four numbers, nothing left over. Numbers wrap at 32
/// bits as LLVM's `unsigned` does. An all-zero version counts as absent.
fn parse_version(text: &str) -> Option<(u32, Option<u32>)> {
    let mut numbers = Vec::new();
    for part in text.split('.') {
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) || numbers.len() == 4 {
            return None;
        }
        let value = part.bytes().fold(0u32, |v, b| {
            v.wrapping_mul(10).wrapping_add(u32::from(b - b'0'))
        });
        numbers.push(value);
    }
    let major = *numbers.first()?;
    let minor = numbers.get(1).copied();
    if numbers.iter().all(|&n| n == 0) {
        return None;
    }
    Some((major, minor))
}

// ---------------------------------------------------------------------------
// ARM architecture names
// ---------------------------------------------------------------------------

/// The ARM name rules (`ARM::getCanonicalArchName`, `ARM::parseArch` and
/// friends) that decide ARM, Thumb and AArch64 architectures and their
/// sub-architectures.
mod arm {
    use super::{Arch, SubArch};

    /// `ARM::ArchKind`, in the order of `ARMTargetParser.def`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(super) enum ArmArch {
        Invalid,
        V4,
        V4t,
        V5t,
        V5te,
        V5tej,
        V6,
        V6k,
        V6t2,
        V6kz,
        V6m,
        V7a,
        V7ve,
        V7r,
        V7m,
        V7em,
        V8a,
        V8_1a,
        V8_2a,
        V8_3a,
        V8_4a,
        V8_5a,
        V8_6a,
        V8_7a,
        V8_8a,
        V8_9a,
        V9a,
        V9_1a,
        V9_2a,
        V9_3a,
        V9_4a,
        V9_5a,
        V9_6a,
        V9_7a,
        V8r,
        V8mBase,
        V8mMain,
        V8_1mMain,
        Iwmmxt,
        Iwmmxt2,
        Xscale,
        V7s,
        V7k,
    }

    /// The architecture names of `ARMTargetParser.def`, in its order.
    const ARCH_NAMES: &[(&str, ArmArch)] = &[
        ("invalid", ArmArch::Invalid),
        ("armv4", ArmArch::V4),
        ("armv4t", ArmArch::V4t),
        ("armv5t", ArmArch::V5t),
        ("armv5te", ArmArch::V5te),
        ("armv5tej", ArmArch::V5tej),
        ("armv6", ArmArch::V6),
        ("armv6k", ArmArch::V6k),
        ("armv6t2", ArmArch::V6t2),
        ("armv6kz", ArmArch::V6kz),
        ("armv6-m", ArmArch::V6m),
        ("armv7-a", ArmArch::V7a),
        ("armv7ve", ArmArch::V7ve),
        ("armv7-r", ArmArch::V7r),
        ("armv7-m", ArmArch::V7m),
        ("armv7e-m", ArmArch::V7em),
        ("armv8-a", ArmArch::V8a),
        ("armv8.1-a", ArmArch::V8_1a),
        ("armv8.2-a", ArmArch::V8_2a),
        ("armv8.3-a", ArmArch::V8_3a),
        ("armv8.4-a", ArmArch::V8_4a),
        ("armv8.5-a", ArmArch::V8_5a),
        ("armv8.6-a", ArmArch::V8_6a),
        ("armv8.7-a", ArmArch::V8_7a),
        ("armv8.8-a", ArmArch::V8_8a),
        ("armv8.9-a", ArmArch::V8_9a),
        ("armv9-a", ArmArch::V9a),
        ("armv9.1-a", ArmArch::V9_1a),
        ("armv9.2-a", ArmArch::V9_2a),
        ("armv9.3-a", ArmArch::V9_3a),
        ("armv9.4-a", ArmArch::V9_4a),
        ("armv9.5-a", ArmArch::V9_5a),
        ("armv9.6-a", ArmArch::V9_6a),
        ("armv9.7-a", ArmArch::V9_7a),
        ("armv8-r", ArmArch::V8r),
        ("armv8-m.base", ArmArch::V8mBase),
        ("armv8-m.main", ArmArch::V8mMain),
        ("armv8.1-m.main", ArmArch::V8_1mMain),
        ("iwmmxt", ArmArch::Iwmmxt),
        ("iwmmxt2", ArmArch::Iwmmxt2),
        ("xscale", ArmArch::Xscale),
        ("armv7s", ArmArch::V7s),
        ("armv7k", ArmArch::V7k),
    ];

    /// `ARM::getCanonicalArchName`: strips the `arm`/`thumb`/`aarch64`
    /// family prefix and any `eb`, leaving the version part (`v7a`) or a
    /// marketing name (`xscale`). `None` is LLVM's empty "error" result.
    pub(super) fn canonical_arch_name(arch: &str) -> Option<&str> {
        let prefix_len = if arch.starts_with("arm64_32") {
            Some(8)
        } else if arch.starts_with("arm64e") {
            Some(6)
        } else if arch.starts_with("arm64") {
            Some(5)
        } else if arch.starts_with("aarch64_32") {
            Some(10)
        } else if arch.starts_with("arm") {
            Some(3)
        } else if arch.starts_with("thumb") {
            Some(5)
        } else if arch.starts_with("aarch64") {
            // AArch64 spells big-endian "_be", never "eb".
            if arch.contains("eb") {
                return None;
            }
            if arch.get(7..10) == Some("_be") {
                Some(10)
            } else {
                Some(7)
            }
        } else {
            None
        };

        let mut rest = arch;
        let mut offset = prefix_len;
        match offset {
            Some(o) if rest.get(o..).is_some_and(|r| r.starts_with("eb")) => offset = Some(o + 2),
            _ => {
                if let Some(r) = rest.strip_suffix("eb") {
                    rest = r;
                }
            }
        }
        if let Some(o) = offset {
            // Past the end when "eb" was chopped off the end of the prefix.
            rest = rest.get(o..).unwrap_or("");
        }
        if rest.is_empty() {
            return Some(arch);
        }
        if offset.is_some() {
            let b = rest.as_bytes();
            if b.len() >= 2 && (b[0] != b'v' || !b[1].is_ascii_digit()) {
                return None;
            }
            if rest.contains("eb") {
                return None;
            }
        }
        Some(rest)
    }

    /// `ARM::getArchSynonym`.
    fn synonym(arch: &str) -> &str {
        match arch {
            "v5" => "v5t",
            "v5e" => "v5te",
            "v6j" => "v6",
            "v6hl" => "v6k",
            "v6m" | "v6sm" | "v6s-m" => "v6-m",
            "v6z" | "v6zk" => "v6kz",
            "v7" | "v7a" | "v7hl" | "v7l" => "v7-a",
            "v7r" => "v7-r",
            "v7m" => "v7-m",
            "v7em" => "v7e-m",
            "v8" | "v8a" | "v8l" | "aarch64" | "arm64" => "v8-a",
            "v8.1a" => "v8.1-a",
            "v8.2a" => "v8.2-a",
            "v8.3a" => "v8.3-a",
            "v8.4a" => "v8.4-a",
            "v8.5a" => "v8.5-a",
            "v8.6a" => "v8.6-a",
            "v8.7a" => "v8.7-a",
            "v8.8a" => "v8.8-a",
            "v8.9a" => "v8.9-a",
            "v8r" => "v8-r",
            "v9" | "v9a" => "v9-a",
            "v9.1a" => "v9.1-a",
            "v9.2a" => "v9.2-a",
            "v9.3a" => "v9.3-a",
            "v9.4a" => "v9.4-a",
            "v9.5a" => "v9.5-a",
            "v9.6a" => "v9.6-a",
            "v9.7a" => "v9.7-a",
            "v8m.base" => "v8-m.base",
            "v8m.main" => "v8-m.main",
            "v8.1m.main" => "v8.1-m.main",
            other => other,
        }
    }

    /// `ARM::parseArch`: the first table name that *ends with* the
    /// canonical synonym (so a bare `v7a` matches `armv7-a`).
    pub(super) fn parse_arch(arch: &str) -> ArmArch {
        let canonical = canonical_arch_name(arch).unwrap_or("");
        let syn = synonym(canonical);
        ARCH_NAMES
            .iter()
            .find(|(name, _)| name.ends_with(syn))
            .map_or(ArmArch::Invalid, |&(_, a)| a)
    }

    fn version(a: ArmArch) -> u32 {
        use ArmArch::*;
        match a {
            V4 | V4t => 4,
            V5t | V5te | Iwmmxt | Iwmmxt2 | Xscale | V5tej => 5,
            V6 | V6k | V6t2 | V6kz | V6m => 6,
            V7a | V7ve | V7r | V7m | V7s | V7em | V7k => 7,
            V8a | V8_1a | V8_2a | V8_3a | V8_4a | V8_5a | V8_6a | V8_7a | V8_8a | V8_9a | V8r
            | V8mBase | V8mMain | V8_1mMain => 8,
            V9a | V9_1a | V9_2a | V9_3a | V9_4a | V9_5a | V9_6a | V9_7a => 9,
            Invalid => 0,
        }
    }

    fn is_m_profile(a: ArmArch) -> bool {
        matches!(
            a,
            ArmArch::V6m
                | ArmArch::V7m
                | ArmArch::V7em
                | ArmArch::V8mMain
                | ArmArch::V8mBase
                | ArmArch::V8_1mMain
        )
    }

    /// LLVM's `parseARMArch`: instruction set and byte order from the
    /// prefix, then validity of the version part.
    pub(super) fn parse_arm_arch(name: &str) -> Arch {
        #[derive(PartialEq)]
        enum Isa {
            Arm,
            Thumb,
            Aarch64,
            Invalid,
        }
        let isa = if name.starts_with("aarch64") || name.starts_with("arm64") {
            Isa::Aarch64
        } else if name.starts_with("thumb") {
            Isa::Thumb
        } else if name.starts_with("arm") {
            Isa::Arm
        } else {
            Isa::Invalid
        };
        // None: byte order not recognised.
        let big_endian = if name.starts_with("armeb")
            || name.starts_with("thumbeb")
            || name.starts_with("aarch64_be")
        {
            Some(true)
        } else if name.starts_with("arm") || name.starts_with("thumb") {
            Some(name.ends_with("eb"))
        } else if name.starts_with("aarch64") {
            Some(false)
        } else {
            None
        };
        let arch = match (big_endian, &isa) {
            (Some(false), Isa::Arm) => Arch::Arm,
            (Some(false), Isa::Thumb) => Arch::Thumb,
            (Some(false), Isa::Aarch64) => Arch::Aarch64,
            (Some(true), Isa::Arm) => Arch::Armeb,
            (Some(true), Isa::Thumb) => Arch::Thumbeb,
            (Some(true), Isa::Aarch64) => Arch::Aarch64Be,
            _ => Arch::Unknown,
        };

        let Some(canonical) = canonical_arch_name(name) else {
            return Arch::Unknown;
        };
        if canonical.is_empty() {
            return Arch::Unknown;
        }
        if isa == Isa::Thumb && (canonical.starts_with("v2") || canonical.starts_with("v3")) {
            return Arch::Unknown;
        }
        // v6-M only has Thumb.
        let kind = parse_arch(canonical);
        if is_m_profile(kind) && version(kind) == 6 {
            return if big_endian == Some(true) {
                Arch::Thumbeb
            } else {
                Arch::Thumb
            };
        }
        arch
    }

    /// The sub-architecture an ARM architecture kind maps to.
    pub(super) fn sub_arch_of(a: ArmArch) -> SubArch {
        use ArmArch as A;
        match a {
            A::V4t => SubArch::ArmV4t,
            A::V5t => SubArch::ArmV5,
            A::V5te | A::Iwmmxt | A::Iwmmxt2 | A::Xscale | A::V5tej => SubArch::ArmV5te,
            A::V6 => SubArch::ArmV6,
            A::V6k | A::V6kz => SubArch::ArmV6k,
            A::V6t2 => SubArch::ArmV6t2,
            A::V6m => SubArch::ArmV6m,
            A::V7a | A::V7r => SubArch::ArmV7,
            A::V7ve => SubArch::ArmV7ve,
            A::V7k => SubArch::ArmV7k,
            A::V7m => SubArch::ArmV7m,
            A::V7s => SubArch::ArmV7s,
            A::V7em => SubArch::ArmV7em,
            A::V8a => SubArch::ArmV8,
            A::V8_1a => SubArch::ArmV8_1a,
            A::V8_2a => SubArch::ArmV8_2a,
            A::V8_3a => SubArch::ArmV8_3a,
            A::V8_4a => SubArch::ArmV8_4a,
            A::V8_5a => SubArch::ArmV8_5a,
            A::V8_6a => SubArch::ArmV8_6a,
            A::V8_7a => SubArch::ArmV8_7a,
            A::V8_8a => SubArch::ArmV8_8a,
            A::V8_9a => SubArch::ArmV8_9a,
            A::V9a => SubArch::ArmV9,
            A::V9_1a => SubArch::ArmV9_1a,
            A::V9_2a => SubArch::ArmV9_2a,
            A::V9_3a => SubArch::ArmV9_3a,
            A::V9_4a => SubArch::ArmV9_4a,
            A::V9_5a => SubArch::ArmV9_5a,
            A::V9_6a => SubArch::ArmV9_6a,
            A::V9_7a => SubArch::ArmV9_7a,
            A::V8r => SubArch::ArmV8r,
            A::V8mBase => SubArch::ArmV8mBaseline,
            A::V8mMain => SubArch::ArmV8mMainline,
            A::V8_1mMain => SubArch::ArmV8_1mMainline,
            A::Invalid | A::V4 => SubArch::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (input, `normalize` Any, `normalize` FourIdent), all from libLLVM-22.
    const NORMALIZE: &[(&str, &str, &str)] = &[
        (
            "x86_64-linux-gnu",
            "x86_64-unknown-linux-gnu",
            "x86_64-unknown-linux-gnu",
        ),
        (
            "aarch64-linux-gnu-",
            "aarch64-unknown-linux-gnu",
            "aarch64-unknown-linux-gnu",
        ),
        (
            "x86_64--linux-gnu",
            "x86_64-unknown-linux-gnu",
            "x86_64-unknown-linux-gnu",
        ),
        (
            "aarch64-none-elf-",
            "aarch64-unknown-none-elf",
            "aarch64-unknown-none-elf",
        ),
        (
            "arm-none-eabi",
            "arm-unknown-none-eabi",
            "arm-unknown-none-eabi",
        ),
        (
            "linux-x86_64",
            "x86_64-unknown-linux",
            "x86_64-unknown-linux-unknown",
        ),
        (
            "pc-x86_64-linux",
            "x86_64-pc-linux",
            "x86_64-pc-linux-unknown",
        ),
        ("x86_64-pc", "x86_64-pc", "x86_64-pc-unknown-unknown"),
        (
            "gnu-linux-x86_64-pc",
            "x86_64-pc-linux-gnu",
            "x86_64-pc-linux-gnu",
        ),
        (
            "i686-pc-windows",
            "i686-pc-windows-msvc",
            "i686-pc-windows-msvc",
        ),
        (
            "i686-pc-windows-gnu-elf",
            "i686-pc-windows-gnu-elf",
            "i686-pc-windows-gnu",
        ),
        (
            "x86_64-w64-mingw32",
            "x86_64-w64-windows-gnu",
            "x86_64-w64-windows-gnu",
        ),
        (
            "x86_64-pc-cygwin",
            "x86_64-pc-windows-cygnus",
            "x86_64-pc-windows-cygnus",
        ),
        (
            "x86_64-pc-win32-macho",
            "x86_64-pc-windows-macho",
            "x86_64-pc-windows-macho",
        ),
        (
            "arm-linux-androideabi21",
            "arm-unknown-linux-android21",
            "arm-unknown-linux-android21",
        ),
        (
            "armv7-suse-linux-gnueabi",
            "armv7-suse-linux-gnueabihf",
            "armv7-suse-linux-gnueabihf",
        ),
        (
            "dxil-unknown-shadermodel6.3-pixel",
            "dxilv1.3-unknown-shadermodel6.3-pixel",
            "dxilv1.3-unknown-shadermodel6.3-pixel",
        ),
        (
            "dxil-shadermodel6.x-compute",
            "dxilv1.9-unknown-shadermodel6.x-compute",
            "dxilv1.9-unknown-shadermodel6.x-compute",
        ),
        (
            "amdgcn-amd-amdhsa-gfx906",
            "amdgcn-amd-amdhsa-gfx906",
            "amdgcn-amd-amdhsa-gfx906",
        ),
        (
            "spirv64-amd-amdhsa-",
            "spirv64-amd-amdhsa-unknown",
            "spirv64-amd-amdhsa-unknown",
        ),
        (
            "nvptx64-nvidia-cuda-foo",
            "nvptx64-nvidia-cuda-foo",
            "nvptx64-nvidia-cuda-foo",
        ),
        (
            "x86_64-apple-macosx10.15-",
            "x86_64-apple-macosx10.15-unknown",
            "x86_64-apple-macosx10.15-unknown",
        ),
        ("a-b-c-d-e-f", "a-b-c-d-e-f", "a-b-c-d"),
        (
            "--",
            "unknown-unknown-unknown",
            "unknown-unknown-unknown-unknown",
        ),
        ("-", "unknown-unknown", "unknown-unknown-unknown-unknown"),
        (
            "x86_64-unknown-linux-gnu-elf-extra",
            "x86_64-unknown-linux-gnu-elf-extra",
            "x86_64-unknown-linux-gnu",
        ),
        (
            "elf-x86_64",
            "x86_64-unknown-unknown-elf",
            "x86_64-unknown-unknown-elf",
        ),
        ("mips64", "mips64", "mips64-unknown-unknown-unknown"),
    ];

    #[test]
    fn normalizes_like_llvm() {
        for &(input, any, four) in NORMALIZE {
            assert_eq!(normalize(input, CanonicalForm::Any), any, "{input}");
            assert_eq!(normalize(input, CanonicalForm::FourIdent), four, "{input}");
        }
        assert_eq!(
            normalize("amdgcn-amd-amdhsa-gfx906", CanonicalForm::ThreeIdent),
            "amdgcn-amd-amdhsa"
        );
        assert_eq!(
            normalize("x86_64", CanonicalForm::FiveIdent),
            "x86_64-unknown-unknown-unknown-unknown"
        );
    }

    #[test]
    fn unsupported_shader_model() {
        let t = "dxil-unknown-shadermodel6.10-pixel";
        assert_eq!(
            try_normalize(t, CanonicalForm::Any),
            Err(UnsupportedShaderModel {
                normalized: t.to_owned()
            })
        );
        assert_eq!(normalize(t, CanonicalForm::Any), t);
    }

    #[test]
    fn parses_components() {
        let t = Triple::from_components("x86_64", "unknown", "linux5.0", "gnu-elf");
        assert_eq!(t.as_str(), "x86_64-unknown-linux5.0-gnu-elf");
        assert_eq!(
            (
                t.arch(),
                t.vendor(),
                t.os(),
                t.environment(),
                t.object_format()
            ),
            (
                Arch::X86_64,
                Vendor::Unknown,
                Os::Linux,
                Environment::Gnu,
                ObjectFormat::Elf
            )
        );
        assert_eq!(t.environment_name(), "gnu-elf");
        // Components are parsed in place: "linux" as a vendor is unknown.
        let t = Triple::from_components("aarch64", "linux", "gnu", "");
        assert_eq!((t.vendor(), t.os()), (Vendor::Unknown, Os::Unknown));
        assert_eq!(parse_arch("X86_64"), Arch::Unknown, "case-sensitive");
        assert_eq!(parse_arch("spirv64v1.2"), Arch::Spirv64);
        assert_eq!(parse_sub_arch("spirv64v1.2"), SubArch::SpirvV12);
        assert_eq!(parse_arch("spirv1.2"), Arch::Unknown);
        assert_eq!(parse_os("macosx10.15"), Os::MacOsx);
        assert_eq!(parse_os("wasip2"), Os::WasiP2);
        assert_eq!(parse_environment("gnueabihft64"), Environment::GnuEabiHfT64);
        assert_eq!(parse_object_format("msvc-xcoff"), ObjectFormat::Xcoff);
        assert_eq!(parse_vendor("sie"), Vendor::Scei);
        // ARM names and LLVM's quirks.
        assert_eq!(parse_arch("thumbv6m"), Arch::Thumb);
        assert_eq!(parse_arch("armv6m"), Arch::Thumb);
        assert_eq!(parse_arch("armebv7"), Arch::Armeb);
        assert_eq!(parse_arch("armv7eb"), Arch::Armeb);
        assert_eq!(parse_arch("thumbv3"), Arch::Unknown);
        assert_eq!(parse_arch("armx7"), Arch::Unknown);
        assert_eq!(parse_sub_arch("armv7em"), SubArch::ArmV7em);
        assert_eq!(parse_sub_arch("aarch64"), SubArch::ArmV8);
        assert_eq!(parse_sub_arch("ve"), SubArch::ArmV7ve);
        assert_eq!(parse_sub_arch("arm64e"), SubArch::Aarch64Arm64e);
        assert_eq!(parse_arch("bpf"), Arch::Bpfel);
        assert_eq!(parse_arch("kalimba4"), Arch::Kalimba);
        // A lone MIPS name implies an environment.
        assert_eq!(Triple::parse("mips64").environment(), Environment::GnuAbi64);
        assert_eq!(
            Triple::parse("mipsn32el").environment(),
            Environment::GnuAbiN32
        );
        assert_eq!(Triple::parse("mipsisa32r6").environment(), Environment::Gnu);
        assert_eq!(Triple::parse("").arch(), Arch::Unknown);
        // Default object formats.
        assert_eq!(
            Triple::parse("x86_64-pc-windows").object_format(),
            ObjectFormat::Coff
        );
        assert_eq!(
            Triple::parse("aarch64-apple-ios").object_format(),
            ObjectFormat::MachO
        );
        assert_eq!(
            Triple::parse("powerpc64-ibm-aix").object_format(),
            ObjectFormat::Xcoff
        );
        assert_eq!(
            Triple::parse("s390x-ibm-zos").object_format(),
            ObjectFormat::Goff
        );
        assert_eq!(
            Triple::parse("spirv64").object_format(),
            ObjectFormat::Spirv
        );
        assert_eq!(
            Triple::parse("dxil").object_format(),
            ObjectFormat::DxContainer
        );
        assert_eq!(
            Triple::parse("amdgcn-amd-amdhsa").object_format(),
            ObjectFormat::Elf
        );
    }

    fn compatible(a: &str, b: &str) -> bool {
        Triple::parse(a).is_compatible_with(&Triple::parse(b))
    }

    #[test]
    fn compatibility_like_llvm() {
        assert!(compatible(
            "armv7-unknown-linux-gnueabihf",
            "thumbv7-unknown-linux-gnueabihf"
        ));
        assert!(!compatible(
            "armv7-unknown-linux-gnueabihf",
            "thumbv7s-unknown-linux-gnueabihf"
        ));
        assert!(compatible("thumbv7-apple-ios-foo", "armv7-apple-ios-"));
        assert!(compatible(
            "x86_64-apple-macosx10.15-gnu",
            "x86_64-apple-macosx-"
        ));
        assert!(!compatible(
            "x86_64-unknown-macosx10.15-gnu",
            "x86_64-unknown-macosx-"
        ));
        assert!(compatible(
            "x86_64-pc-windows-gnu",
            "x86_64-w64-windows-gnu"
        ));
        assert!(!compatible(
            "x86_64-pc-windows-msvc",
            "x86_64-w64-windows-msvc"
        ));
        assert!(!compatible(
            "x86_64-pc-linux-gnu",
            "x86_64-unknown-linux-gnu"
        ));
        assert!(compatible(
            "x86_64-unknown-linux5.0-",
            "x86_64-unknown-linux-unknown"
        ));
        assert!(compatible(
            "x86_64-unknown-linux-gnu",
            "x86_64-unknown-linux-gnu-elf"
        ));
        assert!(!compatible(
            "x86_64-unknown-linux-gnu",
            "x86_64-unknown-linux-gnu-coff"
        ));
    }

    #[test]
    fn names_round_trip() {
        for &a in Arch::ALL.iter().skip(1) {
            assert_eq!(parse_arch(a.name()), a, "{a}");
        }
        for &v in Vendor::ALL.iter().skip(1) {
            assert_eq!(parse_vendor(v.name()), v);
        }
        for &o in Os::ALL.iter().skip(1) {
            assert_eq!(parse_os(o.name()), o);
        }
        for &e in Environment::ALL.iter().skip(1) {
            assert_eq!(parse_environment(e.name()), e);
        }
        for &f in ObjectFormat::ALL.iter().skip(1) {
            if f != ObjectFormat::DxContainer {
                assert_eq!(parse_object_format(f.name()), f);
            }
        }
    }
}
