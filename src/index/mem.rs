//! Memory advice shared by the index and the engine's caches.

/// Asks the kernel to back the (still untouched) allocation behind `v` with transparent huge
/// pages. For arrays of tens or hundreds of MiB read at random (ALEX's slot arrays, the row
/// cache's set table), 4 KiB pages make nearly every access also miss the TLB; with 2 MiB pages
/// the page table walk disappears. Advice only: where THP is off or unsupported nothing changes,
/// and allocations smaller than one huge page are left alone (no system call).
pub(crate) fn advise_huge_pages<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        const HUGE: usize = 2 << 20;
        let bytes = v.capacity() * std::mem::size_of::<T>();
        if bytes < HUGE {
            return;
        }
        let start = v.as_ptr() as usize;
        // Whole pages inside the allocation only (madvise wants a page-aligned start).
        let first = start.next_multiple_of(PAGE);
        let end = (start + bytes) / PAGE * PAGE;
        if end > first {
            // SAFETY: [first, end) lies within the live allocation owned by `v` (capacity
            // bytes from its pointer, rounded inwards to whole pages), and MADV_HUGEPAGE only
            // changes how the kernel backs those pages, never their contents or validity.
            unsafe {
                libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}
