//! Record formats of B+tree pages and the searches over them.
//!
//! ```text
//! leaf record    key_len u16 | key | kind u8 | value
//!                kind 0: value = the value's bytes (inline)
//!                kind 1: value = total length u32 | first overflow page u32
//! branch record  child u32 | key
//! ```
//!
//! Records are kept in key order in the page's slot array. In a branch page the key of record `i` is
//! the lower bound of child `i`'s keys; the key of record 0 is never compared (the page's own lower
//! bound, known from its parent, stands in for it), so it is stored empty.

use std::cmp::Ordering;

use crate::page::{read_u16, read_u32, Page};
use crate::PageNo;

const KIND_INLINE: u8 = 0;
const KIND_OVERFLOW: u8 = 1;
/// Bytes of a leaf record besides key and value: key length and kind.
pub const LEAF_OVERHEAD: usize = 3;
/// Bytes of an overflow reference in a leaf record.
pub const OVERFLOW_REF: usize = 8;
/// Bytes of a branch record besides its key.
pub const BRANCH_OVERHEAD: usize = 4;

/// Where a leaf record's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoredValue<'a> {
    Inline(&'a [u8]),
    Overflow { len: u32, first: PageNo },
}

/// Size limits derived from the page size.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes a page offers to records (slots included).
    pub usable: usize,
    /// Largest record, so that any full page plus one record splits into two pages that fit.
    pub max_record: usize,
    /// Largest leaf record whose value is kept inline.
    pub inline_limit: usize,
    /// Longest key.
    pub max_key: usize,
    /// A non-root page using fewer bytes than this is merged with a sibling when they fit together.
    pub merge_threshold: usize,
}

impl Limits {
    pub fn new(page_size: usize) -> Self {
        let usable = Page::usable_space(page_size);
        let max_record = usable / 3 - Page::record_footprint(0);
        Limits {
            usable,
            max_record,
            inline_limit: max_record / 2,
            max_key: max_record - LEAF_OVERHEAD - OVERFLOW_REF,
            merge_threshold: usable / 4,
        }
    }

    /// Whether a value of `value_len` bytes under a key of `key_len` bytes is kept inline.
    pub fn is_inline(&self, key_len: usize, value_len: usize) -> bool {
        value_len <= OVERFLOW_REF || leaf_len(key_len, value_len) <= self.inline_limit
    }

    /// Bytes of the leaf record for this key and value, wherever the value goes.
    pub fn leaf_record_len(&self, key_len: usize, value_len: usize) -> usize {
        if self.is_inline(key_len, value_len) {
            leaf_len(key_len, value_len)
        } else {
            leaf_len(key_len, OVERFLOW_REF)
        }
    }
}

fn leaf_len(key_len: usize, value_len: usize) -> usize {
    LEAF_OVERHEAD + key_len + value_len
}

pub fn leaf_key(record: &[u8]) -> &[u8] {
    let len = read_u16(record, 0) as usize;
    &record[2..2 + len]
}

pub fn leaf_value(record: &[u8]) -> StoredValue<'_> {
    let len = read_u16(record, 0) as usize;
    let at = 2 + len;
    if record[at] == KIND_OVERFLOW {
        StoredValue::Overflow {
            len: read_u32(record, at + 1),
            first: read_u32(record, at + 5),
        }
    } else {
        StoredValue::Inline(&record[at + 1..])
    }
}

pub fn encode_leaf(key: &[u8], value: StoredValue<'_>) -> Vec<u8> {
    let value_len = match value {
        StoredValue::Inline(bytes) => bytes.len(),
        StoredValue::Overflow { .. } => OVERFLOW_REF,
    };
    let mut out = Vec::with_capacity(LEAF_OVERHEAD + key.len() + value_len);
    out.extend_from_slice(&(key.len() as u16).to_le_bytes());
    out.extend_from_slice(key);
    match value {
        StoredValue::Inline(bytes) => {
            out.push(KIND_INLINE);
            out.extend_from_slice(bytes);
        }
        StoredValue::Overflow { len, first } => {
            out.push(KIND_OVERFLOW);
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&first.to_le_bytes());
        }
    }
    out
}

/// Structural check of a leaf record, for verification.
pub fn leaf_record_is_well_formed(record: &[u8]) -> bool {
    if record.len() < LEAF_OVERHEAD {
        return false;
    }
    let at = 2 + read_u16(record, 0) as usize;
    match record.get(at) {
        Some(&KIND_INLINE) => true,
        Some(&KIND_OVERFLOW) => record.len() == at + 1 + OVERFLOW_REF,
        _ => false,
    }
}

pub fn branch_child(record: &[u8]) -> PageNo {
    read_u32(record, 0)
}

pub fn branch_key(record: &[u8]) -> &[u8] {
    &record[BRANCH_OVERHEAD..]
}

pub fn encode_branch(key: &[u8], child: PageNo) -> Vec<u8> {
    let mut out = Vec::with_capacity(BRANCH_OVERHEAD + key.len());
    out.extend_from_slice(&child.to_le_bytes());
    out.extend_from_slice(key);
    out
}

/// Binary search of a leaf: `Ok(i)` if record `i` has `key`, else `Err(i)` where it would go.
pub fn leaf_search(page: Page<'_>, key: &[u8]) -> Result<usize, usize> {
    search_slots(page, key, 0, page.slot_count())
}

/// Binary search of the leaf's slots `low..high`, known to bracket `key`.
fn search_slots(
    page: Page<'_>,
    key: &[u8],
    mut low: usize,
    mut high: usize,
) -> Result<usize, usize> {
    while low < high {
        let mid = (low + high) / 2;
        match compare_keys(leaf_key(page.record(mid)), key) {
            Ordering::Less => low = mid + 1,
            Ordering::Greater => high = mid,
            Ordering::Equal => return Ok(mid),
        }
    }
    Err(low)
}

/// [`leaf_search`] for a key no smaller than the key searched before it in the same leaf, whose
/// result gave slot `from`: gallops forward from `from` (1, 2, 4, … slots) and then searches the
/// bracket, so ascending keys close together cost a few comparisons on nearby records instead
/// of a search of the whole page.
pub fn leaf_search_from(page: Page<'_>, key: &[u8], from: usize) -> Result<usize, usize> {
    let count = page.slot_count();
    let (mut low, mut probe, mut step) = (from.min(count), from.min(count), 1);
    while probe < count {
        match compare_keys(leaf_key(page.record(probe)), key) {
            Ordering::Less => {
                low = probe + 1;
                probe += step;
                step *= 2;
            }
            Ordering::Equal => return Ok(probe),
            Ordering::Greater => break,
        }
    }
    search_slots(page, key, low, probe.min(count))
}

/// Compares two keys as byte strings, as `a.cmp(b)` does, but cheaper for the short keys searches
/// meet most (an integer key is 5 bytes, an index entry over integers 10): the first eight bytes
/// of each, zero-padded, are compared as one big-endian integer, and only keys that agree there
/// and are both longer go on to a slice comparison of the rest. Zero padding keeps the order:
/// when the padded heads agree, the shorter key is a prefix of the longer one.
#[inline]
pub fn compare_keys(a: &[u8], b: &[u8]) -> Ordering {
    let (head_a, head_b) = (key_head(a), key_head(b));
    if head_a != head_b {
        return head_a.cmp(&head_b);
    }
    if a.len() <= 8 || b.len() <= 8 {
        return a.len().cmp(&b.len());
    }
    a[8..].cmp(&b[8..])
}

/// A key's first eight bytes, zero-padded, as a big-endian integer. Built in registers: a
/// zero-padded copy through memory (`copy_from_slice` into an array) compiles to a memcpy call
/// whose byte stores the 8-byte load then waits for (a store-forwarding stall, 57% of
/// `leaf_search_from` in a profile).
#[inline]
fn key_head(key: &[u8]) -> u64 {
    let n = key.len();
    if let Some(head) = key.first_chunk::<8>() {
        return u64::from_be_bytes(*head);
    }
    if let (Some(first), Some(last)) = (key.first_chunk::<4>(), key.last_chunk::<4>()) {
        // 4 to 7 bytes: two loads that overlap, the last four bytes shifted to their place.
        let (first, last) = (u32::from_be_bytes(*first), u32::from_be_bytes(*last));
        return (u64::from(first) << 32) | (u64::from(last) << (64 - 8 * n));
    }
    key.iter()
        .enumerate()
        .fold(0, |head, (i, &byte)| head | u64::from(byte) << (56 - 8 * i))
}

/// The slot a search result names (where the key is, or where it would go).
pub fn found_slot(found: Result<usize, usize>) -> usize {
    match found {
        Ok(slot) | Err(slot) => slot,
    }
}

/// The child of a branch page to follow for `key`: the last record whose key is `<= key` (or
/// `< key` when `strict`), record 0 standing for everything below record 1.
pub fn branch_search(page: Page<'_>, key: &[u8], strict: bool) -> usize {
    let (mut low, mut high) = (1, page.slot_count());
    while low < high {
        let mid = (low + high) / 2;
        let below = match compare_keys(branch_key(page.record(mid)), key) {
            Ordering::Less => true,
            Ordering::Equal => !strict,
            Ordering::Greater => false,
        };
        if below {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    low - 1
}

/// The shortest separator `s` with `left < s <= right` (suffix truncation of leaf separators).
pub fn shortest_separator(left: &[u8], right: &[u8]) -> Vec<u8> {
    let common = left.iter().zip(right).take_while(|(a, b)| a == b).count();
    right[..(common + 1).min(right.len())].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::page::{PageMut, PageType};

    proptest::proptest! {
        #[test]
        fn key_comparison_is_byte_string_order(
            a in proptest::collection::vec(proptest::prop_oneof![proptest::num::u8::ANY, 0..2u8], 0..20),
            b in proptest::collection::vec(proptest::prop_oneof![proptest::num::u8::ANY, 0..2u8], 0..20),
            shared in 0..12usize,
        ) {
            // Often a common prefix, so that heads agree and lengths and tails decide.
            let mut b = b;
            let prefix = &a[..shared.min(a.len())];
            b.splice(0..0, prefix.iter().copied());
            proptest::prop_assert_eq!(compare_keys(&a, &b), a.as_slice().cmp(b.as_slice()));
            proptest::prop_assert_eq!(compare_keys(&b, &a), b.as_slice().cmp(a.as_slice()));
            proptest::prop_assert_eq!(compare_keys(&a, &a), Ordering::Equal);
        }
    }

    #[test]
    fn separators_are_short_and_between() {
        assert_eq!(shortest_separator(b"apple", b"apricot"), b"apr".to_vec());
        assert_eq!(shortest_separator(b"a", b"ab"), b"ab".to_vec());
        assert_eq!(shortest_separator(b"", b"b"), b"b".to_vec());
    }

    #[test]
    fn branch_search_picks_the_covering_child() {
        let mut buf = vec![0u8; 4096];
        let mut page = PageMut::new(&mut buf);
        page.format(PageType::Branch, 1, 1, 1, 1);
        for (i, (key, child)) in [(&b""[..], 10), (b"g", 11), (b"p", 12)].iter().enumerate() {
            page.insert(i, &encode_branch(key, *child)).unwrap();
        }
        let view = page.view();
        assert_eq!(branch_search(view, b"a", false), 0);
        assert_eq!(branch_search(view, b"g", false), 1);
        assert_eq!(branch_search(view, b"g", true), 0);
        assert_eq!(branch_search(view, b"z", false), 2);
    }

    #[test]
    fn galloping_search_agrees_with_binary_search_for_ascending_keys() {
        let mut buf = vec![0u8; 8192];
        let mut page = PageMut::new(&mut buf);
        page.format(PageType::Leaf, 1, 1, 1, 1);
        let stored: Vec<u32> = (0..300).map(|i| i * 3 + 1).collect();
        for (slot, n) in stored.iter().enumerate() {
            let record = encode_leaf(&n.to_be_bytes(), StoredValue::Inline(b"v"));
            page.insert(slot, &record).unwrap();
        }
        let view = page.view();
        for gap in [1, 2, 3, 5, 40, 1000] {
            let mut from = 0;
            for n in (0..1000u32).step_by(gap) {
                let key = n.to_be_bytes();
                let found = leaf_search_from(view, &key, from);
                assert_eq!(found, leaf_search(view, &key), "key {n} from slot {from}");
                from = found_slot(found);
            }
        }
        assert_eq!(leaf_search_from(view, &1u32.to_be_bytes(), 0), Ok(0));
        assert_eq!(
            leaf_search_from(view, &5000u32.to_be_bytes(), 299),
            Err(300)
        );
        assert_eq!(
            leaf_search_from(view, &5000u32.to_be_bytes(), 300),
            Err(300)
        );
    }

    #[test]
    fn leaf_records_round_trip() {
        let inline = encode_leaf(b"key", StoredValue::Inline(b"value"));
        assert_eq!(leaf_key(&inline), b"key");
        assert_eq!(leaf_value(&inline), StoredValue::Inline(b"value"));
        let far = encode_leaf(
            b"k",
            StoredValue::Overflow {
                len: 70000,
                first: 9,
            },
        );
        assert_eq!(
            leaf_value(&far),
            StoredValue::Overflow {
                len: 70000,
                first: 9
            }
        );
        assert!(leaf_record_is_well_formed(&far));
        assert!(!leaf_record_is_well_formed(&far[..far.len() - 1]));
    }
}
