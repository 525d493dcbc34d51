//! One read of a zip archive that decides what each member becomes in
//! each of any number of outputs ([`rewrite`] → [`Plan`]), and the
//! outputs written from it ([`Plan::write`]), each with its RECORDs true.
//!
//! The read goes member by member, in the archive's order:
//! 1. the caller may decide a member by its name alone, unread
//!    ([`Decide::by_name`]: another GPU's files);
//! 2. a member too small to hold anything, or whose first bytes the caller
//!    does not want ([`Decide::wants`]), is read to its end where its
//!    CRC-32 is checked, and hashed;
//! 3. any other member is read whole (stored: a slice of the archive;
//!    compressed: inflated by the caller within the budget,
//!    [`Decide::inflate`]), hashed, and handed to [`Decide::decide`],
//!    which answers one [`Fate`] per output.
//!
//! Then every RECORD (`*.dist-info/RECORD`) not removed from every output
//! is read, and each of its rows naming a member read is checked against
//! the member's bytes: a row they do not match goes to [`Decide::wrong`],
//! never rewritten to match.

use std::collections::BTreeMap;
use std::io::Read as _;

use super::error::Error;
use super::read::{Archive, Seen, is_stored, rest, seen, stored};
use super::record::{Change, new_record_with};
use super::write::{Added, Fate, Method, write, write_adding};
use crate::package::budget::Budget;
use crate::package::records::pip_rows;
use crate::package::{self, Decide, Held};

/// A member as the read hands it to [`Decide`].
pub(crate) struct Read<'m> {
    /// Its index in the archive.
    pub(crate) index: usize,
    /// Its name.
    pub(crate) name: &'m str,
    /// The size it declares (inflated).
    pub(crate) size: u64,
    /// Whether it is a directory entry.
    pub(crate) is_dir: bool,
}

/// A zip archive as its [`rewrite`] hands its members to [`Decide`].
pub(crate) struct Zip;

impl package::Format for Zip {
    type Member<'m> = Read<'m>;
}

/// Why a [`rewrite`] stopped: the archive, or the caller.
pub(crate) type Failed<E> = package::Failed<Error, E>;

impl<E> From<::zip::result::ZipError> for Failed<E> {
    fn from(e: ::zip::result::ZipError) -> Failed<E> {
        Failed::Package(Error::Zip(e))
    }
}

/// What one read decided: each output's fate of each member that changes
/// in it, and the RECORDs read, for their rows to be rewritten.
pub(crate) struct Plan<'a, B> {
    /// Per output, the fate of each member not kept, by index.
    fates: Vec<BTreeMap<usize, Fate>>,
    /// The names of the members some output does not keep, by index.
    names: BTreeMap<usize, String>,
    /// The RECORDs read, by index: their names and bytes.
    records: BTreeMap<usize, (String, Record<'a, B>)>,
}

/// A RECORD's bytes: stored in the archive, or inflated by the caller.
enum Record<'a, B> {
    /// A slice of the archive.
    Stored(&'a [u8]),
    /// As the caller holds them.
    Inflated(B),
}

/// Reads the archive `a` once within `budget`, `decide` answering for
/// each member as the module says; the plan of every output.
pub(crate) fn rewrite<'a, D: Decide<Zip>>(
    a: &mut Archive<'a>,
    budget: &mut Budget,
    decide: &mut D,
) -> Result<Plan<'a, D::Bytes>, Failed<D::Error>> {
    let outputs = decide.outputs();
    let mut plan = Plan {
        fates: vec![BTreeMap::new(); outputs],
        names: BTreeMap::new(),
        records: BTreeMap::new(),
    };
    let mut read: BTreeMap<String, Seen> = BTreeMap::new();
    for i in 0..a.len() {
        let raw = a.zip.by_index_raw(i).map_err(Failed::from)?;
        let name = raw.name().map_err(Failed::from)?.into_owned();
        let m = Read {
            index: i,
            name: &name,
            size: raw.size(),
            is_dir: raw.is_dir(),
        };
        drop(raw);
        if let Some(fates) = decide.by_name(&m).map_err(Failed::Caller)? {
            plan.note(i, &name, fates);
            continue;
        }
        if m.is_dir {
            continue;
        }
        if let Some(fates) = member(a, &m, budget, decide, &mut read)? {
            plan.note(i, &name, fates);
        }
    }
    plan.check_records(a, &read, budget, decide)?;
    Ok(plan)
}

/// Reads the member `m` of `a` as the module says, noting its size and
/// hash in `read`; its fates, when [`Decide::decide`] gave some.
fn member<D: Decide<Zip>>(
    a: &mut Archive<'_>,
    m: &Read<'_>,
    budget: &mut Budget,
    decide: &mut D,
    read: &mut BTreeMap<String, Seen>,
) -> Result<Option<Vec<Fate>>, Failed<D::Error>> {
    let data = a.data;
    let mut f = a.zip.by_index(m.index).map_err(Failed::from)?;
    let as_is = is_stored(&f);
    if m.size < 64 {
        // Too small to read, but checked against its CRC-32 as any other.
        let sum = match as_is {
            true => seen(stored(m.name, data, &f)?),
            false => rest(m.name, &[], &mut f, m.size, budget)?,
        };
        read.insert(m.name.to_string(), sum);
        return Ok(None);
    }
    if as_is {
        let bytes = stored(m.name, data, &f)?;
        read.insert(m.name.to_string(), seen(bytes));
        if !decide.wants(m, bytes) {
            return Ok(None);
        }
        return decide
            .decide(m, Held::Stored(bytes))
            .map_err(Failed::Caller);
    }
    let mut head = Vec::with_capacity(D::REACH);
    (&mut f)
        .take(D::REACH as u64)
        .read_to_end(&mut head)
        .map_err(|e| Error::Member {
            member: m.name.to_string(),
            doing: "cannot be inflated",
            source: e.into(),
        })?;
    if !decide.wants(m, &head) {
        // Not read, but inflated to its end, where its CRC-32 is checked:
        // a member found damaged is never copied as it is.
        let sum = rest(m.name, &head, &mut f, m.size, budget)?;
        read.insert(m.name.to_string(), sum);
        return Ok(None);
    }
    budget.charge(m.name, m.size)?;
    let bytes = decide.inflate(m, &head, &mut f).map_err(Failed::Caller)?;
    drop(f);
    read.insert(m.name.to_string(), seen(bytes.as_ref()));
    decide.decide(m, Held::Read(&bytes)).map_err(Failed::Caller)
}

impl<'a, B: AsRef<[u8]>> Plan<'a, B> {
    /// Notes `fates`, those of member `i` named `name`.
    fn note(&mut self, i: usize, name: &str, fates: Vec<Fate>) {
        let mut changes = false;
        for (out, fate) in self.fates.iter_mut().zip(fates) {
            if !matches!(fate, Fate::Kept) {
                out.insert(i, fate);
                changes = true;
            }
        }
        if changes {
            self.names.insert(i, name.to_string());
        }
    }

    /// Whether output `k` is the archive as it was.
    pub(crate) fn unchanged(&self, k: usize) -> bool {
        self.fates.get(k).is_none_or(BTreeMap::is_empty)
    }

    /// Reads each RECORD not removed from every output (keeping its
    /// bytes) and checks each of its rows naming a member `read` against
    /// that member's size and hash.
    fn check_records<D: Decide<Zip, Bytes = B>>(
        &mut self,
        a: &mut Archive<'a>,
        read: &BTreeMap<String, Seen>,
        budget: &mut Budget,
        decide: &mut D,
    ) -> Result<(), Failed<D::Error>> {
        let data = a.data;
        for i in 0..a.len() {
            let mut f = a.zip.by_index(i).map_err(Failed::from)?;
            let rname = f.name().map_err(Failed::from)?.into_owned();
            let gone = |o: &BTreeMap<usize, Fate>| matches!(o.get(&i), Some(Fate::Removed));
            if f.is_dir() || !rname.ends_with(".dist-info/RECORD") || self.fates.iter().all(gone) {
                continue;
            }
            let size = f.size();
            let text = if is_stored(&f) {
                Record::Stored(stored(&rname, data, &f)?)
            } else {
                budget.charge(&rname, size)?;
                let m = Read {
                    index: i,
                    name: &rname,
                    size,
                    is_dir: false,
                };
                Record::Inflated(decide.inflate(&m, &[], &mut f).map_err(Failed::Caller)?)
            };
            drop(f);
            let bytes = text.bytes();
            let rows = pip_rows(bytes).map_err(|e| Error::Member {
                member: rname.clone(),
                doing: "cannot be read as a RECORD",
                source: e.into(),
            })?;
            for (path, row) in rows {
                let Some(&(size, sha)) = read.get(&path) else {
                    continue;
                };
                if let Some(w) = row.wrong(&rname, &path, size, &sha) {
                    decide.wrong(&w).map_err(Failed::Caller)?;
                }
            }
            self.records.insert(i, (rname, text));
        }
        Ok(())
    }

    /// Writes output `k` of the archive `a` to `file`: its members as the
    /// plan says, each of its RECORDs naming a member changed given the
    /// member's new hash and size (or without its rows, for a member
    /// removed).
    pub(crate) fn write(
        &self,
        a: &mut Archive<'_>,
        k: usize,
        file: &std::fs::File,
    ) -> Result<(), Error> {
        let none = BTreeMap::new();
        let fates = self.fates.get(k).unwrap_or(&none);
        let texts = self.new_records(fates, &BTreeMap::new())?;
        write(&mut a.zip, fates, &texts, Method::AsItWas, file)
    }

    /// [`Plan::write`], output `k` gaining the members `added` (each a
    /// name in a `*.dist-info/` directory and its bytes) after the
    /// archive's own, written with the header fields of that directory's
    /// RECORD, which gains a row for each (its hash and size) after its
    /// last: every other byte of the RECORD as [`Plan::write`] writes it.
    /// A member of that name the archive holds already (a variant wheel's
    /// `variant.json`, split again) is left out with its RECORD row, so
    /// that the new one takes its place at the end. A member whose
    /// directory holds no RECORD read is an error.
    pub(crate) fn write_adding(
        &self,
        a: &mut Archive<'_>,
        k: usize,
        added: &[(String, &[u8])],
        file: &std::fs::File,
    ) -> Result<(), Error> {
        let none = BTreeMap::new();
        let mut fates = self.fates.get(k).unwrap_or(&none).clone();
        let mut replaced = BTreeMap::new();
        for (name, _) in added {
            if let Some(j) = a.zip.index_for_name(name) {
                fates.insert(j, Fate::Removed);
                replaced.insert(j, name.clone());
            }
        }
        let mut texts = self.new_records(&fates, &replaced)?;
        let mut members = Vec::with_capacity(added.len());
        for (name, bytes) in added {
            let dir = name.rsplit_once('/').map_or("", |(d, _)| d);
            let record = format!("{dir}/RECORD");
            let found = self.records.iter().find(|(_, (n, _))| *n == record);
            let Some((&i, (_, text))) = found else {
                return Err(Error::Damaged(format!(
                    "no '{record}' to list the new member '{name}'"
                )));
            };
            let mut new = texts.remove(&i).unwrap_or_else(|| text.bytes().to_vec());
            if !new.is_empty() && !new.ends_with(b"\n") {
                new.push(b'\n');
            }
            new.extend_from_slice(&record_row(name, bytes));
            texts.insert(i, new);
            members.push(Added {
                name: name.clone(),
                bytes,
                like: i,
            });
        }
        write_adding(&mut a.zip, &fates, &texts, Method::AsItWas, &members, file)
    }

    /// The new bytes of each RECORD whose rows change under `fates` (one
    /// output's), by index; `more` names the members `fates` names that
    /// the plan itself does not.
    fn new_records(
        &self,
        fates: &BTreeMap<usize, Fate>,
        more: &BTreeMap<usize, String>,
    ) -> Result<BTreeMap<usize, Vec<u8>>, Error> {
        let mut out = BTreeMap::new();
        if fates.is_empty() {
            return Ok(out);
        }
        let mut changed: BTreeMap<&str, Change<'_>> = BTreeMap::new();
        for (i, fate) in fates {
            let Some(name) = self.names.get(i).or_else(|| more.get(i)) else {
                continue;
            };
            let change = match fate {
                Fate::Kept => continue,
                Fate::Removed => Change::Removed,
                Fate::Replaced(n) => {
                    let sha = n.sha.as_deref().ok_or_else(|| {
                        Error::Damaged(format!("member '{name}': its new bytes were not hashed"))
                    })?;
                    Change::Rewritten(n.size, sha)
                }
            };
            changed.insert(name.as_str(), change);
        }
        for (i, (rname, text)) in &self.records {
            if matches!(fates.get(i), Some(Fate::Removed)) {
                continue;
            }
            let new = new_record_with(text.bytes(), &changed).map_err(|e| Error::Member {
                member: rname.clone(),
                doing: "cannot be read as CSV",
                source: e.into(),
            })?;
            if let Some(new) = new {
                out.insert(*i, new);
            }
        }
        Ok(out)
    }
}

/// The RECORD row of the file `name` holding `bytes`: its name (quoted
/// where CSV needs it), `sha256=` and its unpadded URL-safe base64
/// SHA-256, its size, and a line feed.
fn record_row(name: &str, bytes: &[u8]) -> Vec<u8> {
    use base64::Engine as _;
    use sha2::Digest as _;
    let sha = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(bytes));
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    let size = bytes.len().to_string();
    let row = [name, &format!("sha256={sha}"), size.as_str()];
    // Writing to memory cannot fail.
    let _ = w.write_record(row);
    w.into_inner().unwrap_or_default()
}

impl<B: AsRef<[u8]>> Record<'_, B> {
    /// The RECORD's bytes.
    fn bytes(&self) -> &[u8] {
        match self {
            Record::Stored(b) => b,
            Record::Inflated(b) => b.as_ref(),
        }
    }
}
