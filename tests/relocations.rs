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

#[path = "support/elf.rs"]
mod elf;

/// The dynamic tags read here (elf.h).
const DT_RELR: u64 = 36;
const DT_RELACOUNT: u64 = 0x6fff_fff9;

#[test]
fn the_binary_packs_its_relative_relocations_exactly_when_glibc_can_load_them() {
    let elf = std::fs::read(env!("CARGO_BIN_EXE_hitl-bridge")).expect("the built binary");
    let entries = elf::dynamic_entries(&elf);
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
