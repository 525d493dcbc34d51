//! LLVM 22's environment variables for the bundler: `OFFLOAD_BUNDLER_*`
//! and `COMPRESSED_BUNDLE_FORMAT_VERSION`, with LLVM's warning texts.

use crate::bundle::ccob::{CompressOptions, DEFAULT_VERSION, Method};

// ---------------------------------------------------------------------------
// Environment variables

/// What LLVM 22's bundler takes from its environment (read when its
/// configuration is built, before the command line is applied).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnvSettings {
    /// `OFFLOAD_BUNDLER_COMPRESS`: set means on if `"1"`, off otherwise.
    pub compress: Option<bool>,
    /// `OFFLOAD_BUNDLER_VERBOSE`: set means on if `"1"`, off otherwise.
    pub verbose: Option<bool>,
    /// `OFFLOAD_BUNDLER_COMPRESSION_LEVEL`, if it is a decimal `int`.
    pub level: Option<i32>,
    /// `COMPRESSED_BUNDLE_FORMAT_VERSION`, if it is 2 or 3.
    pub version: Option<u16>,
    /// Warnings LLVM prints on stderr, in its order, each to be followed by
    /// a newline.
    pub warnings: Vec<String>,
}

impl EnvSettings {
    /// Applies LLVM 22's rules to the variables `lookup` returns (`None`
    /// when unset): nothing at all if `OFFLOAD_BUNDLER_IGNORE_ENV_VAR` is
    /// `"1"`; numbers are parsed as LLVM's `getAsInteger(10, …)` does (the
    /// whole string, optional `-` for the level, no `+`, no spaces).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> EnvSettings {
        let mut s = EnvSettings::default();
        if lookup("OFFLOAD_BUNDLER_IGNORE_ENV_VAR").as_deref() == Some("1") {
            return s;
        }
        s.verbose = lookup("OFFLOAD_BUNDLER_VERBOSE").map(|v| v == "1");
        s.compress = lookup("OFFLOAD_BUNDLER_COMPRESS").map(|v| v == "1");
        if let Some(v) = lookup("OFFLOAD_BUNDLER_COMPRESSION_LEVEL") {
            match llvm_parse_signed(&v).and_then(|n| i32::try_from(n).ok()) {
                Some(level) => s.level = Some(level),
                None => s.warnings.push(format!(
                    "Warning: Invalid value for OFFLOAD_BUNDLER_COMPRESSION_LEVEL: {v}. Ignoring it."
                )),
            }
        }
        if let Some(v) = lookup("COMPRESSED_BUNDLE_FORMAT_VERSION") {
            match llvm_parse_unsigned(&v).and_then(|n| u16::try_from(n).ok()) {
                Some(n @ 2..=3) => s.version = Some(n),
                Some(_) => s.warnings.push(format!(
                    "Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: {v}. \
                     Valid values are 2 or 3. Using default version {DEFAULT_VERSION}."
                )),
                None => s.warnings.push(format!(
                    "Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: {v}. \
                     Using default version {DEFAULT_VERSION}."
                )),
            }
        }
        s
    }

    /// The settings after the command line: each flag wins when given
    /// (`-compress=false` beats `OFFLOAD_BUNDLER_COMPRESS=1`); the level
    /// does not turn compression on by itself. `method` is the one LLVM
    /// would use (zstd for Debian's LLVM 22) and picks the default level.
    pub fn resolve(
        &self,
        compress_flag: Option<bool>,
        verbose_flag: Option<bool>,
        level_flag: Option<i32>,
        method: Method,
    ) -> BundlerCompression {
        BundlerCompression {
            compress: compress_flag.or(self.compress).unwrap_or(false),
            verbose: verbose_flag.or(self.verbose).unwrap_or(false),
            options: CompressOptions {
                version: self.version.unwrap_or(DEFAULT_VERSION),
                method,
                level: level_flag
                    .or(self.level)
                    .unwrap_or_else(|| method.default_level()),
                threads: 0,
            },
        }
    }
}

/// The compression settings of one bundler run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BundlerCompression {
    /// Whether to compress the bundle.
    pub compress: bool,
    /// Whether to print the verbose reports.
    pub verbose: bool,
    /// Version, method and level for `ccob::compress`.
    pub options: CompressOptions,
}

/// LLVM's `consumeUnsignedInteger` in radix 10 over the whole string.
fn llvm_parse_unsigned(s: &str) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    s.bytes().try_fold(0u64, |acc, b| {
        let d = b.is_ascii_digit().then(|| u64::from(b - b'0'))?;
        acc.checked_mul(10)?.checked_add(d)
    })
}

/// LLVM's `getAsSignedInteger` in radix 10 over the whole string.
fn llvm_parse_signed(s: &str) -> Option<i64> {
    match s.strip_prefix('-') {
        Some(digits) => {
            let n = llvm_parse_unsigned(digits)?;
            if n > i64::MIN.unsigned_abs() {
                return None;
            }
            Some(0i64.wrapping_sub_unsigned(n))
        }
        None => i64::try_from(llvm_parse_unsigned(s)?).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_rules() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            EnvSettings::from_lookup(move |k| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            })
        };
        let s = env(&[
            ("OFFLOAD_BUNDLER_COMPRESS", "1"),
            ("OFFLOAD_BUNDLER_VERBOSE", "yes"),
            ("OFFLOAD_BUNDLER_COMPRESSION_LEVEL", "-5"),
            ("COMPRESSED_BUNDLE_FORMAT_VERSION", "2"),
        ]);
        assert_eq!(
            s,
            EnvSettings {
                compress: Some(true),
                verbose: Some(false),
                level: Some(-5),
                version: Some(2),
                warnings: vec![],
            }
        );
        let s = env(&[
            ("OFFLOAD_BUNDLER_IGNORE_ENV_VAR", "1"),
            ("OFFLOAD_BUNDLER_COMPRESS", "1"),
            ("COMPRESSED_BUNDLE_FORMAT_VERSION", "abc"),
        ]);
        assert_eq!(s, EnvSettings::default());
        let s = env(&[
            ("OFFLOAD_BUNDLER_IGNORE_ENV_VAR", "0"),
            ("OFFLOAD_BUNDLER_COMPRESSION_LEVEL", "abc"),
            ("COMPRESSED_BUNDLE_FORMAT_VERSION", "1"),
        ]);
        assert_eq!(
            s.warnings,
            [
                "Warning: Invalid value for OFFLOAD_BUNDLER_COMPRESSION_LEVEL: abc. Ignoring it.",
                "Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: 1. Valid values are \
                     2 or 3. Using default version 3."
            ]
        );
        for bad in ["abc", "", "+2", " 2", "2 ", "0x2", "65538", "-2"] {
            assert_eq!(
                EnvSettings::from_lookup(
                    |k| (k == "COMPRESSED_BUNDLE_FORMAT_VERSION").then(|| bad.to_string())
                )
                .warnings,
                [format!(
                    "Warning: Invalid value for COMPRESSED_BUNDLE_FORMAT_VERSION: {bad}. Using \
                         default version 3."
                )],
                "{bad:?}"
            );
        }
        for (v, want) in [
            ("3", Some(3)),
            ("002", Some(2)),
            ("0", None),
            ("65535", None),
        ] {
            let s = EnvSettings::from_lookup(|k| {
                (k == "COMPRESSED_BUNDLE_FORMAT_VERSION").then(|| v.to_string())
            });
            assert_eq!(s.version, want, "{v}");
        }
        for (v, want) in [
            ("100", Some(100)),
            ("-0", Some(0)),
            ("2147483647", Some(i32::MAX)),
            ("-2147483648", Some(i32::MIN)),
            ("2147483648", None),
            ("--1", None),
            ("-", None),
            ("1e3", None),
        ] {
            let s = EnvSettings::from_lookup(|k| {
                (k == "OFFLOAD_BUNDLER_COMPRESSION_LEVEL").then(|| v.to_string())
            });
            assert_eq!(s.level, want, "{v}");
            assert_eq!(s.warnings.len(), usize::from(want.is_none()));
        }
        // Flags win when given; the level alone does not compress.
        let s = env(&[
            ("OFFLOAD_BUNDLER_COMPRESS", "1"),
            ("OFFLOAD_BUNDLER_COMPRESSION_LEVEL", "9"),
        ]);
        let r = s.resolve(Some(false), None, None, Method::ZSTD);
        assert!(!r.compress && !r.verbose);
        assert_eq!(r.options.level, 9);
        assert_eq!(r.options.version, 3);
        let r = s.resolve(None, Some(true), Some(1), Method::ZSTD);
        assert!(r.compress && r.verbose);
        assert_eq!(r.options.level, 1);
        let r = EnvSettings::default().resolve(None, None, None, Method::ZLIB);
        assert_eq!(r.options.level, 6);
        assert!(!r.compress);
    }
}
