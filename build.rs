//! Links the `hitl-bridge` binary with its relative relocations packed (`DT_RELR`)
//! where the toolchain and the C library support it.
//!
//! A position-independent binary carries one 24-byte relocation for every pointer in
//! its data (vtables, string tables: about 110,000 here, 2.6 MB), and the loader
//! reads them all at every start, so they were resident for the process's whole life.
//! Packed, they take a few kilobytes (docs/performance.md, "one request at a time",
//! the 2026-12-02 fifth section). The binary keeps its address randomization.
//!
//! Packed relocations need GNU ld 2.38 (or lld) to write them and glibc 2.36 to load
//! them; ld then records that the binary needs `GLIBC_ABI_DT_RELR`, so an older glibc
//! refuses it at start rather than running it wrongly. The flag is given only when the
//! C library this build links against provides that version, so a build on an older
//! system stays as it was.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    let env = |key: &str| std::env::var(key).unwrap_or_default();
    let linux_gnu = env("CARGO_CFG_TARGET_OS") == "linux" && env("CARGO_CFG_TARGET_ENV") == "gnu";
    // Cross-compiling, the C library this machine's `cc` finds is not the target's.
    let native = env("TARGET") == env("HOST");
    if linux_gnu && native && c_library_loads_packed_relocations() {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the glibc that the linker finds (`cc -print-file-name=libc.so.6`, the C
/// compiler Rust links with) defines the `GLIBC_ABI_DT_RELR` version.
pub(crate) fn c_library_loads_packed_relocations() -> bool {
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let Ok(found) = Command::new(compiler).arg("-print-file-name=libc.so.6").output() else { return false };
    let path = String::from_utf8_lossy(&found.stdout).trim().to_owned();
    // Without a directory, the compiler did not find the file and echoed its name.
    if !path.contains('/') {
        return false;
    }
    std::fs::read(&path).is_ok_and(|library| library.windows(b"GLIBC_ABI_DT_RELR".len()).any(|w| w == b"GLIBC_ABI_DT_RELR"))
}
