use std::io::{Read as _, Seek as _};
use std::sync::Arc;

use sha2::{Digest as _, Sha256};

use super::*;
use crate::package::New;

/// A layer of the regular files `files` and the hard links `links`
/// (path, the file it names), in that order.
fn layer(files: &[(&str, &[u8])], links: &[(&str, &str)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (p, data) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        b.append_data(&mut h, p, *data).unwrap();
    }
    for (p, to) in links {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Link);
        h.set_size(0);
        b.append_link(&mut h, p, to).unwrap();
    }
    b.into_inner().unwrap()
}

/// Three outputs: `lib.so` replaced in the first, left out of the second,
/// kept in the third; `skip.so` left out of the first by name.
struct Three {
    asked: Vec<String>,
}

impl Decide<Layer> for Three {
    type Bytes = Vec<u8>;
    type Error = String;
    const REACH: usize = 4;

    fn outputs(&self) -> usize {
        3
    }

    fn by_name(&mut self, m: &Member<'_>) -> Result<Option<Vec<Fate>>, String> {
        self.asked.push(m.path.to_string());
        Ok((m.path == "skip.so").then(|| vec![Fate::Removed]))
    }

    fn wants(&self, m: &Member<'_>, head: &[u8]) -> bool {
        m.path == "lib.so" && head == b"\x7fELF"
    }

    fn inflate(
        &mut self,
        _: &Member<'_>,
        head: &[u8],
        reader: &mut dyn Read,
    ) -> Result<Vec<u8>, String> {
        let mut v = head.to_vec();
        reader.read_to_end(&mut v).map_err(|e| e.to_string())?;
        Ok(v)
    }

    fn decide(
        &mut self,
        _: &Member<'_>,
        b: Held<'_, Vec<u8>>,
    ) -> Result<Option<Vec<Fate>>, String> {
        assert_eq!(b.bytes(), b"\x7fELF and the rest");
        let new = Arc::new(New::bytes(b"pruned".to_vec()));
        Ok(Some(vec![Fate::Replaced(new), Fate::Removed]))
    }
}

/// Each entry of the tar `t`: path, type, data (a link's target).
fn entries_of(t: &[u8]) -> Vec<(String, tar::EntryType, Vec<u8>)> {
    let mut out = Vec::new();
    for e in tar::Archive::new(t).entries().unwrap() {
        let mut e = e.unwrap();
        let path = e.path().unwrap().to_string_lossy().into_owned();
        let kind = e.header().entry_type();
        let mut data = Vec::new();
        match e.link_name().unwrap() {
            Some(to) => data = to.to_string_lossy().into_owned().into_bytes(),
            None => {
                e.read_to_end(&mut data).unwrap();
            }
        }
        out.push((path, kind, data));
    }
    out
}

#[test]
fn one_read_feeds_each_output_its_own_layer() {
    let input = layer(
        &[
            ("lib.so", b"\x7fELF and the rest"),
            ("skip.so", b"gone by name"),
            ("keep.txt", b"kept"),
        ],
        &[("again.so", "lib.so")],
    );
    let mut d = Three { asked: Vec::new() };
    let scratch = (0..3)
        .map(|_| Some(tempfile::tempfile().unwrap()))
        .collect();
    let mut limit = u64::MAX;
    let outs = walk(&mut &input[..], &mut limit, &mut d, scratch).unwrap();
    assert_eq!(u64::MAX - limit, input.len() as u64);
    assert_eq!(d.asked, ["lib.so", "skip.so", "keep.txt", "again.so"]);
    let tars: Vec<Vec<u8>> = outs
        .iter()
        .map(|o| {
            let mut f = o.tar.as_ref().unwrap();
            f.rewind().unwrap();
            let mut v = Vec::new();
            f.read_to_end(&mut v).unwrap();
            v
        })
        .collect();
    for (o, t) in outs.iter().zip(&tars) {
        assert_eq!(
            o.diff,
            format!("sha256:{}", crate::package::oci::hex(&Sha256::digest(t)))
        );
    }
    // The first: replaced, its link kept; the name left out.
    let first = entries_of(&tars[0]);
    let names: Vec<&str> = first.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(names, ["lib.so", "keep.txt", "again.so"]);
    assert_eq!(first[0].2, b"pruned");
    assert!(outs[0].changed);
    assert_eq!(outs[0].gone, BTreeSet::from(["skip.so".to_string()]));
    // The second: the file left out takes its hard link with it.
    let second = entries_of(&tars[1]);
    let names: Vec<&str> = second.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(names, ["skip.so", "keep.txt"]);
    assert_eq!(
        outs[1].gone,
        BTreeSet::from(["lib.so".to_string(), "again.so".to_string()])
    );
    // The third: nothing changed, the same bytes.
    assert!(!outs[2].changed);
    assert_eq!(tars[2], input);
}

#[test]
fn an_entry_out_of_the_root_is_refused() {
    // The tar crate writes no `..`: the name goes into the header as it is.
    let mut h = tar::Header::new_gnu();
    h.as_old_mut().name[..18].copy_from_slice(b"a/../../etc/passwd");
    h.set_size(1);
    h.set_cksum();
    let mut b = tar::Builder::new(Vec::new());
    b.append(&h, &b"x"[..]).unwrap();
    let input = b.into_inner().unwrap();
    let mut d = Three { asked: Vec::new() };
    let mut limit = u64::MAX;
    let Err(e) = walk(&mut &input[..], &mut limit, &mut d, vec![None, None, None]) else {
        panic!("a path out of the root was taken");
    };
    assert!(matches!(e, package::Failed::Package(Error::Entry(why)) if why.contains("passwd")));
}
