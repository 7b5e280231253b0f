//! Arrays that live either on the heap or inside a mapped index image, and the private
//! (copy-on-write) file mapping they point into. The only place the index views raw bytes as
//! typed arrays; the safety argument for each step is written beside it.
//!
//! An image file is mapped `MAP_PRIVATE`, readable and writable: reads see the file's pages (the
//! OS page cache, shared, nothing copied at open), and the first write to a page makes the kernel
//! copy that page for this process alone, so the file itself never changes. ALEX then mutates
//! mapped nodes in place like heap nodes; a node that is rebuilt (expansion, split) gets a heap
//! array and leaves its mapped bytes unused.

use std::fs::File;
use std::ops::{Deref, DerefMut};
use std::path::Path;
use std::ptr::NonNull;
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

/// A file mapped private and writable (see the module comment). Arrays keep it alive through
/// an `Arc`; it is unmapped when the last one goes.
pub(crate) struct Mapping {
    map: memmap2::MmapMut,
}

impl Mapping {
    /// Maps the whole file at `path` (copy-on-write; nothing is read yet).
    pub(crate) fn open(path: &Path) -> std::io::Result<Arc<Mapping>> {
        let file = File::open(path)?;
        // SAFETY: a private mapping: writes through it never reach the file. The file is
        // written once, fsynced and renamed into place before it is ever mapped, and never
        // modified afterwards (a new image is a new file), so its contents cannot change under
        // the mapping; truncation by someone else would be the one way to fault (SIGBUS), and
        // nothing in Augur truncates a published image.
        let map = unsafe { memmap2::MmapOptions::new().map_copy(&file)? };
        Ok(Arc::new(Mapping { map }))
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The mapped bytes, read-only. Only valid to call before arrays are handed out (the image
    /// loader parses and checksums through this view first), or for ranges no array covers.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Asks the kernel to map every page of the image now (`MADV_POPULATE_READ`, Linux 5.14+),
    /// read-only so that nothing is copied: the page-table work a first touch would otherwise
    /// do, done in one call. Ignored where unsupported.
    pub(crate) fn populate(&self) {
        #[cfg(target_os = "linux")]
        {
            const MADV_POPULATE_READ: libc::c_int = 22;
            // SAFETY: the range is exactly this live mapping; the advice only maps pages in.
            unsafe {
                libc::madvise(
                    self.map.as_ptr() as *mut libc::c_void,
                    self.map.len(),
                    MADV_POPULATE_READ,
                );
            }
        }
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
        let base = map.map.as_ptr() as *mut u8;
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
