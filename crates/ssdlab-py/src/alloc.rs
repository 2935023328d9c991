//! The extension's allocator: the system's, except that an allocation the system refuses ends
//! the process with a clear message and exit code 2, where Rust would abort (SIGABRT, exit code
//! 134, no word of why). Runs whose estimated memory exceeds the limit are refused before they
//! start (`ssdlab_core::config::memory`); this catches what the estimate misses, anywhere.

#![allow(unsafe_code)] // the allocator interface is unsafe; nothing else in ssdlab is

use std::alloc::{GlobalAlloc, Layout, System};

/// The system allocator with a clear end on refusal.
pub struct ClearOnRefusal;

// SAFETY: every call is forwarded to the system allocator with the caller's arguments; a null
// result ends the process instead of returning.
unsafe impl GlobalAlloc for ClearOnRefusal {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            refused(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            refused(layout.size());
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            refused(new_size);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Writes the message with `write(2)` and leaves with `_exit(2)`: nothing here allocates, and
/// no exit handler (which might) runs.
#[cold]
fn refused(size: usize) -> ! {
    let mut msg = [0u8; 512];
    let mut n = 0;
    let mut put = |s: &[u8]| {
        let k = s.len().min(msg.len() - n);
        msg[n..n + k].copy_from_slice(&s[..k]);
        n += k;
    };
    put(b"error: out of memory: the system refused ");
    let mut digits = [0u8; 20];
    let (mut v, mut d) = (size, digits.len());
    loop {
        d -= 1;
        digits[d] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    put(&digits[d..]);
    put(b" bytes. The run needs more memory than this process may use (its limit is the least of half the machine's memory, ulimit -v and the cgroup's memory.max); a smaller drive, fewer jobs or a lower iodepth need less.\n");
    // SAFETY: writing a valid buffer to stderr and ending the process; both are async-signal-safe.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), n);
        libc::_exit(2)
    }
}
