//! The ARM name rules (`ARM::getCanonicalArchName`, `ARM::parseArch` and
//! friends) that decide ARM, Thumb and AArch64 architectures and their
//! sub-architectures, with `ARMTargetParser.def`'s architecture table.

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
