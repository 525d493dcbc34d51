//! One read of a zip feeding several outputs, each with its RECORD true.

use std::collections::BTreeMap;
use std::io::{Read as _, Seek as _, Write as _};
use std::sync::Arc;

use super::*;
use crate::package::records::Wrong;
use crate::package::{Budget, Held};

/// A zip of `members` (name, bytes, deflated?).
fn zip_of(members: &[(&str, &[u8], bool)]) -> Vec<u8> {
    let mut z = ::zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for (name, bytes, deflate) in members {
        let method = match deflate {
            true => ::zip::CompressionMethod::Deflated,
            false => ::zip::CompressionMethod::Stored,
        };
        let opts = ::zip::write::SimpleFileOptions::default().compression_method(method);
        z.start_file(*name, opts).unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap().into_inner()
}

/// The RECORD row of `bytes` at `path`.
fn row(path: &str, bytes: &[u8]) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let sha = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(bytes));
    format!("{path},sha256={sha},{}\n", bytes.len())
}

/// Two outputs: the first drops `a.so`, the second replaces it with
/// `new`; `b.so` is dropped by name from the second.
struct Two {
    new: Vec<u8>,
    wrong: Vec<String>,
    decided: Vec<String>,
}

impl Decide<Zip> for Two {
    type Bytes = Vec<u8>;
    type Error = String;
    const REACH: usize = 4;

    fn outputs(&self) -> usize {
        2
    }

    fn by_name(&mut self, m: &MemberRead<'_>) -> Result<Option<Vec<Fate>>, String> {
        Ok((m.name == "pkg/b.so").then(|| vec![Fate::Kept, Fate::Removed]))
    }

    fn wants(&self, _: &MemberRead<'_>, head: &[u8]) -> bool {
        head.starts_with(b"\x7fELF")
    }

    fn inflate(
        &mut self,
        m: &MemberRead<'_>,
        head: &[u8],
        reader: &mut dyn std::io::Read,
    ) -> Result<Vec<u8>, String> {
        let mut v = head.to_vec();
        reader.read_to_end(&mut v).map_err(|e| e.to_string())?;
        assert_eq!(v.len() as u64, m.size);
        Ok(v)
    }

    fn decide(
        &mut self,
        m: &MemberRead<'_>,
        _: Held<'_, Vec<u8>>,
    ) -> Result<Option<Vec<Fate>>, String> {
        self.decided.push(m.name.to_string());
        let new = New::written(|w| w.write_all(&self.new)).map_err(|e| e.to_string())?;
        Ok(Some(vec![Fate::Removed, Fate::Replaced(Arc::new(new))]))
    }

    fn wrong(&mut self, w: &Wrong<'_>) -> Result<(), String> {
        self.wrong.push(w.why());
        Ok(())
    }
}

/// The members of the zip `data`, by name.
fn members(data: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut z = ::zip::ZipArchive::new(std::io::Cursor::new(data)).unwrap();
    (0..z.len())
        .map(|i| {
            let mut f = z.by_index(i).unwrap();
            let mut v = Vec::new();
            f.read_to_end(&mut v).unwrap();
            (f.name().unwrap().to_string(), v)
        })
        .collect()
}

#[test]
fn one_read_writes_two_outputs_with_their_records_true() {
    let mut a_so = b"\x7fELF".to_vec();
    a_so.resize(200, 1);
    let mut b_so = b"\x7fELF".to_vec();
    b_so.resize(300, 2);
    let py = vec![b'#'; 100];
    let record = format!(
        "{}{}{}pkg-1.dist-info/RECORD,,\n",
        row("pkg/a.so", &a_so),
        row("pkg/b.so", &b_so),
        row("pkg/x.py", &py)
    );
    let data = zip_of(&[
        ("pkg/a.so", &a_so, true),
        ("pkg/b.so", &b_so, false),
        ("pkg/x.py", &py, true),
        ("pkg-1.dist-info/RECORD", record.as_bytes(), true),
    ]);
    let mut archive = Archive::open(&data).unwrap();
    let mut budget = Budget {
        left: 1 << 20,
        why: "test",
    };
    let mut two = Two {
        new: b"\x7fELF short".to_vec(),
        wrong: Vec::new(),
        decided: Vec::new(),
    };
    let plan = rewrite(&mut archive, &mut budget, &mut two).unwrap();
    // b.so was decided by name, unread; x.py not wanted.
    assert_eq!(two.decided, ["pkg/a.so"]);
    assert!(two.wrong.is_empty(), "{:?}", two.wrong);
    assert!(!plan.unchanged(0) && !plan.unchanged(1));
    let mut outs = Vec::new();
    for k in 0..2 {
        let file = tempfile::tempfile().unwrap();
        plan.write(&mut archive, k, &file).unwrap();
        let mut bytes = Vec::new();
        (&file).seek(std::io::SeekFrom::Start(0)).unwrap();
        (&file).read_to_end(&mut bytes).unwrap();
        outs.push(members(&bytes));
    }
    let first = &outs[0];
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        ["pkg-1.dist-info/RECORD", "pkg/b.so", "pkg/x.py"]
    );
    let want = format!(
        "{}{}pkg-1.dist-info/RECORD,,\n",
        row("pkg/b.so", &b_so),
        row("pkg/x.py", &py)
    );
    assert_eq!(first["pkg-1.dist-info/RECORD"], want.as_bytes());
    let second = &outs[1];
    assert_eq!(second["pkg/a.so"], two.new);
    let want = format!(
        "{}{}pkg-1.dist-info/RECORD,,\n",
        row("pkg/a.so", &two.new),
        row("pkg/x.py", &py)
    );
    assert_eq!(second["pkg-1.dist-info/RECORD"], want.as_bytes());
    assert!(!second.contains_key("pkg/b.so"));
}

#[test]
fn a_row_its_member_does_not_match_goes_to_the_caller_never_rewritten() {
    let mut a_so = b"\x7fELF".to_vec();
    a_so.resize(200, 1);
    let record = row("pkg/a.so", b"something else");
    let data = zip_of(&[
        ("pkg/a.so", &a_so, true),
        ("pkg-1.dist-info/RECORD", record.as_bytes(), false),
    ]);
    let mut archive = Archive::open(&data).unwrap();
    let mut budget = Budget {
        left: 1 << 20,
        why: "test",
    };
    let mut two = Two {
        new: b"\x7fELF".to_vec(),
        wrong: Vec::new(),
        decided: Vec::new(),
    };
    rewrite(&mut archive, &mut budget, &mut two).unwrap();
    assert_eq!(two.wrong.len(), 1, "{:?}", two.wrong);
    assert!(two.wrong[0].contains("pkg/a.so"), "{:?}", two.wrong);
}

#[test]
fn the_budget_is_charged_before_a_member_is_inflated() {
    let mut a_so = b"\x7fELF".to_vec();
    a_so.resize(5000, 1);
    let data = zip_of(&[("pkg/a.so", &a_so, true)]);
    let mut archive = Archive::open(&data).unwrap();
    let mut budget = Budget {
        left: 4000,
        why: "test",
    };
    let mut two = Two {
        new: Vec::new(),
        wrong: Vec::new(),
        decided: Vec::new(),
    };
    let Err(Failed::Package(e)) = rewrite(&mut archive, &mut budget, &mut two) else {
        panic!("not refused");
    };
    assert_eq!(
        e.to_string(),
        "member 'pkg/a.so' inflates to 5000 bytes, more than the 4000 left of the \
         decompression budget (test)"
    );
    assert!(two.decided.is_empty());
}
