//! Members that are not what they seem in number: zip entries whose data
//! lies where another entry's does (a zip's central directory may point
//! any number of entries at one stored member, so a file of kilobytes
//! names gigabytes, and a zip inside it multiplies that again), counted
//! by [`Overlaps`]; and entries of one name ([`duplicate_names`]), of
//! which a zip reader sees only one. A tar archive's members of one path
//! ([`TarPaths`]) are the same fault: unpacked, only the last is left.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Read, Seek};

/// What a member whose bytes another member of the same package already
/// gave costs at least, in bytes of the decompression budget: reading it
/// again costs its size, and naming it again costs a unit to report even
/// when it is empty.
pub(crate) const REPEAT_COST_FLOOR: u64 = 4096;

/// The stored members of one package seen so far, by where their bytes
/// lie in it: a member whose bytes overlap one seen before is a repeat,
/// which costs what reading it again costs ([`Overlaps::cost`]).
#[derive(Debug, Default)]
pub(crate) struct Overlaps {
    /// Disjoint ranges of offsets, start to end; an empty member takes
    /// the one byte where it starts.
    ranges: BTreeMap<usize, usize>,
}

impl Overlaps {
    /// What the stored member `part` (a slice of the package `whole`)
    /// costs: 0 the first time its bytes are seen, else its size, at
    /// least [`REPEAT_COST_FLOOR`].
    pub(crate) fn cost(&mut self, whole: &[u8], part: &[u8]) -> u64 {
        let Some(start) = part.as_ptr().addr().checked_sub(whole.as_ptr().addr()) else {
            return 0;
        };
        if start > whole.len() {
            return 0;
        }
        let end = start.saturating_add(part.len().max(1));
        // The ranges are disjoint, so the last one starting before `end`
        // ends after every other that does.
        let overlaps = self
            .ranges
            .range(..end)
            .next_back()
            .is_some_and(|(_, &e)| e > start);
        if overlaps {
            return (part.len() as u64).max(REPEAT_COST_FLOOR);
        }
        self.ranges.insert(start, end);
        0
    }
}

/// The names the central directory of the zip `zip` (over `bytes`) gives
/// more than one entry, in the order of their first entries, each with
/// how many it gives; empty when every name is given once. The zip crate
/// keeps one entry of each name, so the others are read here, straight
/// from the central directory.
pub(crate) fn duplicate_names<R: Read + Seek>(
    bytes: &[u8],
    zip: &zip::ZipArchive<R>,
) -> Vec<(String, usize)> {
    if !zip.has_duplicate_names() {
        return Vec::new();
    }
    let mut count: HashMap<&[u8], usize> = HashMap::new();
    let mut order = Vec::new();
    let mut at = usize::try_from(zip.central_directory_start()).unwrap_or(usize::MAX);
    while let Some(head) = bytes.get(at..at.saturating_add(46))
        && head.starts_with(b"PK\x01\x02")
    {
        let field = |i: usize| usize::from(crate::bytes::le_at::<u16>(head, i).unwrap_or(0));
        let (n, extra, comment) = (field(28), field(30), field(32));
        let Some(name) = bytes.get(at + 46..at + 46 + n) else {
            break;
        };
        let c = count.entry(name).or_insert(0);
        *c += 1;
        if *c == 2 {
            order.push(name);
        }
        at += 46 + n + extra + comment;
    }
    order
        .into_iter()
        .map(|n| (String::from_utf8_lossy(n).into_owned(), count[n]))
        .collect()
}

/// The words for the names `dups` ([`duplicate_names`]) of a zip: what
/// is wrong with it. `None` when there are none.
pub(crate) fn duplicates_said(dups: &[(String, usize)]) -> Option<String> {
    let (first, n) = dups.first()?;
    let more = match dups.len() {
        1 => String::new(),
        k => format!(" (and {} other names given more than once)", k - 1),
    };
    Some(format!(
        "its central directory gives {n} entries the name '{first}'{more}: a zip reader sees \
         only one entry of a name, so what the others hold would go unread"
    ))
}

/// The paths of the members of a tar archive met so far, to find a path
/// two members give ([`TarPaths::note`]). Unpacking such an archive
/// leaves only the later member at that path, so a reader that looks at
/// each member looks at bytes that are not what gets installed. Image
/// layers are not checked with it: there a later entry replacing an
/// earlier one is how a layer is meant to be read.
#[derive(Debug, Default)]
pub(crate) struct TarPaths(HashSet<Vec<u8>>);

impl TarPaths {
    /// Notes the member at `path` (compared without the `./` or `/` in
    /// front of it); when a member met before, neither of them a
    /// `directory`, had that path, the words for what is wrong. A
    /// directory given twice unpacks to one directory, so it is not
    /// counted.
    pub(crate) fn note(&mut self, path: &[u8], directory: bool) -> Option<String> {
        let mut p = path;
        while let Some(rest) = p.strip_prefix(b"./").or_else(|| p.strip_prefix(b"/")) {
            p = rest;
        }
        if directory || p.is_empty() || self.0.insert(p.to_vec()) {
            return None;
        }
        Some(format!(
            "two members named '{}': unpacking leaves only the later one, so what the earlier \
             holds is not what gets installed",
            String::from_utf8_lossy(p)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_seen_again_costs_its_size_at_least_the_floor() {
        let whole = vec![7u8; 100_000];
        let mut o = Overlaps::default();
        assert_eq!(o.cost(&whole, &whole[0..10]), 0);
        assert_eq!(o.cost(&whole, &whole[10..20]), 0);
        assert_eq!(o.cost(&whole, &whole[5..15]), REPEAT_COST_FLOOR);
        assert_eq!(o.cost(&whole, &whole[0..10]), REPEAT_COST_FLOOR);
        assert_eq!(o.cost(&whole, &whole[20..90_020]), 0);
        assert_eq!(o.cost(&whole, &whole[20..90_020]), 90_000);
        assert_eq!(o.cost(&whole, &whole[90_019..90_030]), REPEAT_COST_FLOOR);
        assert_eq!(o.cost(&whole, &whole[90_020..90_030]), 0);
        // Empty members at one offset repeat; at their own, they do not.
        assert_eq!(o.cost(&whole, &whole[95_000..95_000]), 0);
        assert_eq!(o.cost(&whole, &whole[95_000..95_000]), REPEAT_COST_FLOOR);
        assert_eq!(o.cost(&whole, &whole[95_001..95_001]), 0);
        // Nothing outside the package is counted.
        assert_eq!(o.cost(&whole[50..], &whole[0..10]), 0);
    }

    #[test]
    fn names_given_twice_are_found_in_the_central_directory() {
        use std::io::Write as _;
        let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let o = zip::write::SimpleFileOptions::default();
        for n in ["a.so", "b.so", "c.so"] {
            z.start_file(n, o).unwrap();
            z.write_all(n.as_bytes()).unwrap();
        }
        let mut bytes = z.finish().unwrap().into_inner();
        let clean = zip::ZipArchive::new(std::io::Cursor::new(&bytes[..])).unwrap();
        assert!(duplicate_names(&bytes, &clean).is_empty());
        assert_eq!(duplicates_said(&[]), None);
        // The central directory's third name made the first's.
        let at = memchr::memmem::rfind(&bytes, b"c.so").unwrap();
        bytes[at] = b'a';
        let zip = zip::ZipArchive::new(std::io::Cursor::new(&bytes[..])).unwrap();
        let dups = duplicate_names(&bytes, &zip);
        assert_eq!(dups, vec![("a.so".to_string(), 2)]);
        let said = duplicates_said(&dups).unwrap();
        assert!(said.starts_with("its central directory gives 2 entries the name 'a.so'"));
    }

    #[test]
    fn a_tar_path_given_twice_is_found_after_leading_dot_slash() {
        let mut seen = TarPaths::default();
        assert_eq!(seen.note(b"./usr/", true), None);
        assert_eq!(seen.note(b"./usr/lib/x.so", false), None);
        assert_eq!(seen.note(b"usr/lib/y.so", false), None);
        assert_eq!(seen.note(b"./usr/", true), None);
        let said = seen.note(b"usr/lib/x.so", false).unwrap();
        assert!(
            said.starts_with("two members named 'usr/lib/x.so': "),
            "{said}"
        );
        assert!(seen.note(b"/./usr/lib/y.so", false).is_some());
        assert_eq!(seen.note(b"./", false), None);
        assert_eq!(seen.note(b"./", false), None);
    }
}
