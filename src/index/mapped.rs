//! Arrays that live either on the heap or inside a mapped index image, and the private
//! (copy-on-write) file mapping they point into. The only place the index views raw bytes as
//! typed arrays; the safety argument for each step is written beside it.
//!
//! An image file is mapped `MAP_PRIVATE`, readable and writable: reads see the file's pages (the
//! OS page cache, shared, nothing copied at open), and the first write to a page makes the kernel
//! copy that page for this process alone, so the file itself never changes. ALEX then mutates
//! mapped nodes in place like heap nodes; a node that is rebuilt (expansion, split) gets a heap
//! array and leaves its mapped bytes unused.
//!
//! An open about to write into most of an image reads the file into anonymous memory instead
//! (`Mapping::anonymous`, `Alex::read_image`): the arrays are cut from it the same way, and
//! writes to it copy nothing.

use std::fs::File;
use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Element types whose every bit pattern is a valid value and which have no padding, so a
/// byte range of the right size and alignment can be viewed as an array of them. Implemented for
/// the fixed-width integers and floats the index stores, and for slots made of them.
///
/// # Safety
/// Implementors must be `Copy`, have no padding bytes, no invalid bit patterns, and no pointers.
/// A type used as an ALEX key must also be 8 bytes with an alignment of at most 8 (a slot is a key
/// and a `u64` payload, with no padding between or after them).
pub unsafe trait Plain: Copy + Send + Sync + 'static {}
// SAFETY: primitive integers and floats: no padding, every bit pattern valid, no pointers.
unsafe impl Plain for u32 {}
// SAFETY: as above.
unsafe impl Plain for u64 {}
// SAFETY: as above.
unsafe impl Plain for i64 {}
// SAFETY: as above (every bit pattern is some f64, NaNs included).
unsafe impl Plain for f64 {}
// SAFETY: as above.
unsafe impl Plain for f32 {}

/// The unit of promotion to anonymous memory: one transparent huge page.
pub(crate) const CHUNK: usize = 2 << 20;

/// A file mapped private and writable (see the module comment), or anonymous memory an image
/// was read into ([`Mapping::anonymous`]), at an address aligned to [`CHUNK`]. Arrays keep it
/// alive through an `Arc`; it is unmapped when the last one goes.
///
/// File pages cannot be transparent huge pages, and an index read through 4 KiB pages pays a
/// TLB miss on nearly every node it visits. So after open, the engine's maintenance thread
/// **promotes** the mapping chunk by chunk ([`Mapping::promote`]): each 2 MiB of the image is
/// copied into an anonymous huge page which is then moved (`mremap`) over the same addresses.
/// Every array keeps its address and sees the same bytes; only the pages under it change.
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
    /// Whole chunks promoted so far (from the start; the partial last chunk stays a file page).
    promoted: AtomicUsize,
}

// SAFETY: the mapping is plain memory owned by this value; access to its bytes goes through
// `Arr`s (which carry their own exclusivity argument) or `bytes()` before arrays are handed out.
unsafe impl Send for Mapping {}
// SAFETY: as above; `promote` needs `&mut` access to every array of the mapping (see there).
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps the whole file at `path` (copy-on-write; nothing is read yet), on a [`CHUNK`]
    /// boundary.
    pub(crate) fn open(path: &Path) -> std::io::Result<Arc<Mapping>> {
        use std::os::fd::AsRawFd;
        let file = File::open(path)?;
        let len = file.metadata()?.len() as usize;
        if len == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "empty image file",
            ));
        }
        // A private mapping: writes through it never reach the file. The file is written once,
        // fsynced and renamed into place before it is ever mapped, and never modified afterwards
        // (a new image is a new file), so its contents cannot change under the mapping;
        // truncation by someone else would be the one way to fault (SIGBUS), and nothing in
        // Augur truncates a published image.
        let p = map_aligned(len, libc::MAP_PRIVATE, file.as_raw_fd())?;
        Ok(Arc::new(Mapping {
            ptr: NonNull::new(p as *mut u8).expect("mmap returned a non-null address"),
            len,
            promoted: AtomicUsize::new(0),
        }))
    }

    /// Anonymous private memory of `len` bytes (zero-filled, readable and writable) on a
    /// [`CHUNK`] boundary, advised to be transparent huge pages, to read an image file into
    /// (`Alex::read_image`) through [`Mapping::bytes_mut`] before any array is cut from it.
    /// Nothing in it is a file page, so there is nothing to promote.
    pub(crate) fn anonymous(len: usize) -> std::io::Result<Mapping> {
        if len == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "an empty region",
            ));
        }
        let p = map_aligned(len, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)?;
        let m = Mapping {
            ptr: NonNull::new(p as *mut u8).expect("mmap returned a non-null address"),
            len,
            promoted: AtomicUsize::new(len / CHUNK),
        };
        m.advise(libc::MADV_HUGEPAGE);
        Ok(m)
    }

    /// The bytes, writable: `&mut self` (a mapping no `Arc`, and so no array, shares yet) is
    /// what makes this exclusive. For filling an [`Mapping::anonymous`] region.
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: `ptr..ptr+len` is this live mapping, readable and writable, and `&mut self`
        // excludes every other view of it (arrays are cut only from an `Arc<Mapping>`).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The mapped bytes, read-only. Only valid to call before arrays are handed out (the image
    /// loader parses and checksums through this view first), or for ranges no array covers.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr..ptr+len` is this live mapping, readable.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// Asks the kernel to map every page of the image now (`MADV_POPULATE_READ`, Linux 5.14+),
    /// read-only so that nothing is copied: the page-table work a first touch would otherwise
    /// do, done in one call. Ignored where unsupported.
    pub(crate) fn populate(&self) {
        self.advise(libc::MADV_POPULATE_READ);
    }

    /// `madvise` over the whole mapping; whether the kernel took the advice.
    fn advise(&self, advice: libc::c_int) -> bool {
        // SAFETY: the range is exactly this live mapping (private and writable); the advices
        // given (populate, huge pages) only fault its pages in, as if read, or choose their
        // size, leaving their contents as they are.
        unsafe { libc::madvise(self.ptr.as_ptr() as *mut libc::c_void, self.len, advice) == 0 }
    }

    /// Maps the next chunk to promote into the page tables ([`prefault`]: read from the disk
    /// if need be), so that [`Mapping::promote`], called under the index's write lock, copies
    /// from memory. Needs no lock: it changes no byte.
    pub(crate) fn prefault_next_chunk(&self) {
        let i = self.promoted.load(Ordering::Relaxed);
        if i < self.len / CHUNK {
            // SAFETY: chunk `i` lies inside this live, readable mapping (i < len / CHUNK).
            prefault(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(i * CHUNK), CHUNK) });
        }
    }

    /// Whether whole chunks remain to be promoted.
    pub(crate) fn promotion_pending(&self) -> bool {
        self.promoted.load(Ordering::Relaxed) < self.len / CHUNK
    }

    /// Promotes the next chunk: `page`'s huge page gets the chunk's current bytes and is moved
    /// over the chunk's addresses. Returns false when every whole chunk is promoted already.
    ///
    /// The caller must hold every array of this mapping exclusively for the call (the engine
    /// holds the index's write lock: the index owns the arrays, so `&mut` to it is `&mut` to
    /// them): no byte of the chunk may be written between the copy and the move. Readers are
    /// excluded too, though they would be safe: the bytes at every address stay the same.
    pub(crate) fn promote(&self, page: HugePage) -> std::io::Result<bool> {
        let i = self.promoted.load(Ordering::Relaxed);
        if i >= self.len / CHUNK {
            return Ok(false);
        }
        // SAFETY: chunk `i` lies inside the mapping (i < len / CHUNK).
        let at = unsafe { self.ptr.as_ptr().add(i * CHUNK) };
        // SAFETY: `page` is a private, writable anonymous CHUNK-sized region (not aliased by
        // anything), `at..at+CHUNK` is readable; the caller keeps writers out (above).
        unsafe { std::ptr::copy_nonoverlapping(at, page.ptr.as_ptr(), CHUNK) };
        // SAFETY: moves the page's region over `at..at+CHUNK`, which this mapping owns; the
        // kernel replaces the file pages there atomically (under the address-space lock), and
        // the contents are equal, so any concurrent reader sees the same bytes either way.
        let r = unsafe {
            libc::mremap(
                page.ptr.as_ptr() as *mut libc::c_void,
                CHUNK,
                CHUNK,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                at as *mut libc::c_void,
            )
        };
        if r == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        std::mem::forget(page);
        self.promoted.store(i + 1, Ordering::Relaxed);
        Ok(true)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the range mapped in `open` (its promoted chunks now anonymous pages at the
        // same addresses), unmapped once, after the last array went.
        unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len) };
    }
}

/// Reserves `len` bytes of address space starting on a [`CHUNK`] boundary (inaccessible until
/// mapped over with MAP_FIXED).
fn reserve_aligned(len: usize) -> std::io::Result<*mut u8> {
    // SAFETY: an anonymous, inaccessible reservation; nothing else refers to it.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len + CHUNK,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    let raw = raw as usize;
    let base = raw.next_multiple_of(CHUNK);
    let page = 4096;
    let end = base + len.next_multiple_of(page);
    // SAFETY: trimming the parts of our own reservation outside base..end.
    unsafe {
        if base > raw {
            libc::munmap(raw as *mut libc::c_void, base - raw);
        }
        if raw + len + CHUNK > end {
            libc::munmap(end as *mut libc::c_void, raw + len + CHUNK - end);
        }
    }
    Ok(base as *mut u8)
}

/// `len` bytes mapped readable and writable with `flags` (`MAP_PRIVATE`, with
/// `MAP_ANONYMOUS` and `fd` -1 for zero-filled memory) at an address aligned to [`CHUNK`]: a
/// reservation from [`reserve_aligned`] mapped over.
fn map_aligned(len: usize, flags: libc::c_int, fd: libc::c_int) -> std::io::Result<*mut libc::c_void> {
    let base = reserve_aligned(len)?;
    // SAFETY: `base` starts a reserved range of at least `len` bytes that this function owns;
    // MAP_FIXED replaces that reservation with the new mapping.
    let p = unsafe {
        libc::mmap(
            base as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags | libc::MAP_FIXED,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        let e = std::io::Error::last_os_error();
        // SAFETY: our reservation, not handed to anyone.
        unsafe { libc::munmap(base as *mut libc::c_void, len) };
        return Err(e);
    }
    Ok(p)
}

/// An anonymous, private, writable [`CHUNK`] on a CHUNK boundary, advised to be a transparent
/// huge page and touched so the fault (and the kernel's zeroing) happens here, outside any lock.
pub(crate) struct HugePage {
    ptr: NonNull<u8>,
}

// SAFETY: plain memory owned by this value alone.
unsafe impl Send for HugePage {}

impl HugePage {
    pub(crate) fn new() -> std::io::Result<HugePage> {
        let p = map_aligned(CHUNK, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)?;
        // SAFETY: advice and a one-byte write on the region just mapped, which we own.
        unsafe {
            libc::madvise(p, CHUNK, libc::MADV_HUGEPAGE);
            std::ptr::write_volatile(p as *mut u8, 0);
        }
        Ok(HugePage {
            ptr: NonNull::new(p as *mut u8).expect("mmap returned a non-null address"),
        })
    }
}

impl Drop for HugePage {
    fn drop(&mut self) {
        // SAFETY: the region mapped in `new`, not moved (a moved page is forgotten).
        unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, CHUNK) };
    }
}

/// An array owned on the heap or lying inside a [`Mapping`]. Derefs to a slice either way; the
/// representation is the same pointer and length a `Box<[T]>` has, so reading it costs nothing
/// extra.
pub(crate) struct Arr<T: Plain> {
    ptr: NonNull<T>,
    len: usize,
    /// `None`: the pointer came from a `Box<[T]>` this array owns. `Some`: it points into that
    /// mapping, which this array keeps alive.
    map: Option<Arc<Mapping>>,
}

// SAFETY: an `Arr` is an exclusive owner of its elements, like `Box<[T]>` (mapped arrays cover
// disjoint ranges, checked by `ArrayCutter`), and the `Mapping` it shares is only kept alive,
// never accessed through the `Arc`.
unsafe impl<T: Plain> Send for Arr<T> {}
// SAFETY: shared access only reads (`Deref`); writes need `&mut self`.
unsafe impl<T: Plain> Sync for Arr<T> {}

impl<T: Plain> Arr<T> {
    /// Whether the elements lie in a mapped image (rather than on the heap).
    pub(crate) fn is_mapped(&self) -> bool {
        self.map.is_some()
    }
}

impl<T: Plain> From<Vec<T>> for Arr<T> {
    fn from(v: Vec<T>) -> Self {
        Arr::from(v.into_boxed_slice())
    }
}

impl<T: Plain> From<Box<[T]>> for Arr<T> {
    fn from(b: Box<[T]>) -> Self {
        let len = b.len();
        let raw = Box::into_raw(b) as *mut T;
        Arr {
            // A Box pointer is never null (dangling but non-null for an empty slice).
            ptr: NonNull::new(raw).unwrap_or(NonNull::dangling()),
            len,
            map: None,
        }
    }
}

impl<T: Plain> Drop for Arr<T> {
    fn drop(&mut self) {
        if self.map.is_none() {
            // SAFETY: a heap array's pointer and length came from `Box::into_raw` of a
            // `Box<[T]>` of exactly this length (`From<Box<[T]>>`), and are dropped once.
            unsafe {
                drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    self.ptr.as_ptr(),
                    self.len,
                )));
            }
        }
    }
}

impl<T: Plain> Deref for Arr<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` is valid and aligned for `len` initialized elements: a live Box
        // allocation, or a checked, aligned range of a mapping this array keeps alive (every
        // bit pattern is a valid `T`: `Plain`).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Plain> DerefMut for Arr<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as `deref`; no other array covers these elements (heap: sole owner; mapped:
        // ranges are disjoint), and `&mut self` is exclusive. Writes to a mapped page are
        // private to the process (copy-on-write).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

/// Hands out arrays from a mapping, each at most once: ranges must be in bounds, aligned for
/// their type and disjoint from every range handed out before (so no two arrays alias).
pub(crate) struct ArrayCutter {
    map: Arc<Mapping>,
    base: *mut u8,
    /// Ranges handed out, (start, end) in bytes.
    taken: Vec<(usize, usize)>,
}

impl ArrayCutter {
    pub(crate) fn new(map: Arc<Mapping>) -> ArrayCutter {
        let base = map.ptr.as_ptr();
        ArrayCutter {
            map,
            base,
            taken: Vec::new(),
        }
    }

    /// The array of `len` elements at byte offset `off`, or `None` when that range is out of
    /// bounds or misaligned. Overlap with earlier ranges is checked by [`ArrayCutter::finish`].
    pub(crate) fn take<T: Plain>(&mut self, off: usize, len: usize) -> Option<Arr<T>> {
        let bytes = len.checked_mul(std::mem::size_of::<T>())?;
        let end = off.checked_add(bytes)?;
        if end > self.map.len() || !(self.base as usize + off).is_multiple_of(std::mem::align_of::<T>()) {
            return None;
        }
        if len == 0 {
            return Some(Arr::from(Vec::new()));
        }
        self.taken.push((off, end));
        // SAFETY: `off + bytes <= len` of the mapping, so the pointer stays inside it.
        let p = unsafe { self.base.add(off) } as *mut T;
        Some(Arr {
            ptr: NonNull::new(p)?,
            len,
            map: Some(self.map.clone()),
        })
    }

    /// Checks that no two ranges handed out overlap. The caller must drop every array taken
    /// (without using it) when this fails.
    pub(crate) fn finish(mut self) -> bool {
        self.taken.sort_unstable();
        self.taken.windows(2).all(|w| w[0].1 <= w[1].0)
    }
}

/// Asks the kernel to map the pages under `b` now (`MADV_POPULATE_READ`, Linux 5.14+, read-only
/// so nothing is copied): one call instead of a fault per page for a pass that is about to read
/// all of `b`. Ignored where unsupported, or where part of the range is not a mapping.
pub(crate) fn prefault(b: &[u8]) {
    const PAGE: usize = 4096;
    if b.is_empty() {
        return;
    }
    let start = b.as_ptr() as usize / PAGE * PAGE;
    let end = (b.as_ptr() as usize + b.len()).next_multiple_of(PAGE);
    // SAFETY: an advice over the pages that hold `b` (and whatever shares its first and last
    // page); it only faults mapped pages in, as a read would, and changes no byte. An error
    // (some page not mapped) is ignored: the pass then faults as it reads.
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_POPULATE_READ);
    }
}

/// Tells the kernel that `file` is about to be read from start to end (a larger read-ahead
/// when it comes from the disk). Advice only: ignored if refused.
pub(crate) fn advise_sequential(file: &File) {
    use std::os::fd::AsRawFd;
    // SAFETY: advice on an open file descriptor borrowed for the call; it changes no data.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL);
    }
}

/// The bytes of a plain array (for writing an image).
pub(crate) fn as_bytes<T: Plain>(v: &[T]) -> &[u8] {
    // SAFETY: `T: Plain` has no padding, so every byte of the slice is initialized; the byte
    // view has the same address and `size_of_val` length and lives as long as `v`.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// A plain value read from the first `size_of::<T>()` bytes of `b` (any alignment).
pub(crate) fn read_plain<T: Plain>(b: &[u8]) -> Option<T> {
    if b.len() < std::mem::size_of::<T>() {
        return None;
    }
    // SAFETY: `b` holds at least `size_of::<T>()` initialized bytes; an unaligned read copies
    // them, and every bit pattern is a valid `T` (`Plain`).
    Some(unsafe { std::ptr::read_unaligned(b.as_ptr() as *const T) })
}
