//! Sorting many keys in memory for index builds and table rebuilds: each key's bytes, and the
//! payload that goes with it, are appended to one arena, and only a small entry per key — a
//! 16-byte prefix of the key as an integer, where its bytes lie — is sorted.
//!
//! A million index entries then cost two allocations instead of three per entry, about a third
//! of the memory (fresh memory is zeroed by the kernel on first touch, which dominated builds),
//! and a sort of 32-byte entries that compares integers and rarely reaches `memcmp`.
//!
//! A build that sorts on several threads ([`crate::index_build`]) gives each its own sorter and
//! reads the sorted sorters as one, merged ([`MergedKeys`]).
//!
//! Invariant: sorting by (prefix, key bytes) is sorting by the key bytes ([`sort_prefix`]).

/// Keys with payloads, gathered then sorted by key.
#[derive(Default)]
pub(crate) struct KeySorter {
    arena: Vec<u8>,
    entries: Vec<Entry>,
}

/// A sorted entry: `(key, payload, flag)`.
pub(crate) type Sorted<'a> = (&'a [u8], &'a [u8], bool);

/// One key: its prefix, where its key and payload lie in the arena, and a flag — 32 bytes (a
/// `u128` field would align the entry to 16 and make it 48).
struct Entry {
    prefix: [u64; 2],
    start: usize,
    key_len: u32,
    /// The payload's length, and the flag in the top bit.
    payload_and_flag: u32,
}

const FLAG: u32 = 1 << 31;
const _: () = assert!(std::mem::size_of::<Entry>() == 32);

impl Entry {
    fn payload_len(&self) -> usize {
        (self.payload_and_flag & !FLAG) as usize
    }

    fn flag(&self) -> bool {
        self.payload_and_flag & FLAG != 0
    }
}

/// The most a sorter reserves ahead, in bytes of entries and of arena each: reserving is address
/// space only (pages are touched as entries arrive), but not without bound.
const MAX_RESERVE: usize = 1 << 30;

impl KeySorter {
    /// A sorter with room reserved for up to `entries` keys and `arena` bytes of keys and
    /// payloads (each capped at [`MAX_RESERVE`] bytes). Growing by doubling copies every entry
    /// into fresh memory at each step, memory the kernel must zero first; reserving an upper
    /// bound costs only the address space, since untouched pages are never faulted in.
    pub fn with_capacity(entries: usize, arena: usize) -> Self {
        let entry_size = std::mem::size_of::<Entry>();
        KeySorter {
            arena: Vec::with_capacity(arena.min(MAX_RESERVE)),
            entries: Vec::with_capacity(entries.min(MAX_RESERVE / entry_size)),
        }
    }

    /// Adds `key` with `payload` and a caller's `flag` (kept with the entry).
    pub fn push(&mut self, key: &[u8], payload: &[u8], flag: bool) {
        assert!(
            payload.len() < FLAG as usize,
            "a sorted payload fits 31 bits"
        );
        let prefix = sort_prefix(key);
        self.entries.push(Entry {
            prefix: [(prefix >> 64) as u64, prefix as u64],
            start: self.arena.len(),
            key_len: key.len() as u32,
            payload_and_flag: payload.len() as u32 | if flag { FLAG } else { 0 },
        });
        self.arena.extend_from_slice(key);
        self.arena.extend_from_slice(payload);
    }

    /// Sorts the entries by key (equal keys in no particular order).
    pub fn sort(&mut self) {
        let arena = &self.arena;
        self.entries
            .sort_unstable_by(|a, b| entry_order((arena, a), (arena, b)));
    }

    /// The entries in their order: `(key, payload, flag)`.
    pub fn iter(&self) -> impl Iterator<Item = Sorted<'_>> + '_ {
        self.entries.iter().map(|entry| self.sorted(entry))
    }

    /// One of the entries as `(key, payload, flag)`.
    fn sorted<'a>(&'a self, entry: &Entry) -> Sorted<'a> {
        let key_end = entry.start + entry.key_len as usize;
        let payload = &self.arena[key_end..key_end + entry.payload_len()];
        (key_of(&self.arena, entry), payload, entry.flag())
    }

    /// Whether two neighbouring entries (in their order) are `same`.
    pub fn any_neighbours(&self, same: impl Fn(Sorted<'_>, Sorted<'_>) -> bool) -> bool {
        any_neighbours(self.iter(), same)
    }

    /// The entries as owned `(key, payload)` pairs, in their order.
    pub fn into_pairs(self) -> impl Iterator<Item = (Vec<u8>, Vec<u8>)> {
        let KeySorter { arena, entries } = self;
        entries.into_iter().map(move |entry| {
            let key_end = entry.start + entry.key_len as usize;
            let payload = &arena[key_end..key_end + entry.payload_len()];
            (key_of(&arena, &entry).to_vec(), payload.to_vec())
        })
    }
}

fn key_of<'a>(arena: &'a [u8], entry: &Entry) -> &'a [u8] {
    &arena[entry.start..entry.start + entry.key_len as usize]
}

/// The order of two entries, each with the arena it lies in.
fn entry_order(a: (&[u8], &Entry), b: (&[u8], &Entry)) -> std::cmp::Ordering {
    a.1.prefix
        .cmp(&b.1.prefix)
        .then_with(|| key_of(a.0, a.1).cmp(key_of(b.0, b.1)))
}

/// Whether two neighbouring entries of `sorted` are `same`.
fn any_neighbours<'a>(
    sorted: impl Iterator<Item = Sorted<'a>>,
    same: impl Fn(Sorted<'_>, Sorted<'_>) -> bool,
) -> bool {
    let mut previous = None;
    for entry in sorted {
        if previous.is_some_and(|previous| same(previous, entry)) {
            return true;
        }
        previous = Some(entry);
    }
    false
}

/// Sorted sorters read as one sorted sequence: their entries merged by key.
pub(crate) struct MergedKeys {
    parts: Vec<KeySorter>,
}

impl MergedKeys {
    /// `parts`, each sorted ([`KeySorter::sort`]).
    pub fn new(parts: Vec<KeySorter>) -> Self {
        MergedKeys { parts }
    }

    /// Every part's entries in key order (equal keys in no particular order). Each step looks
    /// at the head of every part: the parts are a build's threads, a handful.
    pub fn iter(&self) -> impl Iterator<Item = Sorted<'_>> + '_ {
        let mut next = vec![0; self.parts.len()];
        std::iter::from_fn(move || {
            let mut least: Option<(usize, &KeySorter, &Entry)> = None;
            for (part, sorter) in self.parts.iter().enumerate() {
                let Some(entry) = sorter.entries.get(next[part]) else {
                    continue;
                };
                let before = least.is_none_or(|(_, least_sorter, least_entry)| {
                    entry_order((&sorter.arena, entry), (&least_sorter.arena, least_entry)).is_lt()
                });
                if before {
                    least = Some((part, sorter, entry));
                }
            }
            let (part, sorter, entry) = least?;
            next[part] += 1;
            Some(sorter.sorted(entry))
        })
    }

    /// Whether two neighbouring entries (in their merged order) are `same`.
    pub fn any_neighbours(&self, same: impl Fn(Sorted<'_>, Sorted<'_>) -> bool) -> bool {
        any_neighbours(self.iter(), same)
    }
}

/// The first 16 bytes of `bytes` as one integer, padded with zeros: ordering by it first, then by
/// the bytes, is the bytes' own order (a zero pad sorts like the end of a shorter string), and
/// sorting keys then rarely reaches `memcmp`.
pub(crate) fn sort_prefix(bytes: &[u8]) -> u128 {
    let mut head = [0u8; 16];
    let len = bytes.len().min(16);
    head[..len].copy_from_slice(&bytes[..len]);
    u128::from_be_bytes(head)
}

#[cfg(test)]
mod tests {
    use super::{sort_prefix, KeySorter, MergedKeys};
    use proptest::prelude::*;

    proptest! {
        /// Ordering by the prefix, then by the bytes, is the bytes' own order, also for strings
        /// that share long prefixes, end in zeros or are prefixes of one another.
        #[test]
        fn prefix_then_bytes_is_the_byte_order(
            a in prop::collection::vec(prop_oneof![Just(0u8), Just(1u8), any::<u8>()], 0..24),
            shared in 0..24usize,
            tail in prop::collection::vec(prop_oneof![Just(0u8), Just(1u8), any::<u8>()], 0..8),
        ) {
            let mut b = a[..shared.min(a.len())].to_vec();
            b.extend(tail);
            let by_prefix = (sort_prefix(&a), &a).cmp(&(sort_prefix(&b), &b));
            prop_assert_eq!(by_prefix, a.cmp(&b));
        }

        /// The sorter gives every key with its own payload and flag, in key order.
        #[test]
        fn sorted_entries_are_the_keys_in_order_with_their_payloads(
            keys in prop::collection::vec(
                prop::collection::vec(prop_oneof![Just(0u8), Just(1u8), any::<u8>()], 0..20),
                0..200,
            ),
        ) {
            let mut sorter = KeySorter::default();
            let mut model: Vec<(Vec<u8>, Vec<u8>, bool)> = Vec::new();
            for (i, key) in keys.iter().enumerate() {
                let payload = i.to_be_bytes()[..i % 8].to_vec();
                sorter.push(key, &payload, i % 3 == 0);
                model.push((key.clone(), payload, i % 3 == 0));
            }
            sorter.sort();
            let mut got: Vec<(Vec<u8>, Vec<u8>, bool)> =
                sorter.iter().map(|(k, p, f)| (k.to_vec(), p.to_vec(), f)).collect();
            let keys_in_order: Vec<&Vec<u8>> = got.iter().map(|(k, _, _)| k).collect();
            prop_assert!(keys_in_order.windows(2).all(|w| w[0] <= w[1]));
            got.sort();
            model.sort();
            prop_assert_eq!(&got, &model);
            let pairs: Vec<(Vec<u8>, Vec<u8>)> = sorter.into_pairs().collect();
            prop_assert_eq!(pairs.len(), model.len());
        }

        /// Sorters read merged give every key of every part in key order, and find neighbours
        /// that come from different parts.
        #[test]
        fn merged_parts_are_every_key_in_order(
            keys in prop::collection::vec(
                (prop::collection::vec(prop_oneof![Just(0u8), Just(1u8), any::<u8>()], 0..20), 0..3usize),
                0..200,
            ),
        ) {
            let mut parts: Vec<KeySorter> = (0..3).map(|_| KeySorter::default()).collect();
            for (i, (key, part)) in keys.iter().enumerate() {
                parts[*part].push(key, &i.to_be_bytes(), false);
            }
            parts.iter_mut().for_each(KeySorter::sort);
            let merged = MergedKeys::new(parts);
            let got: Vec<&[u8]> = merged.iter().map(|(key, _, _)| key).collect();
            let mut model: Vec<&[u8]> = keys.iter().map(|(key, _)| key.as_slice()).collect();
            model.sort();
            prop_assert_eq!(&got, &model);
            let repeated = model.windows(2).any(|w| w[0] == w[1]);
            prop_assert_eq!(merged.any_neighbours(|(a, ..), (b, ..)| a == b), repeated);
        }
    }
}
