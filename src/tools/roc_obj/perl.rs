//! What the three scripts' runs share, as Perl and its modules do it:
//! `die`'s message and exit code ([`Die`], the runs' failure),
//! URI::Encode, File::Which, File::Basename, and numbers read from and
//! printed as strings.

/// A Perl `die`: the message (with its newline) and the exit code Perl
/// gives (the errno of the failed call, else 255).
#[derive(Debug)]
pub(crate) struct Die {
    /// The message, with its newline.
    pub message: String,
    /// The exit code.
    pub code: u8,
}

impl Die {
    pub(crate) fn new(message: impl Into<String>, code: u8) -> Die {
        Die {
            message: message.into(),
            code,
        }
    }

    /// A `die` after a failed system call: its errno is the exit code.
    pub(crate) fn errno(message: impl Into<String>, err: &std::io::Error) -> Die {
        let code = err
            .raw_os_error()
            .map_or(255, |e| u8::try_from(e & 0xff).unwrap_or(255));
        Die::new(message, if code == 0 { 255 } else { code })
    }
}

/// URI::Encode's `encode` with its defaults, on a file name's bytes: each
/// byte is taken as a Latin-1 character and UTF-8 encoded (so non-ASCII
/// bytes come out encoded twice, as the module does to Perl's byte
/// strings), `%` becomes `%25`, and what is neither unreserved nor reserved
/// in RFC 3986 is percent-encoded.
pub(super) fn uri_encode(name: &[u8]) -> String {
    fn keep(b: u8) -> bool {
        b.is_ascii_alphanumeric() || b"-_.~!*'();:@&=+$,/?#[]".contains(&b)
    }
    let mut out = String::new();
    let mut push = |b: u8| {
        if keep(b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    };
    for &b in name {
        if b >= 0x80 {
            push(0xc0 | (b >> 6));
            push(0x80 | (b & 0x3f));
        } else {
            push(b);
        }
    }
    out
}

/// URI::Encode's `decode`: each `%` and two hex digits becomes that byte.
pub(super) fn uri_decode(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b.get(i + 1..i + 3).and_then(|h| {
            std::str::from_utf8(h)
                .ok()
                .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        });
        match (b[i], hex) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// File::Which's `which`: the first executable file named `name` in the
/// directories of `PATH`.
pub(super) fn which(name: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| !m.is_dir() && m.permissions().mode() & 0o111 != 0)
        })
}

/// A Perl string's value as a number (leading blanks, a sign, digits, a
/// fraction, an exponent; what does not fit that is 0).
pub(super) fn perl_num(s: &str) -> f64 {
    let t = s.trim_start();
    let b = t.as_bytes();
    let mut end = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        end = 1;
    }
    let digits = |from: usize| from + b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let int_end = digits(end);
    end = int_end;
    if b.get(end) == Some(&b'.') {
        end = digits(end + 1);
    }
    let has_digits = end > 1 || (end == 1 && b[0].is_ascii_digit());
    if has_digits && matches!(b.get(end), Some(b'e' | b'E')) {
        let mut e = end + 1;
        if matches!(b.get(e), Some(b'+' | b'-')) {
            e += 1;
        }
        let e_end = digits(e);
        if e_end > e {
            end = e_end;
        }
    }
    t[..end].parse().unwrap_or(0.0)
}

/// A number as Perl prints it: whole numbers that fit 64 bits in full,
/// others as C's `%.15g`.
pub(super) fn perl_fmt(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1.8e19 {
        return format!("{v:.0}");
    }
    let sci = format!("{v:.14e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-5..15).contains(&exp) {
        let s = format!("{:.*}", usize::try_from(14 - exp).unwrap_or(0), v);
        let s = if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.')
        } else {
            &s
        };
        return s.to_string();
    }
    let mant = if mant.contains('.') {
        mant.trim_end_matches('0').trim_end_matches('.')
    } else {
        mant
    };
    format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

/// The last part of a path, trailing slashes dropped: what File::Basename's
/// `basename` (roc-obj-extract) and coreutils' `basename` (roc-obj) give
/// for the paths the scripts hand them ("/" for slashes alone).
pub(super) fn basename(path: &str) -> String {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return if path.is_empty() {
            String::new()
        } else {
            "/".to_string()
        };
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed).to_string()
}
