//! Unit tests of the symbol readers on small images made here.

use super::*;

#[test]
fn ptx_entries_functions_and_variables() {
    let ptx = b"//\n// Generated\n//\n\n.version 8.4\n.target sm_90a, texmode_independent\n\
        .address_size 64\n\n/* a block\n .entry not_me( */\n\
        .extern .func (.param .b32 r) vprintf(.param .b64 a);\n\
        .visible .global .align 4 .b32 counter;\n\
        .global .align 4 .b32 hidden_one;\n\
        .visible .const .align 8 .u64 table[4] = {1, 2, 3, 4};\n\
        .visible .func (.param .b32 func_retval0) _Z3addii(\n.param .b32 a,\n.param .b32 b\n)\n\
        {\n.reg .b32 %r<3>;\nret;\n}\n\
        .func internal_fn()\n{\nret;\n}\n\
        .visible .entry _Z4fillPfi(\n.param .u64 p0,\n.param .u32 p1\n)\n.maxntid 256, 1, 1\n\
        {\n.local .align 4 .b8 __local_depot0[16];\nret;\n}\n\
        .weak .entry _Z4zeroPf(\n.param .u64 p0\n)\n{\nret;\n}\n";
    let l = read(ptx).unwrap().unwrap();
    assert_eq!(l.format, Format::Ptx);
    assert_eq!(l.version.as_deref(), Some("8.4"));
    assert_eq!(l.target.as_deref(), Some("sm_90a"));
    let names: Vec<&str> = l.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["_Z4fillPfi", "_Z4zeroPf"]);
    let syms: Vec<(&str, SymbolKind)> = l
        .symbols
        .iter()
        .map(|s| (s.name.as_str(), s.kind))
        .collect();
    assert_eq!(
        syms,
        [
            ("_Z3addii", SymbolKind::Function),
            ("counter", SymbolKind::Variable),
            ("table", SymbolKind::Variable)
        ]
    );
}

#[test]
fn other_bytes_are_no_listing() {
    for b in [
        &b""[..],
        b"BC\xc0\xde",
        b"\x10\xff\x10\xad",
        b"version 8.0",
        b"// only a comment",
    ] {
        assert_eq!(read(b).unwrap(), None);
    }
}
