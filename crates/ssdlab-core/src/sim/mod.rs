//! The discrete-event engine: picosecond time, the deterministic event queue, O(1) FIFO
//! timelines, and seeded random streams. Nothing here knows about storage.

pub mod queue;
pub mod rng;
pub mod time;
pub mod timeline;

pub use queue::EventQueue;
pub use rng::{stream_seed, Rng};
pub use time::{Clock, SimDuration, SimTime, PS_PER_MS, PS_PER_NS, PS_PER_S, PS_PER_US};
pub use timeline::{Grant, ServerPool, Timeline};
