//! # ssdlab-core
//!
//! The simulation engine and hardware models of ssdlab, in pure Rust (no Python).
//!
//! ```text
//!  workload ─► host ─► pcie ─► nvme ─► ctrl ─► media ──────────────┐
//!  (fio-like   (CPUs,  (link,   (SQ/CQ, (fw cores  ├ nvm: NVM banks  │
//!   jobs,       stack,  TLPs)    RR arb, or hw     └ ftl: FTL + write │
//!   traces)     DMA              MSI-X)  engines,     buffer + GC over │
//!               layout)                  transfer,    media::nand      │
//!                                        DMA; ats)                     │
//!  stats ◄── I/O records, block records, published metrics ◄──────────┘
//!  simulation: the event loop, the command table, the routing between blocks
//! ```
//!
//! Modules, one per hardware block and the same name at every tier: [`host`], [`pcie`],
//! [`nvme`], [`ctrl`], [`ats`] (address translation: the device's ATC and the trace studies),
//! [`media`] ([`media::nvm`], [`media::nand`]), [`ftl`]; then [`workload`] (generators and
//! replay), [`trace`] (block-trace readers), [`stats`] (the observer, metric registry, time
//! series), [`sim`] (time, event queue, timelines, rng), [`simulation`], [`config`], [`ids`],
//! [`error`] and [`mod@bench`].
//!
//! A 4 KiB read, step by step (each step is one event at the resource it reaches):
//! 1. `host`: the job's CPU runs the submission path and writes the SQE.
//! 2. `pcie`: the SQ tail doorbell (a 4 B posted write) goes down the link.
//! 3. `nvme`: the doorbell makes the entry visible; round-robin arbitration picks it when a
//!    tag is free; `ctrl` spends fetch cycles and sends a read request up the link.
//! 4. `host` memory answers after its latency; the 64 B SQE comes down as a completion.
//! 5. `ctrl` decodes it, handles PRPs (fetching a PRP list for transfers over two pages) and
//!    translates the address.
//! 6. `media`: each chunk-sized piece occupies its unit, then the internal bus (NVM); or each
//!    mapping unit is looked up and read from its die (flash).
//! 7. `pcie`: each piece goes up the link as MPS-sized memory writes.
//! 8. `ctrl` builds the CQE; it goes up the link, followed by an MSI-X (or coalesced).
//! 9. `host` handles the interrupt on the job's CPU; the I/O is complete; the CQ head
//!    doorbell goes down.
//!
//! Writes differ in steps 6-7: the controller reads the data from host memory (read requests
//! up, completions down), then writes each piece over the bus into its unit (NVM) or into the
//! write buffer (flash).
//!
//! Every I/O's latency is split into [`stats::Component`]s that add up to it exactly.

pub mod ats;
pub mod bench;
pub mod cancel;
pub mod cmd;
pub mod config;
pub mod ctrl;
pub mod error;
pub mod ftl;
pub mod host;
pub mod ids;
pub mod io;
pub mod media;
pub mod nvme;
pub mod pcie;
pub mod schema;
pub mod sim;
pub mod simulation;
pub mod stats;
pub mod tenant;
pub mod trace;
pub mod units;
pub mod workload;

pub use config::Config;
pub use error::{ConfigIssue, Error, Result};
pub use simulation::{run, Simulation};
pub use stats::Summary;

/// The version reported in results.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
