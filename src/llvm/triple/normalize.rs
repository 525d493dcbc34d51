//! `Triple::normalize`: the canonical component order, LLVM's special
//! cases and the canonical forms.

use std::fmt;

use super::{
    Arch, Environment, ObjectFormat, Os, Vendor, parse_arch, parse_environment,
    parse_object_format, parse_os, parse_vendor,
};

/// How many components [`Triple::normalize`](super::Triple::normalize)
/// returns (`Triple::CanonicalForm`).
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
/// with Y ≥ 10. [`Triple::try_normalize`](super::Triple::try_normalize)
/// reports that case with this error; [`Triple::normalize`](super::Triple::normalize)
/// instead returns the text with `dxil` left unversioned.
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
    let mut comps: Vec<String> = text.split('-').map(str::to_owned).collect();
    let mut parses = Parses::of(&comps);
    let found = place_components(&mut comps, &mut parses);

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

    rename_environment(&mut comps, &parses);
    windows_components(&mut comps, &parses);
    let unsupported = version_dxil(&mut comps, parses.os);

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

/// The current parse of each position, as LLVM keeps them: each attempt of
/// [`place_components`] overwrites them, and the special cases after it
/// read the last value.
struct Parses {
    /// The architecture (position 0).
    arch: Arch,
    /// The vendor (position 1).
    vendor: Vendor,
    /// The OS (position 2).
    os: Os,
    /// Whether the OS text starts with `cygwin`.
    is_cygwin: bool,
    /// Whether the OS text starts with `mingw`.
    is_mingw: bool,
    /// The environment (position 3).
    environment: Environment,
    /// The object format: of the fifth component at first, then of the
    /// last component tried as an environment.
    object_format: ObjectFormat,
}

impl Parses {
    /// Each component parsed in the position it stands in.
    fn of(comps: &[String]) -> Parses {
        let mut p = Parses {
            arch: comps.first().map_or(Arch::Unknown, |c| parse_arch(c)),
            vendor: comps.get(1).map_or(Vendor::Unknown, |c| parse_vendor(c)),
            os: Os::Unknown,
            is_cygwin: false,
            is_mingw: false,
            environment: comps
                .get(3)
                .map_or(Environment::Unknown, |c| parse_environment(c)),
            object_format: comps
                .get(4)
                .map_or(ObjectFormat::Unknown, |c| parse_object_format(c)),
        };
        if let Some(c) = comps.get(2) {
            p.os = parse_os(c);
            p.is_cygwin = c.starts_with("cygwin");
            p.is_mingw = c.starts_with("mingw");
        }
        p
    }

    /// Which of the four positions parse where they stand.
    fn found(&self) -> [bool; 4] {
        [
            self.arch != Arch::Unknown,
            self.vendor != Vendor::Unknown,
            self.os != Os::Unknown,
            self.environment != Environment::Unknown,
        ]
    }

    /// Parses `comp` as the component of position `pos`, keeping the
    /// result; whether it is valid there (an environment position also
    /// takes an object format).
    fn try_position(&mut self, pos: usize, comp: &str) -> bool {
        match pos {
            0 => {
                self.arch = parse_arch(comp);
                self.arch != Arch::Unknown
            }
            1 => {
                self.vendor = parse_vendor(comp);
                self.vendor != Vendor::Unknown
            }
            2 => {
                self.os = parse_os(comp);
                self.is_cygwin = comp.starts_with("cygwin");
                self.is_mingw = comp.starts_with("mingw");
                self.os != Os::Unknown || self.is_cygwin || self.is_mingw
            }
            _ => {
                self.environment = parse_environment(comp);
                if self.environment != Environment::Unknown {
                    true
                } else {
                    self.object_format = parse_object_format(comp);
                    self.object_format != ObjectFormat::Unknown
                }
            }
        }
    }
}

/// Moves the components to their positions, one position at a time
/// (architecture, vendor, OS, environment): a position whose component does
/// not parse takes the first movable component that does. Returns which
/// positions hold a component that parses.
fn place_components(comps: &mut Vec<String>, parses: &mut Parses) -> [bool; 4] {
    let mut found = parses.found();
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
            if !parses.try_position(pos, &comp) {
                idx += 1;
                continue;
            }
            if pos < idx {
                move_left(comps, &found, idx, pos);
            } else if pos > idx {
                move_right(comps, &found, idx, pos);
            }
            found[pos] = true;
            break;
        }
    }
    found
}

/// Environment spellings LLVM rewrites: `androideabi` becomes `android`
/// (keeping a version), and SUSE's `gnueabi` means `gnueabihf`.
fn rename_environment(comps: &mut [String], parses: &Parses) {
    if parses.environment == Environment::Android
        && let Some(version) = comps.get(3).and_then(|c| c.strip_prefix("androideabi"))
    {
        comps[3] = format!("android{version}");
    }

    if parses.vendor == Vendor::Suse && parses.environment == Environment::GnuEabi {
        set_component(comps, 3, "gnueabihf");
    }
}

/// Windows triples: the OS becomes `windows` with an environment (`msvc`
/// or the object format for Windows, `gnu` for MinGW, `cygnus` for
/// Cygwin), and an object format other than COFF is a fifth component.
fn windows_components(comps: &mut Vec<String>, parses: &Parses) {
    let Parses {
        os,
        is_cygwin,
        is_mingw,
        environment,
        object_format,
        ..
    } = *parses;
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
}

/// A `dxil` triple keeps at most four components and takes its version
/// from a shader-model OS. True where LLVM 22 aborts on that shader model.
fn version_dxil(comps: &mut Vec<String>, os: Os) -> bool {
    let mut unsupported = false;
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
    unsupported
}

/// Sets component `i` to `value` where there is one.
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
