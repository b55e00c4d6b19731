//! The binary's relative relocations are packed (`DT_RELR`, `build.rs`) exactly when
//! the C library it links against can load them: otherwise the loader reads all
//! 110,000 of them (2.6 MB) at every start and they stay resident
//! (docs/performance.md, "2026-12-02, fifth"), or, packed without support, the binary
//! would not start at all.
#![cfg(all(target_os = "linux", target_env = "gnu", target_pointer_width = "64", target_endian = "little"))]

// The same check the build makes, so the test asks what the build asked.
#[path = "../build.rs"]
#[allow(dead_code)]
mod build_script;

/// `PT_DYNAMIC`: the program header of the dynamic section.
const PT_DYNAMIC: u32 = 2;
/// The dynamic tags read here (elf.h).
const DT_NULL: u64 = 0;
const DT_RELR: u64 = 36;
const DT_RELACOUNT: u64 = 0x6fff_fff9;

fn u16_at(elf: &[u8], at: usize) -> usize {
    u16::from_le_bytes(elf[at..at + 2].try_into().unwrap()) as usize
}

fn u64_at(elf: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(elf[at..at + 8].try_into().unwrap())
}

/// The (tag, value) pairs of a 64-bit little-endian ELF file's dynamic section.
fn dynamic_entries(elf: &[u8]) -> Vec<(u64, u64)> {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    let (table, size, count) = (u64_at(elf, 0x20) as usize, u16_at(elf, 0x36), u16_at(elf, 0x38));
    let dynamic = (0..count)
        .map(|i| table + i * size)
        .find(|&header| u32::from_le_bytes(elf[header..header + 4].try_into().unwrap()) == PT_DYNAMIC)
        .expect("a dynamically linked binary has a dynamic section");
    let (offset, length) = (u64_at(elf, dynamic + 8) as usize, u64_at(elf, dynamic + 32) as usize);
    elf[offset..offset + length].chunks_exact(16).map(|entry| (u64_at(entry, 0), u64_at(entry, 8))).take_while(|(tag, _)| *tag != DT_NULL).collect()
}

#[test]
fn the_binary_packs_its_relative_relocations_exactly_when_glibc_can_load_them() {
    let elf = std::fs::read(env!("CARGO_BIN_EXE_hitl-bridge")).expect("the built binary");
    let entries = dynamic_entries(&elf);
    let packed = entries.iter().any(|(tag, _)| *tag == DT_RELR);
    let unpacked = entries.iter().find(|(tag, _)| *tag == DT_RELACOUNT).map_or(0, |(_, count)| *count);
    if build_script::c_library_loads_packed_relocations() {
        assert!(packed, "glibc here loads packed relocations, but the binary has no DT_RELR");
        assert!(unpacked < 1_000, "{unpacked} relative relocations left unpacked");
    } else {
        assert!(!packed, "the binary has packed relocations that this system's glibc cannot load");
        assert!(unpacked > 1_000, "only {unpacked} relative relocations: has the binary stopped being position-independent?");
    }
}
