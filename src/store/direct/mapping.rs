//! A read-only shared mapping of a whole file, placed on a 2 MiB boundary and marked for huge
//! pages, so that the kernel can map the file's large page-cache folios with one page-table
//! entry per 2 MiB (ext4 and other filesystems with large folios; elsewhere it maps 4 KiB
//! pages as usual). A point read then costs no page-table walk that misses the CPU caches.

use std::fs::File;
use std::os::fd::AsRawFd;

const HUGE: usize = 2 << 20;

pub(crate) struct Mapping {
    ptr: *const u8,
    len: usize,
}

// SAFETY: the mapping is read-only and lives until drop; sharing `&[u8]` views across threads
// is sound.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps all of `f` (which must not be empty).
    pub(crate) fn new(f: &File) -> std::io::Result<Mapping> {
        let len = f.metadata()?.len() as usize;
        if len == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "empty file"));
        }
        // SAFETY: reserve an address range one huge page larger than the file, map the file
        // over its first 2 MiB-aligned address with MAP_FIXED, and release the slack around it;
        // every call's result is checked.
        unsafe {
            let span = len + HUGE;
            let base = libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            let start = (base as usize).next_multiple_of(HUGE);
            let p = libc::mmap(
                start as *mut libc::c_void,
                len,
                libc::PROT_READ,
                libc::MAP_SHARED | libc::MAP_FIXED,
                f.as_raw_fd(),
                0,
            );
            if p == libc::MAP_FAILED {
                let e = std::io::Error::last_os_error();
                libc::munmap(base, span);
                return Err(e);
            }
            let head = start - base as usize;
            if head > 0 {
                libc::munmap(base, head);
            }
            let tail = span - head - len;
            if tail > 0 {
                libc::munmap((start + len) as *mut libc::c_void, tail);
            }
            // Advice only: a kernel without file huge pages ignores it.
            libc::madvise(p, len, libc::MADV_HUGEPAGE);
            Ok(Mapping {
                ptr: p as *const u8,
                len,
            })
        }
    }

    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr..ptr+len` is mapped readable until drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Brings `[from, to)` into the page tables (`MADV_POPULATE_READ`: pages not in the page
    /// cache are read from the disk; an I/O error comes back as an error, not SIGBUS).
    pub(crate) fn populate(&self, from: usize, to: usize) -> std::io::Result<()> {
        let to = to.min(self.len);
        if from >= to {
            return Ok(());
        }
        let start = from / 4096 * 4096;
        // SAFETY: the range lies inside the mapping; the advice only populates page tables.
        let r = unsafe {
            libc::madvise(
                self.ptr.add(start) as *mut libc::c_void,
                to - start,
                libc::MADV_POPULATE_READ,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `new` mapped.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len);
        }
    }
}
