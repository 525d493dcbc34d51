//! The `--image=key=value,…` argument of LLVM's packager, parsed the way
//! LLVM 22 parses it, because the order of the string entries it writes
//! follows from that parse.
//!
//! LLVM splits the argument on every `,`, then each item on its first `=`
//! (an item without `=` is a key with an empty value). A repeated key keeps
//! its first position and gets the values joined with `,`. The keys live in
//! a `DenseMap<StringRef, StringRef>`, and the packager writes the string
//! entries in that map's iteration order, leaving out `file` and `kind`.

use super::kinds::{ImageKind, OffloadKind};
use super::read::OffloadImage;
use super::write::ImageSpec;
use crate::llvm::dense_map::DenseMapOrder;

/// A parsed `--image` argument: keys with their (joined) values, in the
/// iteration order of LLVM's map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageArgs {
    pairs: Vec<(String, String)>,
}

impl ImageArgs {
    /// Parses `arg` as LLVM 22 does.
    pub fn parse(arg: &str) -> ImageArgs {
        let mut order = DenseMapOrder::new();
        let mut pairs: Vec<(String, String)> = Vec::new();
        for item in arg.split(',') {
            let (k, v) = item.split_once('=').unwrap_or((item, ""));
            if order.insert(k.as_bytes()) {
                pairs.push((k.to_string(), v.to_string()));
            } else if let Some(p) = pairs.iter_mut().find(|p| p.0 == k) {
                p.1.push(',');
                p.1.push_str(v);
            }
        }
        let pairs = order
            .iteration_order()
            .into_iter()
            .map(|i| pairs[i].clone())
            .collect();
        ImageArgs { pairs }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|p| p.0 == key).map(|p| p.1.as_str())
    }

    /// The files of the image: `file=` split on `,` (a repeated `file` key
    /// packs several files with the same other keys), or `None` without one.
    pub fn files(&self) -> Option<impl Iterator<Item = &str>> {
        self.get("file").map(|f| f.split(','))
    }

    /// What the packager writes for `file` (holding `data`) under these
    /// arguments: kind from `kind=`, image kind detected, the other strings.
    pub fn image_spec(&self, file: &str, data: &[u8]) -> ImageSpec {
        ImageSpec {
            image_kind: ImageKind::detect(file, data),
            offload_kind: self
                .get("kind")
                .map(OffloadKind::from_name)
                .unwrap_or_default(),
            flags: 0,
            strings: self
                .strings()
                .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
                .collect(),
            size: data.len() as u64,
        }
    }

    /// Whether `image` matches these arguments as an extraction filter, by
    /// LLVM's rules: `file` is ignored, `kind` compares the offload kind, any
    /// other key compares the image's string (a missing string is empty).
    pub fn matches(&self, image: &OffloadImage<'_>) -> bool {
        self.matches_ignoring(image, "file")
    }

    /// [`ImageArgs::matches`], with `ignored` left out of the comparison as
    /// `file` is (for keys the caller checks against something else).
    pub fn matches_ignoring(&self, image: &OffloadImage<'_>, ignored: &str) -> bool {
        self.pairs.iter().all(|(k, v)| match k.as_str() {
            "file" => true,
            k if k == ignored => true,
            "kind" => image.offload_kind == OffloadKind::from_name(v),
            _ => image.string(k) == v.as_bytes(),
        })
    }

    /// The string entries the packager writes: every pair but `file` and `kind`.
    pub fn strings(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs
            .iter()
            .filter(|p| p.0 != "file" && p.0 != "kind")
            .map(|p| (p.0.as_str(), p.1.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_join_and_empty_items_count() {
        let a = ImageArgs::parse("file=a,arch=x,arch=y,,noval,=,k=v=w");
        assert_eq!(a.get("arch"), Some("x,y"));
        assert_eq!(a.get("noval"), Some(""));
        assert_eq!(a.get(""), Some(","));
        assert_eq!(a.get("k"), Some("v=w"));
        assert_eq!(a.strings().count(), 4);
    }

    #[test]
    fn order_follows_the_map_not_the_argument() {
        // Spec §9.3: file,triple,arch,foo gives entries arch, triple, foo.
        let a = ImageArgs::parse("file=f,triple=t,arch=a,foo=b");
        let keys: Vec<&str> = a.strings().map(|p| p.0).collect();
        assert_eq!(keys, ["arch", "triple", "foo"]);
    }
}
