//! The host's metrics: CPU time, locks, fio's depth buckets, the disk statistics, the page cache and the cgroup controller.
//!
//! Each is declared once here; the block publishes it and readers look it up by this constant.

use crate::stats::Metric;

pub const HOST_CPU_BUSY: Metric = Metric::counter("host.cpu.busy", "ps", "CPU time the jobs' CPUs spent on I/O (submission and completion paths)");
pub const HOST_SCHEDULER_BUSY: Metric = Metric::counter("host.scheduler.busy", "ps", "CPU time of the I/O scheduler thread");
pub const HOST_SPIN: Metric = Metric::counter("host.spin", "ps", "CPU time spent spinning on the tag or queue lock or polling for completions");
pub const HOST_SQ_THREAD_BUSY: Metric = Metric::counter("host.sq_thread.busy", "ps", "CPU time of io_uring's SQ polling threads (engine io_uring-sqpoll), beside the jobs' CPUs");
pub const HOST_SYSCALLS: Metric = Metric::counter("host.syscalls", "calls", "system calls the engines made to submit and reap I/O (engines other than kernel)");
pub const HOST_WAKEUPS: Metric = Metric::counter("host.wakeups", "wake-ups", "threads woken by a completion after sleeping for it (engines other than kernel)");
pub const HOST_CPUS: Metric = Metric::gauge("host.cpus", "CPUs", "host CPUs running jobs (one per job)");
pub const HOST_IODEPTH_COMPLETE: Metric =
    Metric::counter("host.iodepth_complete", "I/Os", "per job (7 each): I/Os by how many completions were reaped with them, in fio's buckets 0, 4, 8, 16, 32, 64, >64");
pub const HOST_DISK_READ_IOS: Metric = Metric::counter("host.disk.read_ios", "requests", "reads that reached the device");
pub const HOST_DISK_WRITE_IOS: Metric = Metric::counter("host.disk.write_ios", "requests", "writes that reached the device");
pub const HOST_DISK_READ_TICKS: Metric = Metric::counter("host.disk.read_ticks", "ps", "time reads spent at the device (doorbell to completion), summed");
pub const HOST_DISK_WRITE_TICKS: Metric = Metric::counter("host.disk.write_ticks", "ps", "time writes spent at the device, summed");
pub const HOST_DISK_BUSY: Metric = Metric::counter("host.disk.busy", "ps", "time with at least one request at the device (iostat's %util)");
pub const HOST_DISK_IN_QUEUE: Metric = Metric::counter("host.disk.in_queue", "ps", "time-weighted requests at the device (diskstats' weighted time in queue)");
pub const HOST_PAGE_CACHE_READ_PAGES: Metric = Metric::counter("host.page_cache.read_pages", "pages", "4 KiB pages buffered reads asked for");
pub const HOST_PAGE_CACHE_HIT_PAGES: Metric = Metric::counter("host.page_cache.hit_pages", "pages", "pages buffered reads found in the page cache");
pub const HOST_PAGE_CACHE_HIT_RATIO: Metric = Metric::gauge("host.page_cache.hit_ratio", "ratio", "share of the pages buffered reads asked for that were cached");
pub const HOST_PAGE_CACHE_READAHEAD_PAGES: Metric = Metric::counter("host.page_cache.readahead_pages", "pages", "pages read ahead of the reader (asynchronous part of readahead windows)");
pub const HOST_PAGE_CACHE_LARGEST_WINDOW: Metric = Metric::counter("host.page_cache.largest_window", "B", "largest readahead window");
pub const HOST_PAGE_CACHE_DEVICE_READS: Metric = Metric::counter("host.page_cache.device_reads", "requests", "device reads the page cache sent");
pub const HOST_PAGE_CACHE_DEVICE_READ_BYTES: Metric = Metric::counter("host.page_cache.device_read_bytes", "B", "bytes the page cache read from the device");
pub const HOST_PAGE_CACHE_DEVICE_WRITES: Metric = Metric::counter("host.page_cache.device_writes", "requests", "writeback requests the flusher sent");
pub const HOST_PAGE_CACHE_DEVICE_WRITE_BYTES: Metric = Metric::counter("host.page_cache.device_write_bytes", "B", "bytes written back to the device");
pub const HOST_PAGE_CACHE_DIRTIED_PAGES: Metric = Metric::counter("host.page_cache.dirtied_pages", "pages", "pages buffered writes dirtied");
pub const HOST_PAGE_CACHE_EVICTED_PAGES: Metric = Metric::counter("host.page_cache.evicted_pages", "pages", "clean pages evicted (least recently used first)");
pub const HOST_PAGE_CACHE_DIRTY_MAX: Metric = Metric::counter("host.page_cache.dirty_max", "B", "most memory dirty or under writeback at once");
pub const HOST_PAGE_CACHE_DIRTY_LIMIT: Metric = Metric::counter("host.page_cache.dirty_limit", "B", "the dirty limit (dirty_ratio of the cache)");
pub const HOST_PAGE_CACHE_DIRTY_AT_END: Metric = Metric::counter("host.page_cache.dirty_at_end", "B", "memory still dirty or under writeback when the run ended");
pub const HOST_PAGE_CACHE_PAUSED: Metric = Metric::counter("host.page_cache.paused", "writes", "buffered writes paced by balance_dirty_pages");
pub const HOST_PAGE_CACHE_PAUSE_TIME: Metric = Metric::counter("host.page_cache.pause_time", "ps", "time buffered writes spent paced");
pub const HOST_PAGE_CACHE_STOPPED: Metric = Metric::counter("host.page_cache.stopped", "writes", "buffered writes stopped at the dirty limit");
pub const HOST_PAGE_CACHE_FSYNCS: Metric = Metric::counter("host.page_cache.fsyncs", "calls", "fsync calls");
pub const HOST_PAGE_CACHE_FSYNC_TIME: Metric = Metric::counter("host.page_cache.fsync_time", "ps", "time jobs spent in fsync");
pub const HOST_FLUSHER_BUSY: Metric = Metric::counter("host.flusher.busy", "ps", "CPU time of the flusher thread building writeback requests");
pub const HOST_SHARE_HELD: Metric = Metric::counter("host.share.held", "I/Os", "I/Os the cgroup controller held back for their tenant's share or limit");
pub const HOST_SHARE_HELD_TIME: Metric = Metric::counter("host.share.held_time", "ps", "time I/Os spent held back by the cgroup controller");
pub const HOST_SHARE_VRATE: Metric = Metric::gauge("host.share.vrate", "ratio", "io.cost vrate: the device speed the controller allows, relative to its model");
pub const HOST_LOCK_BUSY: Metric = Metric::counter("host.{}.busy", "ps", "time the lock was held (warm hold, lines moved in, handovers behind spinners)");
pub const HOST_LOCK_ACQUISITIONS: Metric = Metric::counter("host.{}.acquisitions", "acquisitions", "times the lock was taken");
pub const HOST_LOCK_MIGRATIONS: Metric = Metric::counter("host.{}.migrations", "acquisitions", "acquisitions that found the lock's lines on another CPU");
