//! The bitstream codes this reader knows (`llvm/Bitcode/LLVMBitCodes.h`):
//! block IDs, record codes, and which metadata records define an ID.

/// The named metadata that lists embedded objects.
pub(super) const EMBEDDED_OBJECTS: &[u8] = b"llvm.embedded.objects";

// Block IDs (`bitc::BlockIDs`).
pub(super) const MODULE_BLOCK: u64 = 8;
pub(super) const CONSTANTS_BLOCK: u64 = 11;
pub(super) const METADATA_BLOCK: u64 = 15;
pub(super) const TYPE_BLOCK: u64 = 17;
pub(super) const STRTAB_BLOCK: u64 = 23;

// `bitc::ModuleCodes`.
pub(super) const MODULE_CODE_VERSION: u64 = 1;
pub(super) const MODULE_CODE_GLOBALVAR: u64 = 7;
pub(super) const MODULE_CODE_FUNCTION: u64 = 8;
pub(super) const MODULE_CODE_ALIAS_OLD: u64 = 9;
pub(super) const MODULE_CODE_ALIAS: u64 = 14;
pub(super) const MODULE_CODE_IFUNC: u64 = 18;

// `bitc::ConstantsCodes`.
pub(super) const CST_CODE_SETTYPE: u64 = 1;
pub(super) const CST_CODE_AGGREGATE: u64 = 7;
pub(super) const CST_CODE_STRING: u64 = 8;
pub(super) const CST_CODE_CSTRING: u64 = 9;
pub(super) const CST_CODE_DATA: u64 = 22;

// `bitc::TypeCodes` (those that are not a type, and those `DATA` needs).
pub(super) const TYPE_CODE_NUMENTRY: u64 = 1;
pub(super) const TYPE_CODE_FLOAT: u64 = 3;
pub(super) const TYPE_CODE_DOUBLE: u64 = 4;
pub(super) const TYPE_CODE_INTEGER: u64 = 7;
pub(super) const TYPE_CODE_HALF: u64 = 10;
pub(super) const TYPE_CODE_ARRAY: u64 = 11;
pub(super) const TYPE_CODE_VECTOR: u64 = 12;
pub(super) const TYPE_CODE_STRUCT_NAME: u64 = 19;
pub(super) const TYPE_CODE_BFLOAT: u64 = 23;

// `bitc::MetadataCodes`.
pub(super) const METADATA_STRING_OLD: u64 = 1;
pub(super) const METADATA_VALUE: u64 = 2;
pub(super) const METADATA_NODE: u64 = 3;
pub(super) const METADATA_NAME: u64 = 4;
pub(super) const METADATA_DISTINCT_NODE: u64 = 5;
pub(super) const METADATA_NAMED_NODE: u64 = 10;
pub(super) const METADATA_STRINGS: u64 = 35;

/// Whether a metadata record code defines the next metadata ID, as LLVM
/// 22's `MetadataLoader` numbers them; `None` for codes it does not know.
/// (`KIND`, `NAME`, `NAMED_NODE`, `ATTACHMENT`, `GLOBAL_DECL_ATTACHMENT`,
/// `INDEX_OFFSET` and `INDEX` define none; `STRINGS` defines several and
/// is handled apart.)
pub(super) fn defines_metadata(code: u64) -> Option<bool> {
    match code {
        // STRING_OLD, VALUE, NODE, DISTINCT_NODE, LOCATION, OLD_NODE,
        // OLD_FN_NODE, the debug-info nodes from GENERIC_DEBUG to
        // MACRO_FILE, GLOBAL_VAR_EXPR, LABEL, STRING_TYPE, COMMON_BLOCK,
        // GENERIC_SUBRANGE, ARG_LIST, ASSIGN_ID, SUBRANGE_TYPE,
        // FIXED_POINT_TYPE.
        1..=3 | 5 | 7..=9 | 12..=34 | 37 | 40 | 41 | 44..=49 => Some(true),
        4 | 6 | 10 | 11 | 36 | 38 | 39 => Some(false),
        _ => None,
    }
}
