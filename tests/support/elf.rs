//! Reading a 64-bit little-endian ELF file's headers, for the tests that check how the
//! release binary is linked (`tests/relocations.rs`, `tests/hot_code.rs`): each test
//! includes this file on its own (`#[path]`), as the rest of `tests/support` has
//! nothing to do with ELF.

/// `SHT_NOBITS`, a section with no bytes in the file (.bss).
const SHT_NOBITS: u32 = 8;
/// `PT_DYNAMIC`: the program header of the dynamic section.
const PT_DYNAMIC: u32 = 2;
/// `DT_NULL`, the tag that ends the dynamic section.
const DT_NULL: u64 = 0;

fn u16_at(elf: &[u8], at: usize) -> usize {
    u16::from_le_bytes(elf[at..at + 2].try_into().unwrap()) as usize
}

fn u32_at(elf: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(elf[at..at + 4].try_into().unwrap())
}

fn u64_at(elf: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(elf[at..at + 8].try_into().unwrap())
}

fn assert_elf(elf: &[u8]) {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
}

/// (name, address, size) of each section that has bytes in the file.
#[allow(dead_code)]
pub fn sections(elf: &[u8]) -> Vec<(String, u64, u64)> {
    assert_elf(elf);
    let (table, size, count, names_index) = (u64_at(elf, 0x28) as usize, u16_at(elf, 0x3a), u16_at(elf, 0x3c), u16_at(elf, 0x3e));
    let header = |i: usize| table + i * size;
    let names = u64_at(elf, header(names_index) + 0x18) as usize;
    (0..count)
        .map(header)
        .filter(|&h| u32_at(elf, h + 4) != SHT_NOBITS)
        .map(|h| {
            let start = names + u32_at(elf, h) as usize;
            let end = start + elf[start..].iter().position(|&b| b == 0).expect("a section name ends");
            (String::from_utf8_lossy(&elf[start..end]).into_owned(), u64_at(elf, h + 0x10), u64_at(elf, h + 0x20))
        })
        .collect()
}

/// The (tag, value) pairs of the dynamic section, up to `DT_NULL`.
#[allow(dead_code)]
pub fn dynamic_entries(elf: &[u8]) -> Vec<(u64, u64)> {
    assert_elf(elf);
    let (table, size, count) = (u64_at(elf, 0x20) as usize, u16_at(elf, 0x36), u16_at(elf, 0x38));
    let dynamic =
        (0..count).map(|i| table + i * size).find(|&header| u32_at(elf, header) == PT_DYNAMIC).expect("a dynamically linked binary has a dynamic section");
    let (offset, length) = (u64_at(elf, dynamic + 8) as usize, u64_at(elf, dynamic + 32) as usize);
    elf[offset..offset + length].chunks_exact(16).map(|entry| (u64_at(entry, 0), u64_at(entry, 8))).take_while(|(tag, _)| *tag != DT_NULL).collect()
}
