use super::*;

fn b64(sha: &[u8; 32]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha)
}

fn sha(bytes: &[u8]) -> [u8; 32] {
    <Sha256 as sha2::Digest>::digest(bytes).into()
}

fn ledger(form: Form, kind: Kind) -> Ledger {
    Ledger::new(form, kind)
}

#[test]
fn pip_rows_are_read_whole_as_csv() {
    let text = b"x.py,sha256=q,1\n\"a,b.so\",sha256=z,3\r\npkg-1.0.dist-info/RECORD,,\n\n";
    let rows = pip_rows(text).unwrap();
    let got: Vec<_> = rows
        .iter()
        .map(|(p, r)| (p.as_str(), r.hash.as_str(), r.size.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("x.py", "sha256=q", "1"),
            ("a,b.so", "sha256=z", "3"),
            ("pkg-1.0.dist-info/RECORD", "", "")
        ]
    );
    // A row of fewer fields says nothing of what it leaves out.
    let rows = pip_rows(b"only.py\n").unwrap();
    assert_eq!(rows[0].1.hash, "");
}

#[test]
fn a_record_that_is_not_utf8_is_not_read_in_part() {
    // A row after the bad one must not be lost silently, nor the bad row
    // read lossily: the RECORD is damaged.
    let text = b"a.py,sha256=q,1\nb\xff.so,sha256=z,3\nc.so,sha256=y,2\n";
    let e = pip_rows(text).unwrap_err();
    assert!(e.contains("not UTF-8") && e.contains("byte 17"), "{e}");
}

#[test]
fn pip_rows_are_wrong_where_their_hash_or_size_differs() {
    let sha = [7u8; 32];
    let b64 = b64(&sha);
    let row = |hash: &str, size: &str| PipRow {
        hash: hash.into(),
        size: size.into(),
    };
    let ok = row(&format!("sha256={b64}"), "10");
    assert!(ok.wrong("R", "a.so", 10, &sha).is_none());
    assert!(row("", "").wrong("R", "a.so", 10, &sha).is_none());
    let w = row("sha256=AAAA", "10")
        .wrong("R", "a.so", 10, &sha)
        .unwrap();
    assert_eq!(
        w.why(),
        format!("R: the 'hash' of 'a.so' is 'sha256=AAAA', but the file's is 'sha256={b64}'")
    );
    let w = ok.wrong("R", "a.so", 11, &sha).unwrap();
    assert_eq!(
        w.why(),
        "R: the 'size' of 'a.so' is '10', but the file's is 11"
    );
    // Another algorithm is not checked, so not taken on trust.
    assert!(row("sha512=x", "10").wrong("R", "a.so", 10, &sha).is_some());
}

#[test]
fn md5sums_lines_are_read_by_their_paths() {
    let text = b"DCFB0EED7FA0BD0D836D9D306DABD091  usr/lib/a.so\r\n\
                 9386b37292d497856fe7a9405b1386c1 *./usr/lib/b.so\n\
                 not a line\n";
    let got = md5sums_rows(text);
    assert_eq!(got.len(), 2);
    assert_eq!(
        got[&b"usr/lib/a.so"[..]],
        "dcfb0eed7fa0bd0d836d9d306dabd091"
    );
    assert_eq!(
        got[&b"usr/lib/b.so"[..]],
        "9386b37292d497856fe7a9405b1386c1"
    );
}

#[test]
fn a_wheel_ledger_names_the_first_wrong_row() {
    let (a, b) = (b"right bytes".as_slice(), b"changed bytes".as_slice());
    let record = format!(
        "pkg/a.so,sha256={},{}\npkg/b.so,sha256={},{}\npkg/gone.so,sha256=x,1\n\
         pkg-1.0.dist-info/RECORD,,\n",
        b64(&sha(a)),
        a.len(),
        b64(&sha(b"other bytes")),
        b"other bytes".len()
    );
    let read = |b_bytes: &[u8]| {
        let mut l = ledger(Form::Wheel, Kind::Zip);
        l.member("pkg-1.0.dist-info/RECORD", record.as_bytes(), false);
        l.member("pkg/a.so", a, false);
        l.member("pkg/b.so", b_bytes, false);
        l.finish()
    };
    let e = read(b).unwrap_err().to_string();
    assert!(
        e.contains("pkg-1.0.dist-info/RECORD: the 'hash' of 'pkg/b.so'")
            && e.contains("row of the package's record of its files is wrong"),
        "{e}"
    );
    read(b"other bytes").unwrap();
    // A RECORD that cannot be read is damage, naming it.
    let mut l = ledger(Form::Wheel, Kind::Zip);
    l.member("p-1.dist-info/RECORD", b"a\xff,,\n", false);
    let e = l.finish().unwrap_err().to_string();
    assert!(e.contains("'p-1.dist-info/RECORD': it is not UTF-8"), "{e}");
}

#[test]
fn a_deb_ledger_checks_md5s_as_members_come() {
    let rows = md5sums_rows(format!("{}  usr/lib/k.so\n", hex(&md5::Md5::digest(b"k"))).as_bytes());
    let mut l = ledger(Form::Deb(rows.clone()), Kind::Deb);
    l.member("usr/lib/k.so", b"k", false);
    l.member("usr/lib/unlisted", b"x", false);
    l.finish().unwrap();
    let mut l = ledger(Form::Deb(rows), Kind::Deb);
    l.member("usr/lib/k.so", b"K", false);
    let e = l.finish().unwrap_err().to_string();
    assert!(e.contains("md5sums: the 'MD5' of 'usr/lib/k.so'"), "{e}");
}

#[test]
fn a_conda_ledger_checks_paths_json_once_it_is_a_conda_package() {
    let paths = format!(
        r#"{{"paths": [{{"_path": "lib/k.so", "sha256": "{}", "size_in_bytes": 1}},
        {{"_path": "lib/l.so", "size_in_bytes": 5}}], "paths_version": 1}}"#,
        hex(&sha(b"k"))
    );
    let read = |form, fed, k: &[u8], index: bool| {
        let mut l = ledger(form, Kind::Zip);
        l.member("info/paths.json", paths.as_bytes(), fed);
        if index {
            l.member("info/index.json", b"{}", fed);
        }
        l.member("lib/k.so", k, fed);
        l.member("lib/l.so", b"12345", fed);
        l.finish()
    };
    read(Form::CondaZip, true, b"k", true).unwrap();
    let e = read(Form::CondaZip, true, b"x", true)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("info/paths.json: the 'sha256' of 'lib/k.so'"),
        "{e}"
    );
    let e = read(Form::CondaTar, false, b"kk", true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("the 'sha256' of 'lib/k.so'"), "{e}");
    // A .conda's own members are not its files; a tar without
    // info/index.json is no conda package.
    read(Form::CondaZip, false, b"x", true).unwrap();
    read(Form::CondaTar, false, b"x", false).unwrap();
}
