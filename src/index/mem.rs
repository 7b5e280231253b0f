//! Memory advice for the index's large arrays.

/// Asks the kernel to back the allocation behind the still-empty `v` with transparent huge
/// pages. For arrays of tens or hundreds of MiB read at random (ALEX's slot arrays), 4 KiB
/// pages make nearly every access also miss the TLB, and at 100M keys the page-table walk
/// itself misses the cache; with 2 MiB pages it disappears. Advice only:
/// where THP is off or unsupported nothing changes, and allocations smaller than one huge page
/// are left alone (no system call).
///
/// The allocator may hand back memory an earlier allocation already touched (the heap, not a
/// fresh mapping); pages already present stay 4 KiB whatever the advice says. So the whole
/// 2 MiB-aligned pages inside the allocation are also dropped (`MADV_DONTNEED`): the next
/// write faults them back in as huge pages. That is only sound because `v` is empty: nothing
/// of the caller's lives in those bytes yet.
pub(crate) fn advise_huge_pages<T>(v: &mut Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        const HUGE: usize = 2 << 20;
        let bytes = v.capacity() * std::mem::size_of::<T>();
        if bytes < HUGE || !v.is_empty() {
            return;
        }
        let start = v.as_mut_ptr() as usize;
        // Whole pages inside the allocation only (madvise wants a page-aligned start).
        let first = start.next_multiple_of(PAGE);
        let end = (start + bytes) / PAGE * PAGE;
        let huge_first = start.next_multiple_of(HUGE);
        let huge_end = (start + bytes) / HUGE * HUGE;
        // SAFETY: both ranges lie within the live allocation owned by `v` (capacity bytes from
        // its pointer, rounded inwards to whole pages), so no other object's memory is touched.
        // MADV_HUGEPAGE only changes how the kernel backs those pages. MADV_DONTNEED replaces
        // the pages' contents with zeros on the next access; `v` is empty (checked above), so
        // those bytes are uninitialized capacity that no value lives in, and the allocator keeps
        // its bookkeeping outside the bytes it hands out.
        unsafe {
            if end > first {
                libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
            }
            if huge_end > huge_first {
                libc::madvise(
                    huge_first as *mut libc::c_void,
                    huge_end - huge_first,
                    libc::MADV_DONTNEED,
                );
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}
