//! The image-kind and offload-kind fields, as open newtypes: values that LLVM
//! 22 does not know survive a read/write round trip.

use std::fmt;

/// What an image contains (`ImageKind` in LLVM's `OffloadBinary.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ImageKind(pub u16);

/// The magic of LLVM bitcode (`BC C0 DE`).
pub const BITCODE_MAGIC: [u8; 4] = *b"BC\xC0\xDE";
/// The magic of LLVM's bitcode wrapper header (0x0B17C0DE little-endian).
pub const BITCODE_WRAPPER_MAGIC: [u8; 4] = [0xDE, 0xC0, 0x17, 0x0B];

/// Whether `data` starts as LLVM bitcode does (bare or wrapped).
pub fn is_bitcode(data: &[u8]) -> bool {
    data.starts_with(&BITCODE_MAGIC) || data.starts_with(&BITCODE_WRAPPER_MAGIC)
}

/// The magic of a SPIR-V module (0x07230203 little-endian).
pub const SPIRV_MAGIC: [u8; 4] = [0x03, 0x02, 0x23, 0x07];

/// Whether `data` starts as a little-endian SPIR-V module does.
pub fn is_spirv(data: &[u8]) -> bool {
    data.starts_with(&SPIRV_MAGIC)
}

#[allow(non_upper_case_globals)]
impl ImageKind {
    /// No kind.
    pub const IMG_None: ImageKind = ImageKind(0);
    /// A native object (ELF) file.
    pub const IMG_Object: ImageKind = ImageKind(1);
    /// LLVM bitcode.
    pub const IMG_Bitcode: ImageKind = ImageKind(2);
    /// A CUDA cubin.
    pub const IMG_Cubin: ImageKind = ImageKind(3);
    /// A CUDA fat binary.
    pub const IMG_Fatbinary: ImageKind = ImageKind(4);
    /// NVIDIA PTX assembly.
    pub const IMG_PTX: ImageKind = ImageKind(5);
    /// SPIR-V.
    pub const IMG_SPIRV: ImageKind = ImageKind(6);

    /// The kind LLVM 22's packager gives a file with this extension (without
    /// the dot). `spv` gives `IMG_None` in 22.
    pub fn from_extension(ext: &str) -> ImageKind {
        match ext {
            "o" => Self::IMG_Object,
            "bc" => Self::IMG_Bitcode,
            "cubin" => Self::IMG_Cubin,
            "fatbin" => Self::IMG_Fatbinary,
            "s" => Self::IMG_PTX,
            _ => Self::IMG_None,
        }
    }

    /// The kind LLVM 22's packager gives the file `path` holding `data`:
    /// bitcode if the data starts with a bitcode magic (clang names LTO
    /// bitcode `.o`), else by extension.
    pub fn detect(path: &str, data: &[u8]) -> ImageKind {
        if is_bitcode(data) {
            Self::IMG_Bitcode
        } else {
            Self::from_extension(crate::llvm::path::extension(path))
        }
    }

    /// The file extension LLVM 22 uses when extracting (`getImageKindName`),
    /// empty for kinds it does not name.
    pub fn extension(self) -> &'static str {
        match self {
            Self::IMG_Object => "o",
            Self::IMG_Bitcode => "bc",
            Self::IMG_Cubin => "cubin",
            Self::IMG_Fatbinary => "fatbin",
            Self::IMG_PTX => "s",
            _ => "",
        }
    }

    /// The name offload-kit's own reports give the kind (the tables and
    /// JSON of `list`, `inspect`, `size` and `check`): `none`, `object`,
    /// `bitcode`, `cubin`, `fatbinary`, `ptx`, `spirv`, or `unknown-N`.
    /// [`name`](Self::name) is LLVM's wording, for the drop-ins.
    pub fn report_name(self) -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed(match self {
            Self::IMG_None => "none",
            Self::IMG_Object => "object",
            Self::IMG_Bitcode => "bitcode",
            Self::IMG_Cubin => "cubin",
            Self::IMG_Fatbinary => "fatbinary",
            Self::IMG_PTX => "ptx",
            Self::IMG_SPIRV => "spirv",
            Self(n) => return std::borrow::Cow::Owned(format!("unknown-{n}")),
        })
    }

    /// A descriptive name (as `llvm-objdump --offloading` prints it).
    pub fn name(self) -> &'static str {
        match self {
            Self::IMG_Object => "elf",
            Self::IMG_Bitcode => "llvm ir",
            Self::IMG_Cubin => "cubin",
            Self::IMG_Fatbinary => "fatbinary",
            Self::IMG_PTX => "ptx",
            Self::IMG_SPIRV => "spir-v",
            _ => "<none>",
        }
    }
}

impl fmt::Display for ImageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            "<none>" if self.0 != 0 => write!(f, "unknown({})", self.0),
            n => f.write_str(n),
        }
    }
}

/// Which offloading model produced an image (`OffloadKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct OffloadKind(pub u16);

#[allow(non_upper_case_globals)]
impl OffloadKind {
    /// No kind.
    pub const OFK_None: OffloadKind = OffloadKind(0);
    /// OpenMP offloading.
    pub const OFK_OpenMP: OffloadKind = OffloadKind(1);
    /// CUDA.
    pub const OFK_Cuda: OffloadKind = OffloadKind(2);
    /// HIP.
    pub const OFK_HIP: OffloadKind = OffloadKind(4);
    /// SYCL.
    pub const OFK_SYCL: OffloadKind = OffloadKind(8);

    /// The kind for a `kind=` value (exact, case-sensitive); anything else is
    /// `OFK_None`, as in LLVM.
    pub fn from_name(name: &str) -> OffloadKind {
        match name {
            "openmp" => Self::OFK_OpenMP,
            "cuda" => Self::OFK_Cuda,
            "hip" => Self::OFK_HIP,
            "sycl" => Self::OFK_SYCL,
            _ => Self::OFK_None,
        }
    }

    /// The `kind=` name, or `none` for kinds without one.
    pub fn name(self) -> &'static str {
        match self {
            Self::OFK_OpenMP => "openmp",
            Self::OFK_Cuda => "cuda",
            Self::OFK_HIP => "hip",
            Self::OFK_SYCL => "sycl",
            _ => "none",
        }
    }
}

impl fmt::Display for OffloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            "none" if self.0 != 0 => write!(f, "unknown({})", self.0),
            n => f.write_str(n),
        }
    }
}
