//! O(1) models of resources that serve requests in FIFO order.
//!
//! A pipelined resource that serves one request at a time in arrival order (a `PCIe` direction,
//! an internal bus, a memory unit, a hardware engine) needs no queue of its own: the request
//! that arrives at `t` starts at `max(t, free_at)` and the resource is free again after its
//! service time. This is exact as long as requests are presented in arrival order, which the
//! simulation guarantees by reserving a resource only from the event that delivers the request
//! to it (never ahead of time). A [`ServerPool`] extends the rule to `n` identical servers
//! (firmware cores): FCFS with `n` servers assigns each arrival to the earliest-free server.

use super::time::{SimDuration, SimTime};

/// When a reserved service starts and ends, and how long it waited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grant {
    pub start: SimTime,
    pub end: SimTime,
    pub wait: SimDuration,
}

/// A single FIFO server.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    free_at: SimTime,
    busy: SimDuration,
    /// When the last request that cut in ends (requests that cut in do not overlap each other).
    cut_free: SimTime,
}

impl Timeline {
    /// Reserves `service` for a request arriving at `arrival`.
    #[inline]
    pub fn reserve(&mut self, arrival: SimTime, service: SimDuration) -> Grant {
        let start = arrival.max(self.free_at);
        let end = start + service;
        self.free_at = end;
        self.busy += service;
        Grant { start, end, wait: start.since(arrival) }
    }

    /// Serves a short request that may pass the queued backlog: it waits at most `max_wait`
    /// (what is in service when it arrives) and the backlog behind it is delayed by `service`
    /// (a link arbiter slipping a request between the TLPs of queued data).
    #[inline]
    pub fn cut_in(&mut self, arrival: SimTime, service: SimDuration, max_wait: SimDuration) -> Grant {
        let start = arrival.max(self.free_at).min(arrival + max_wait).max(self.cut_free);
        let end = start + service;
        self.cut_free = end;
        self.free_at = self.free_at.max(arrival) + service;
        self.busy += service;
        Grant { start, end, wait: start.since(arrival) }
    }

    /// Marks the server busy over `[start, end)` (for a service whose start and end another
    /// resource decided); a later start than `free_at` leaves the gap idle.
    pub fn occupy(&mut self, start: SimTime, end: SimTime) {
        self.busy += end.since(start);
        self.free_at = self.free_at.max(end);
    }

    /// When the server becomes free.
    pub fn free_at(&self) -> SimTime {
        self.free_at
    }

    /// Total service time reserved so far (for utilisation).
    pub fn busy(&self) -> SimDuration {
        self.busy
    }
}

/// `n` identical FIFO servers fed from one queue.
#[derive(Clone, Debug)]
pub struct ServerPool {
    servers: Vec<Timeline>,
}

impl ServerPool {
    /// A pool of `n` servers (at least one).
    pub fn new(n: usize) -> Self {
        ServerPool { servers: vec![Timeline::default(); n.max(1)] }
    }

    /// Reserves `service` on the server that frees first (the lowest index on ties).
    #[inline]
    pub fn reserve(&mut self, arrival: SimTime, service: SimDuration) -> Grant {
        let mut best = 0;
        let mut best_free = self.servers[0].free_at;
        for (i, s) in self.servers.iter().enumerate().skip(1) {
            if s.free_at < best_free {
                best = i;
                best_free = s.free_at;
            }
        }
        self.servers[best].reserve(arrival, service)
    }

    /// Total service time over all servers.
    pub fn busy(&self) -> SimDuration {
        self.servers.iter().fold(SimDuration::ZERO, |a, s| a + s.busy)
    }

    pub fn len(&self) -> usize {
        self.servers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_queues_in_fifo_order() {
        let mut t = Timeline::default();
        let a = t.reserve(SimTime(0), SimDuration(10));
        let b = t.reserve(SimTime(4), SimDuration(10));
        let c = t.reserve(SimTime(50), SimDuration(10));
        assert_eq!((a.start, a.end, a.wait), (SimTime(0), SimTime(10), SimDuration(0)));
        assert_eq!((b.start, b.end, b.wait), (SimTime(10), SimTime(20), SimDuration(6)));
        assert_eq!((c.start, c.end, c.wait), (SimTime(50), SimTime(60), SimDuration(0)));
        assert_eq!(t.busy(), SimDuration(30));
    }

    #[test]
    fn pool_uses_earliest_free_server() {
        let mut p = ServerPool::new(2);
        let a = p.reserve(SimTime(0), SimDuration(10));
        let b = p.reserve(SimTime(0), SimDuration(10));
        let c = p.reserve(SimTime(0), SimDuration(10));
        assert_eq!(a.end, SimTime(10));
        assert_eq!(b.end, SimTime(10));
        assert_eq!((c.start, c.wait), (SimTime(10), SimDuration(10)));
    }
}
