//! The OCI image layout that Docker 25 and later save beside
//! `manifest.json` (`oci-layout`, `index.json`, every blob under
//! `blobs/sha256/`, the same members `manifest.json` names): once the
//! images are pruned, each descriptor of `index.json` and of the
//! manifests and indexes it names that gives the old digest of a
//! replaced member is given the new digest and size, a manifest or index
//! so changed is itself replaced under its new digest, and so on up to
//! `index.json`, rewritten in place. Only those values change; every
//! other byte of each document stays. Both views then name the same new
//! blobs. A replaced blob whose old digest is not known (its name is no
//! digest this reader checked) would leave the index naming a blob that
//! is gone, so the archive is refused instead.

use super::{PathError, PathErrorKind, Run};
use crate::package::oci::chain;
use crate::package::oci::json::Step;
use crate::package::oci::{MAX_DEPTH, MAX_JSON, hex_sha, sha256_hex};

/// The document keys whose arrays hold descriptors that are followed.
const LISTS: [&str; 2] = ["manifests", "layers"];

impl Run<'_> {
    /// Rewrites the OCI layout inside the archive, when it holds one
    /// (`index.json`): see the module's documentation.
    pub(super) fn oci_layout(&mut self) -> Result<(), PathError> {
        let Some(at) = self.members.resolve("index.json") else {
            return Ok(());
        };
        if let Some(lost) = self.replaced.keys().find(|p| {
            p.strip_prefix("blobs/sha256/")
                .is_some_and(|h| !self.moved.contains_key(h))
        }) {
            let why = format!(
                "it holds an OCI image index (index.json, as Docker 25 and later write), and \
                 the member '{lost}' would change while its old digest is unknown (its name \
                 is not its SHA-256), so the index could not follow: copy the image to a \
                 layout (skopeo copy docker-archive:FILE oci:DIR:TAG) and prune the layout"
            );
            return Err(PathError::said(
                PathErrorKind::Refused,
                self.input,
                &crate::files::shown(self.input),
                why,
            ));
        }
        let Some(text) = self.members.data(&at) else {
            return Ok(());
        };
        if let Some(new) = self.oci_doc("index.json", text, 0)? {
            let f = self.scratch_with(&new)?;
            let r = super::Replacement {
                name: None,
                content: f,
                len: new.len() as u64,
            };
            self.replaced.insert(at, (r, hex_sha(&new)));
        }
        Ok(())
    }

    /// The document `text` (named `what`) with the descriptors of moved
    /// blobs given their new digests and sizes, the manifests and indexes
    /// it names rewritten first; `None` when nothing in it changed.
    fn oci_doc(
        &mut self,
        what: &str,
        text: &[u8],
        depth: u32,
    ) -> Result<Option<Vec<u8>>, PathError> {
        if depth > MAX_DEPTH {
            return Err(self.said(format!("{what}: indexes nest more than {MAX_DEPTH} deep")));
        }
        let doc: serde_json::Value = serde_json::from_slice(text)
            .map_err(|e| self.said(format!("{what}: not JSON: {e}")))?;
        let mut found: Vec<(Vec<Step<'_>>, String)> = Vec::new();
        for key in LISTS {
            let list = doc.get(key).and_then(|l| l.as_array());
            for (i, d) in list.into_iter().flatten().enumerate() {
                found.extend(digest_of(d).map(|h| (vec![Step::Key(key), Step::At(i)], h)));
            }
        }
        if let Some(h) = doc.get("config").and_then(digest_of) {
            found.push((vec![Step::Key("config")], h));
        }
        let mut edits = Vec::new();
        for (path, hex) in found {
            let follow = matches!(path.first(), Some(Step::Key("manifests")));
            if follow && !self.moved.contains_key(&hex) {
                self.oci_blob(what, &hex, depth)?;
            }
            let Some((new, len)) = self.moved.get(&hex).cloned() else {
                continue;
            };
            chain::descriptor(text, &path, &new, len, &mut edits)
                .map_err(|e| self.said(e.said(what)))?;
        }
        if edits.is_empty() {
            return Ok(None);
        }
        chain::spliced(text, edits)
            .map(Some)
            .map_err(|e| self.said(e.said(what)))
    }

    /// Rewrites the manifest or index blob `hex` (named in `what`), when
    /// the archive holds it as JSON and something it names moved: it is
    /// replaced under its new digest, noted in `moved`.
    fn oci_blob(&mut self, what: &str, hex: &str, depth: u32) -> Result<(), PathError> {
        let Some(at) = self.members.resolve(&format!("blobs/sha256/{hex}")) else {
            return Ok(());
        };
        let Some(text) = self.members.data(&at) else {
            return Ok(());
        };
        // Not a document this rewrite follows: left as it is.
        if text.len() as u64 > MAX_JSON
            || hex_sha(text) != hex
            || serde_json::from_slice::<serde_json::Value>(text).is_err()
        {
            return Ok(());
        }
        let inner = format!("{what}: sha256:{hex}");
        let Some(new) = self.oci_doc(&inner, text, depth + 1)? else {
            return Ok(());
        };
        let (new_hex, len) = (hex_sha(&new), new.len() as u64);
        let f = self.scratch_with(&new)?;
        self.moved.insert(hex.to_string(), (new_hex.clone(), len));
        self.replace(&at, hex, &new_hex, f, len)
    }
}

/// The hex of the sha256 digest of the descriptor `d`, when it has one.
fn digest_of(d: &serde_json::Value) -> Option<String> {
    sha256_hex(d.get("digest")?.as_str()?).map(str::to_string)
}
