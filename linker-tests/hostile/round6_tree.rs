//! The sixth round of hostile inputs (issue #71), trees: `prune --in-place
//! DIR` touches nothing outside `DIR`. An OCI image layout found in the
//! tree whose blob store (`blobs/sha256`) is a symbolic link to another
//! layout's, or whose `index.json` is a link to a file outside, is refused
//! by its name (exit 1) and the files the links lead to keep their bytes
//! and their inodes; a symbolic link to a directory outside is not
//! followed. (The races, a link swapped in after the walk, are unit tests
//! beside the code: `src/prune/tests/tree_race.rs`.)

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;

use super::*;
use crate::images::gzip_tar;
use crate::prune::images::layout;
use crate::prune::tree::bundle;
use crate::util::{run, same};

pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(a_layout_whose_blob_store_links_to_another_is_refused, &[]),
        trial!(a_layout_whose_index_links_outside_is_refused, &[]),
        trial!(a_link_to_a_directory_outside_is_not_followed, &[]),
        trial!(a_layouts_index_rewritten_in_place_is_never_setuid, &[]),
        trial!(in_place_keeps_the_access_time_from_before_the_run, &["touch", "stat"]),
    ]
}

fn a_layout_whose_blob_store_links_to_another_is_refused() -> Result<(), Failed> {
    linked_layout(Link::BlobStore)
}

fn a_layout_whose_index_links_outside_is_refused() -> Result<(), Failed> {
    linked_layout(Link::Index)
}

/// What `stat` says of `paths`' access times (seconds), one a line.
fn atimes(d: &Path, paths: &[&str]) -> Result<String, Failed> {
    let args = [&["-c", "%X"][..], paths].concat();
    let r = run(Path::new("/usr/bin/stat"), &args, d).ok()?;
    Ok(String::from_utf8_lossy(&r.stdout).into_owned())
}

/// A bundle in a tree and one named, given an access time of 2001 by
/// `touch -a -d` (which a read, under `relatime` or `strictatime`, would
/// move to now): pruned in place, each is smaller and `stat` still says
/// 2001, not the time of prune's own reads.
fn in_place_keeps_the_access_time_from_before_the_run() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::create_dir(d.join("tree"))?;
    let names = ["tree/k.hipfb", "n.hipfb"];
    for n in names {
        bundle(d, n, &[("gfx90a", 1, 4096), ("gfx942", 2, 4096)])?;
    }
    let touch = ["-a", "-d", "@1000000000"];
    run(Path::new("/usr/bin/touch"), &[&touch[..], &names[..]].concat(), d).ok()?;
    let old = atimes(d, &names)?;
    same("the access times set", old.as_str(), "1000000000\n1000000000\n")?;
    let sizes = |d: &Path| names.map(|n| std::fs::metadata(d.join(n)).map(|m| m.len()).unwrap_or(0));
    let before = sizes(d);
    let args = ["prune", "--keep", "gfx90a", "--in-place", "tree", "n.hipfb"];
    run_within(LIMIT, &ours(), &args, d)?.ok()?;
    let after = sizes(d);
    if after.iter().zip(&before).any(|(a, b)| a >= b) {
        return Err(format!("not pruned: {before:?} -> {after:?}").into());
    }
    same("the access times after the run", atimes(d, &names)?, old)
}

/// A layout whose `index.json` is setuid and setgid, pruned in place: the
/// new `index.json` (a new file, the runner's) has the old read, write
/// and execute bits alone.
fn a_layouts_index_rewritten_in_place_is_never_setuid() -> Result<(), Failed> {
    use std::os::unix::fs::PermissionsExt as _;
    let t = tempdir();
    let d = t.path();
    bundle(d, "k.hipfb", &[("gfx90a", 1, 4096), ("gfx942", 2, 4096)])?;
    let k = std::fs::read(d.join("k.hipfb"))?;
    layout(&d.join("L"), &[gzip_tar(&[("usr/lib/k.hipfb", &k)])?])?;
    let index = d.join("L/index.json");
    std::fs::set_permissions(&index, std::fs::Permissions::from_mode(0o6755))?;
    let before = std::fs::read(&index)?;
    run(&ours(), &["prune", "--keep", "gfx90a", "--in-place", "L"], d).ok()?;
    if std::fs::read(&index)? == before {
        return Err("index.json was not rewritten".into());
    }
    let mode = std::fs::metadata(&index)?.permissions().mode() & 0o7777;
    if mode != 0o755 {
        return Err(format!("the new index.json has mode {mode:o}, not 755").into());
    }
    Ok(())
}

/// Every regular file below `dir` by path, with its bytes and inode.
fn snapshot(dir: &Path) -> BTreeMap<String, (Vec<u8>, u64)> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                todo.push(p);
            } else if m.is_file() {
                let key = p.strip_prefix(dir).unwrap().display().to_string();
                out.insert(key, (std::fs::read(&p).unwrap(), m.ino()));
            }
        }
    }
    out
}

/// Which part of the layout in the tree is a link out of it.
#[derive(Clone, Copy)]
enum Link {
    /// `blobs/sha256`, to the store of a layout outside.
    BlobStore,
    /// `index.json`, to a copy of it outside.
    Index,
}

/// A layout of one image holding a HIP bundle (gfx90a and gfx942) at
/// `d/outside`, and one at `d/tree/image` with `link` leading into it;
/// `prune --keep gfx90a --in-place tree` exits 1 naming the layout and the
/// link, and nothing under `outside` changes (bytes and inodes).
fn linked_layout(link: Link) -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    bundle(d, "k.hipfb", &[("gfx90a", 1, 4096), ("gfx942", 2, 4096)])?;
    let k = std::fs::read(d.join("k.hipfb"))?;
    let good = gzip_tar(&[("usr/lib/k.hipfb", &k)])?;
    layout(&d.join("outside"), std::slice::from_ref(&good))?;
    let image = d.join("tree/image");
    layout(&image, std::slice::from_ref(&good))?;
    let named = match link {
        Link::BlobStore => {
            std::fs::remove_dir_all(image.join("blobs/sha256"))?;
            std::os::unix::fs::symlink(d.join("outside/blobs/sha256"), image.join("blobs/sha256"))?;
            "blobs/sha256"
        }
        Link::Index => {
            std::fs::remove_file(image.join("index.json"))?;
            std::os::unix::fs::symlink(d.join("outside/index.json"), image.join("index.json"))?;
            "index.json"
        }
    };
    let (outside, inside) = (snapshot(&d.join("outside")), snapshot(&image));
    let args = ["prune", "--keep", "gfx90a", "--in-place", "tree"];
    let r = run_within(LIMIT, &ours(), &args, d)?;
    same("the exit code", r.code, 1)?;
    // A refusal goes on standard output.
    let said = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
    for n in ["tree/image", named, "symbolic link"] {
        if !said.contains(n) {
            return Err(format!("the refusal names no '{n}':\n{said}").into());
        }
    }
    same("the layout outside", snapshot(&d.join("outside")), outside)?;
    same("the layout in the tree", snapshot(&image), inside)
}

/// A tree holding a HIP bundle and `sub`, a link to a directory outside
/// holding another: `prune --in-place tree` prunes the bundle in the tree
/// and leaves the one outside as it was.
fn a_link_to_a_directory_outside_is_not_followed() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::create_dir_all(d.join("tree"))?;
    std::fs::create_dir_all(d.join("outside"))?;
    bundle(d, "tree/k.hipfb", &[("gfx90a", 1, 4096), ("gfx942", 2, 4096)])?;
    std::fs::copy(d.join("tree/k.hipfb"), d.join("outside/k.hipfb"))?;
    std::os::unix::fs::symlink(d.join("outside"), d.join("tree/sub"))?;
    let outside = snapshot(&d.join("outside"));
    let before = std::fs::metadata(d.join("tree/k.hipfb"))?.len();
    let args = ["prune", "--keep", "gfx90a", "--in-place", "tree"];
    run_within(LIMIT, &ours(), &args, d)?.ok()?;
    if std::fs::metadata(d.join("tree/k.hipfb"))?.len() >= before {
        return Err("the bundle in the tree was not pruned".into());
    }
    same("the directory outside", snapshot(&d.join("outside")), outside)
}
