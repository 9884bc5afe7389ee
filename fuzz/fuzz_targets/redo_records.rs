//! A redo record's payload as recovery reads it from the log: decoding any bytes gives the page
//! changes or an error, and applying a decoded change to a page gives the page or an error —
//! never a panic (recovery must report a damaged log, not crash on it).
#![no_main]

use libfuzzer_sys::fuzz_target;
use steady_storage::page::{PageMut, PageType};
use steady_storage::redo;

const PAGE_SIZE: usize = 4096;

fuzz_target!(|payload: &[u8]| {
    let Ok(changes) = redo::decode(payload, PAGE_SIZE) else {
        return;
    };
    for change in changes {
        let mut page = vec![0u8; PAGE_SIZE];
        PageMut::new(&mut page).format(PageType::Leaf, change.space, change.page, 1, 0);
        let _ = redo::apply(&change.body, &mut page, 1 << 20);
    }
});
