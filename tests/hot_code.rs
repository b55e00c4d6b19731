//! `link/hot-code.ld`, the list of functions a bridge runs that the release link places
//! together (build.rs), is read by both linkers a release may be linked with: Rust's
//! own lld and GNU ld. The test suite's builds are debug builds, which skip the script,
//! so without this a broken list would first fail the Docker image's build. A small
//! program linked with the script must run, and the functions of the standard library
//! that the list names (a bridge runs them too) must land in the hot section, ahead
//! of the rest of the code: the patterns still match across crate hashes.
#![cfg(all(target_os = "linux", target_pointer_width = "64", target_endian = "little"))]

use std::path::Path;
use std::process::Command;

#[path = "support/elf.rs"]
mod elf;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/link/hot-code.ld");

/// Links a small program with the script (and `linker_args`), runs it, and returns the
/// hot section's size and whether it lies before `.text`.
fn link_with_script(linker_args: &[&str]) -> (u64, bool) {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = dir.path().join("main.rs");
    std::fs::write(&source, "fn main() { let words: Vec<String> = std::env::args().collect(); println!(\"{}\", words.len()); }\n").unwrap();
    let program = dir.path().join("program");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let mut command = Command::new(rustc);
    command.args(["--edition", "2024", "-O", "-C", "symbol-mangling-version=v0", "-C"]).arg(format!("link-arg=-Wl,-T,{SCRIPT}"));
    for arg in linker_args {
        command.args(["-C", arg]);
    }
    let built = command.arg("-o").arg(&program).arg(&source).output().expect("run rustc");
    assert!(built.status.success(), "the link with {SCRIPT} failed:\n{}", String::from_utf8_lossy(&built.stderr));
    let ran = Command::new(&program).arg("one").output().expect("run the linked program");
    assert_eq!(String::from_utf8_lossy(&ran.stdout), "2\n", "the program linked with the script does not run right");
    let found = elf::sections(&std::fs::read(&program).unwrap());
    let address = |name: &str| found.iter().find(|(n, _, _)| n == name).map(|(_, address, size)| (*address, *size));
    let (text, _) = address(".text").expect("a .text section");
    let (hot, size) = address(".text.hot").unwrap_or_else(|| panic!("no .text.hot section in a program linked with {SCRIPT}"));
    (size, hot < text)
}

fn assert_hot_first(linker_args: &[&str]) {
    let (size, first) = link_with_script(linker_args);
    // The standard library's start-up and printing alone are several KiB of it.
    assert!(size > 4096, "the hot section holds only {size} bytes: the list's patterns no longer match the standard library's functions");
    assert!(first, "the hot section is not ahead of the rest of the code");
}

#[test]
fn rust_lld_reads_the_list_and_places_its_functions_first() {
    assert_hot_first(&[]);
}

#[test]
fn gnu_ld_reads_the_list_too() {
    if !Path::new("/usr/bin/ld.bfd").exists() {
        eprintln!("GNU ld is not installed here; skipped");
        return;
    }
    assert_hot_first(&["link-arg=-fuse-ld=bfd"]);
}
