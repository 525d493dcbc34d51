//! Byte ranges that hold containers: the candidates the magic finders
//! report, read as containers back to back (a section's contents,
//! decompressed data) or as a raw scan that skips what fails, with the
//! readers' errors made problems at the file's offsets.

use super::walker::{Expect, Loc, Walker};
use crate::bundle::text;
use crate::error::{ErrorKind, Result};
use crate::num::usize_from;
use crate::scan::ProblemKind;
use crate::scan::magic::Magic;

impl Walker<'_> {
    /// Finds the containers in `bytes`. See [`Expect`].
    pub(super) fn region(&mut self, bytes: &[u8], loc: &Loc, expect: Expect) {
        let finders = self.finders;
        finders.search(bytes, |cands| {
            let mut cursor = 0usize;
            let mut explained = true;
            let sequence = matches!(expect, Expect::Sequence { .. } | Expect::Among);
            let gaps = matches!(expect, Expect::Sequence { .. });
            while let Some((pos, magic)) = cands.next() {
                if self.stopped() {
                    return;
                }
                if pos < cursor {
                    continue;
                }
                if expect == Expect::Among && magic != Magic::OffloadBinary {
                    // The other data there is names: text that may hold a
                    // bundle's or CCOB's magic, never an OffloadBinary's
                    // (0xFF is no part of UTF-8).
                    continue;
                }
                if magic == Magic::Bundle && text::is_marker(&bytes[pos..]) {
                    // A text bundle's marker; the file (or decompressed
                    // contents) may be a text bundle.
                    if expect.whole()
                        && cursor == 0
                        && let Some(prefix) = text::prefix_at(bytes, pos)
                    {
                        self.text_bundle(bytes, prefix, loc);
                        return;
                    }
                    continue;
                }
                if gaps && explained {
                    self.gap(bytes, cursor, pos, loc);
                }
                match self.container_at(bytes, pos, magic, loc) {
                    Ok(extent) => {
                        cursor = pos
                            .saturating_add(usize_from(extent).max(1))
                            .min(bytes.len());
                        cands.skip_to(cursor);
                        explained = true;
                    }
                    Err(e) => {
                        // In a sequence, the first failure explains the bytes up
                        // to the next container; later candidates in them are
                        // noise.
                        if (sequence && explained) || self.opts.report_rejects {
                            let (kind, what) = if sequence {
                                (ProblemKind::Damage, format!("invalid {}", kind_of(magic)))
                            } else {
                                (
                                    ProblemKind::Rejected,
                                    format!("not a valid {} (raw-scan candidate)", kind_of(magic)),
                                )
                            };
                            // The reader's offsets are the candidate's; make
                            // them the file's (or the region's, inside
                            // decompressed data).
                            let here = loc.at(pos as u64);
                            let base = here.abs.unwrap_or(pos as u64);
                            let e = e.rebased(base);
                            let msg = rebase_at(&format!("{what}: {e}"), base);
                            self.problem_of(kind, &here, None, msg);
                        }
                        explained = false;
                    }
                }
            }
            if gaps && explained {
                self.gap(bytes, cursor, bytes.len(), loc);
            }
        });
    }

    /// Reports non-zero bytes between containers of a sequence.
    fn gap(&mut self, bytes: &[u8], from: usize, to: usize, loc: &Loc) {
        let Some(g) = bytes.get(from..to) else { return };
        if let Some(first) = g.iter().position(|&b| b != 0) {
            let at = from + first;
            self.problem(
                &loc.at(at as u64),
                None,
                format!(
                    "{} bytes of unrecognized data where containers were expected",
                    to - at
                ),
            );
        }
    }

    /// Reads the container at `pos` of `bytes`; returns the bytes it
    /// occupies.
    fn container_at(&mut self, bytes: &[u8], pos: usize, magic: Magic, loc: &Loc) -> Result<u64> {
        if loc.depth >= self.opts.max_depth {
            return Err(ErrorKind::DepthExceeded {
                what: "container nesting".into(),
                limit: u64::from(self.opts.max_depth),
            }
            .into());
        }
        let sub = &bytes[pos..];
        let l = loc.at(pos as u64);
        let rel = pos as u64;
        match magic {
            Magic::OffloadBinary => self.offload_binary(sub, &l, rel),
            Magic::Bundle => self.bundle(sub, &l, rel),
            Magic::Ccob => self.ccob(sub, &l, rel),
            Magic::Fatbin => self.fatbin(sub, &l, rel),
        }
    }
}

fn kind_of(m: Magic) -> &'static str {
    match m {
        Magic::OffloadBinary => "OffloadBinary",
        Magic::Bundle => "bundle",
        Magic::Ccob => "compressed bundle (CCOB)",
        Magic::Fatbin => "CUDA fatbin",
    }
}

/// `msg` with every `at 0x…` offset moved on by `base`. The readers name
/// the structures they meet by their offset in the bytes they were given
/// (`OffloadBinary at 0x0`, `CUDA fatbin entry at 0x40`), which start at
/// the candidate; `base` makes them the file's, as the problem's own
/// offset is. (Offsets in an error's fields are moved by
/// [`Error::rebased`](crate::error::Error::rebased).)
fn rebase_at(msg: &str, base: u64) -> String {
    const AT: &str = "at 0x";
    if base == 0 {
        return msg.to_string();
    }
    let mut out = String::with_capacity(msg.len() + 8);
    let mut rest = msg;
    while let Some(i) = rest.find(AT) {
        let digits = rest[i + AT.len()..]
            .bytes()
            .take_while(u8::is_ascii_hexdigit)
            .count();
        let end = i + AT.len() + digits;
        match u64::from_str_radix(&rest[i + AT.len()..end], 16) {
            Ok(n) if digits > 0 => {
                out.push_str(&rest[..i]);
                out.push_str(&format!("at {:#x}", n.saturating_add(base)));
            }
            _ => out.push_str(&rest[..end]),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod rebase_tests {
    #[test]
    fn at_offsets_move_and_nothing_else_does() {
        let m = "invalid CUDA fatbin: payload of the CUDA fatbin entry at 0x40 (offset 0x10, \
                 size 0x8) lies outside; what at 0xzz, at 0x";
        assert_eq!(
            super::rebase_at(m, 0x1d0),
            "invalid CUDA fatbin: payload of the CUDA fatbin entry at 0x210 (offset 0x10, \
             size 0x8) lies outside; what at 0xzz, at 0x"
        );
        assert_eq!(
            super::rebase_at("OffloadBinary at 0x0", 0),
            "OffloadBinary at 0x0"
        );
        assert_eq!(
            super::rebase_at("at 0xffffffffffffffff", 5),
            "at 0xffffffffffffffff"
        );
    }
}
