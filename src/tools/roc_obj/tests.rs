use super::ere::Regex;
use super::extract;
use super::perl::*;

#[test]
fn uri_encoding_is_uri_encodes() {
    // Reserved characters stay, `%` is encoded, and bytes above ASCII are
    // encoded twice (Latin-1 read, UTF-8 written), as the module does.
    assert_eq!(uri_encode(b"dir/a b#+?.so"), "dir/a%20b#+?.so");
    assert_eq!(uri_encode(b"50%"), "50%25");
    assert_eq!(uri_encode("é".as_bytes()), "%C3%83%C2%A9");
    assert_eq!(uri_decode("a%20b%zz%4"), b"a b%zz%4");
    assert_eq!(uri_decode("%C3%83%C2%A9"), [0xc3, 0x83, 0xc2, 0xa9]);
}

#[test]
fn numbers_as_perl_reads_and_prints_them() {
    assert_eq!(perl_num("  12abc"), 12.0);
    assert_eq!(perl_num("0x20"), 0.0);
    assert_eq!(perl_num("1e3"), 1000.0);
    assert_eq!(perl_num(""), 0.0);
    assert_eq!(perl_fmt(4096.0), "4096");
    assert_eq!(perl_fmt(-5.0), "-5");
    assert_eq!(perl_fmt(2.5), "2.5");
    assert_eq!(
        perl_fmt(18446744073709551616.0 * 2.0),
        "3.68934881474191e+19"
    );
}

#[test]
fn extended_regular_expressions() {
    let m = |re: &str, s: &str| Regex::new(re).unwrap().is_match(s.as_bytes());
    assert!(m("gfx9", "hipv4-amdgcn-amd-amdhsa--gfx90a"));
    assert!(!m("^gfx9", "hipv4-amdgcn-amd-amdhsa--gfx90a"));
    assert!(m("gfx(90a|1100)$", "hipv4-amdgcn-amd-amdhsa--gfx1100"));
    assert!(m("xnack-", "hip-amdgcn-amd-amdhsa--gfx90a:xnack-"));
    assert!(m("gfx[0-9]{2}a", "gfx90a gfx908"));
    assert!(!m("gfx[0-9]{4}$", "gfx90a"));
    assert!(m("a+b*c?$", "xaa"));
    assert!(m("[[:digit:]]+a", "gfx90a"));
    assert!(m("", "anything"));
    assert!(m("(a*)*b", "aaab"));
    assert!(Regex::new("(").is_err());
    assert!(Regex::new("*a").is_err());
    assert!(Regex::new("a{3,1}").is_err());
}

#[test]
fn canonpath_as_file_spec() {
    let c = extract::test_canonpath;
    assert_eq!(c("./out//a/./b/"), "out/a/b");
    assert_eq!(c("/../x"), "/x");
    assert_eq!(c("./"), ".");
    assert_eq!(c("/"), "/");
}
