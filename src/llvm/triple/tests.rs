//! Unit tests of the triple parser and normalization against libLLVM-22's
//! results.

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
