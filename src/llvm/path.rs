//! LLVM's `sys::path` rules for file names, which decide image kinds and
//! extracted file names.

/// The last component of `path`.
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `sys::path::stem`: the file name without its last extension.
pub fn stem(path: &str) -> &str {
    let name = file_name(path);
    if name == "." || name == ".." {
        return name;
    }
    match name.rfind('.') {
        Some(i) => &name[..i],
        None => name,
    }
}

/// `sys::path::extension` without its dot (empty if there is none).
pub fn extension(path: &str) -> &str {
    let name = file_name(path);
    if name == "." || name == ".." {
        return "";
    }
    match name.rfind('.') {
        Some(i) => &name[i + 1..],
        None => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_and_extensions_follow_llvm() {
        assert_eq!(stem("dir/a.tar.gz"), "a.tar");
        assert_eq!(extension("dir/a.tar.gz"), "gz");
        assert_eq!(stem("d.x/noext"), "noext");
        assert_eq!(extension("d.x/noext"), "");
        assert_eq!(extension(".o"), "o");
        assert_eq!(stem(".o"), "");
        assert_eq!(extension(".."), "");
    }
}
