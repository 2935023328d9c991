//! The discrete-event engine: picosecond time, the deterministic event queue, runs of events
//! handled as one, O(1) FIFO timelines, seeded random streams, and division by geometry
//! constants. Nothing here knows
//! about storage.

pub mod div;
pub mod queue;
pub mod rng;
pub mod runs;
pub mod time;
pub mod timeline;

pub use div::{div_ceil, div_rem, divides, Divisor};
pub use queue::EventQueue;
pub use rng::{stream_seed, Rng};
pub use runs::Runs;
pub use time::{ByteRate, Clock, SimDuration, SimTime, PS_PER_MS, PS_PER_NS, PS_PER_S, PS_PER_US};
pub use timeline::{Grant, ServerPool, Timeline};
