"""Build Google's `deduplicate-text-datasets` (the Rust suffix-array program datatrove's exact-substring
pipeline calls between its stages 2 and 3) from a checkout the user provides, offline.

The program's Cargo.toml asks crates.io for zstd 0.5, crossbeam 0.3, filebuffer 0.4 and clap 3, which
a machine without crates.io cannot fetch. It calls nothing from zstd, only `crossbeam::scope` (0.3's
scoped threads, whose join handles may outlive the closure) and `filebuffer::FileBuffer::open` (a
read-only memory map, used as `&[u8]`), and clap's derive, whose 3.x attributes clap 4 still reads.
So the build copies the checkout to `benchmarks/.venvs/dtd-build/` (ignored by git), writes three
small stand-in crates with exactly those APIs (on std threads and `mmap(2)`), points the manifest at
them and at clap 4, and builds with `cargo build --release --offline` against Debian's packaged
crates (`/usr/share/cargo/registry`: `apt-get install librust-clap-dev librust-clap-derive-dev`).
The program's own sources (`src/main.rs`, `src/table.rs`) are compiled unchanged; their SHA-256 is
printed so a run names what it measured. Nothing of the program is kept in this repository.

Usage: python benchmarks/_dtd_build.py DTD_CHECKOUT   (prints the binary's path)
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import _venv

BUILD = _venv.VENVS / "dtd-build"
REGISTRY = Path("/usr/share/cargo/registry")
SOURCES = ("src/main.rs", "src/table.rs")

CROSSBEAM = '''//! crossbeam 0.3's `scope`: handles may outlive the closure; `scope` joins every thread on return.
use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

type Thread = Arc<Mutex<Option<JoinHandle<()>>>>;

pub struct Scope<'a> {
    threads: RefCell<Vec<Thread>>,
    _env: PhantomData<&'a ()>,
}

pub struct ScopedJoinHandle<T> {
    thread: Thread,
    result: Arc<Mutex<Option<T>>>,
}

fn finish(thread: &Thread) {
    let handle = thread.lock().unwrap().take();
    if let Some(h) = handle {
        if let Err(e) = h.join() {
            std::panic::resume_unwind(e);
        }
    }
}

impl<T> ScopedJoinHandle<T> {
    pub fn join(self) -> T {
        finish(&self.thread);
        let value = self.result.lock().unwrap().take();
        value.expect("scoped thread left no result")
    }
}

impl<'a> Scope<'a> {
    pub fn spawn<F, T>(&self, f: F) -> ScopedJoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'a,
        T: Send + 'a,
    {
        let result = Arc::new(Mutex::new(None));
        let out = Arc::clone(&result);
        let job: Box<dyn FnOnce() + Send + 'a> = Box::new(move || {
            let value = f();
            *out.lock().unwrap() = Some(value);
        });
        // SAFETY: the scope joins every thread before the borrows of 'a end (on unwinding too, in Drop).
        let job: Box<dyn FnOnce() + Send + 'static> = unsafe { std::mem::transmute(job) };
        let thread: Thread = Arc::new(Mutex::new(Some(std::thread::spawn(job))));
        self.threads.borrow_mut().push(Arc::clone(&thread));
        ScopedJoinHandle { thread, result }
    }

    fn join_all(&self) {
        let threads: Vec<Thread> = self.threads.borrow_mut().drain(..).collect();
        for t in threads.iter() {
            finish(t);
        }
    }
}

impl<'a> Drop for Scope<'a> {
    fn drop(&mut self) {
        self.join_all();
    }
}

pub fn scope<'a, F, R>(f: F) -> R
where
    F: FnOnce(&Scope<'a>) -> R,
{
    let scope = Scope { threads: RefCell::new(Vec::new()), _env: PhantomData };
    let r = f(&scope);
    scope.join_all();
    r
}
'''

FILEBUFFER = '''//! filebuffer 0.4's `FileBuffer::open` + `Deref<Target = [u8]>`: a read-only memory map of a file.
use std::fs::File;
use std::io;
use std::ops::Deref;
use std::os::unix::io::AsRawFd;
use std::path::Path;

extern "C" {
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, offset: i64) -> *mut u8;
    fn munmap(addr: *mut u8, len: usize) -> i32;
}
const PROT_READ: i32 = 1;
const MAP_PRIVATE: i32 = 2;

pub struct FileBuffer {
    ptr: *mut u8,
    len: usize,
}

unsafe impl Send for FileBuffer {}
unsafe impl Sync for FileBuffer {}

impl FileBuffer {
    pub fn open<P: AsRef<Path>>(path: P) -> io::Result<FileBuffer> {
        let file = File::open(path)?;
        let len = file.metadata()?.len() as usize;
        if len == 0 {
            return Ok(FileBuffer { ptr: std::ptr::null_mut(), len: 0 });
        }
        let ptr = unsafe { mmap(std::ptr::null_mut(), len, PROT_READ, MAP_PRIVATE, file.as_raw_fd(), 0) };
        if ptr as isize == -1 {
            return Err(io::Error::last_os_error());
        }
        Ok(FileBuffer { ptr, len })
    }
}

impl Deref for FileBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for FileBuffer {
    fn drop(&mut self) {
        if self.len > 0 {
            unsafe { munmap(self.ptr, self.len) };
        }
    }
}
'''

ZSTD = "//! Empty: the program names the crate (`extern crate zstd`) but calls none of it.\n"

DEPENDENCIES = '''[dependencies]
zstd = { path = "shims/zstd" }
crossbeam = { path = "shims/crossbeam" }
filebuffer = { path = "shims/filebuffer" }
clap = { version = "4", features = ["derive"] }
'''

CARGO_CONFIG = f'''[source.crates-io]
replace-with = "debian"
[source.debian]
directory = "{REGISTRY}"
'''


class BuildError(RuntimeError):
    """The program cannot be built here (say why in one line)."""


def sources_sha256(checkout: Path) -> dict[str, str]:
    """SHA-256 (16 hex digits) of the program's own sources, as compiled."""
    return {rel: hashlib.sha256((checkout / rel).read_bytes()).hexdigest()[:16] for rel in SOURCES}


def _crate(root: Path, name: str, version: str, lib: str) -> None:
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "Cargo.toml").write_text(f'[package]\nname = "{name}"\nversion = "{version}"\nedition = "2021"\n')
    (root / "src" / "lib.rs").write_text(lib)


def build(checkout: Path, quiet: bool = True) -> Path:
    """The release binary built from `checkout` (rebuilt only when its sources changed)."""
    for rel in ("Cargo.toml", *SOURCES):
        if not (checkout / rel).is_file():
            raise BuildError(f"{checkout} is not a deduplicate-text-datasets checkout (no {rel})")
    if shutil.which("cargo") is None:
        raise BuildError("cargo is not on PATH (a Rust toolchain is needed to build the program)")
    if not (REGISTRY / "clap-4.0.32").exists() and not any(REGISTRY.glob("clap-4.*")):
        raise BuildError(f"no clap 4 in {REGISTRY} (apt-get install librust-clap-dev librust-clap-derive-dev)")
    manifest = (checkout / "Cargo.toml").read_text()
    if "[dependencies]" not in manifest:
        raise BuildError(f"{checkout}/Cargo.toml has no [dependencies] section")
    BUILD.mkdir(parents=True, exist_ok=True)
    (BUILD / "src").mkdir(exist_ok=True)
    for rel in SOURCES:
        data = (checkout / rel).read_bytes()
        if not (BUILD / rel).exists() or (BUILD / rel).read_bytes() != data:
            (BUILD / rel).write_bytes(data)
    # the [dependencies] table replaced, every other table ([profile.*], [[bin]], ...) kept
    table = re.compile(r"^\[dependencies\][^\n]*\n(?:(?!\[).*\n?)*", re.M)
    rewritten = table.sub(lambda _: DEPENDENCIES + "\n", manifest, count=1)
    if not re.search(r"^edition\s*=", rewritten.split("[dependencies]")[0], re.M):  # the 2018+ path rules
        rewritten = rewritten.replace("[package]", '[package]\nedition = "2021"', 1)
    (BUILD / "Cargo.toml").write_text(rewritten)
    _crate(BUILD / "shims" / "crossbeam", "crossbeam", "0.3.99", CROSSBEAM)
    _crate(BUILD / "shims" / "filebuffer", "filebuffer", "0.4.99", FILEBUFFER)
    _crate(BUILD / "shims" / "zstd", "zstd", "0.5.99", ZSTD)
    (BUILD / ".cargo").mkdir(exist_ok=True)
    (BUILD / ".cargo" / "config.toml").write_text(CARGO_CONFIG)
    p = subprocess.run(["cargo", "build", "--release", "--offline", "-q"], cwd=BUILD, capture_output=quiet, text=True)
    if p.returncode:
        raise BuildError("cargo build failed:\n" + (p.stderr or "")[-3000:])
    exe = BUILD / "target" / "release" / "dedup_dataset"
    if not exe.exists():
        raise BuildError(f"cargo built no {exe}")
    return exe


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.rsplit("Usage: ", 1)[1])
    try:
        print(build(Path(sys.argv[1]), quiet=False))
        print(sources_sha256(Path(sys.argv[1])))
    except BuildError as e:
        sys.exit(str(e))
