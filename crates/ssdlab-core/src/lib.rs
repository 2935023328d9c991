//! # ssdlab-core
//!
//! The simulation engine and hardware models of ssdlab, in pure Rust (no Python).
//!
//! ```text
//!  workload ─► host ─► pcie ─► nvme ─► ctrl ─► media ──────────────┐
//!  (fio's      (CPUs,  (link,   (SQ/CQ, (fw cores  ├ nvm: NVM banks  │
//!   runner,     stack,  TLPs)    RR arb, or hw     └ ftl: FTL + write │
//!   traces)     DMA              MSI-X)  engines,     buffer + GC over │
//!               layout)                  transfer,    media::nand      │
//!                                        DMA; ats)                     │
//!  stats ◄── I/O records, block records, published metrics ◄──────────┘
//!  simulation: the event loop, and the router between blocks (simulation/route.rs)
//! ```
//!
//! Modules, one per hardware block and the same name at every tier: [`host`], [`pcie`],
//! [`nvme`], [`ctrl`], [`ats`] (address translation: the device's ATC and the trace studies),
//! [`media`] ([`media::nvm`], [`media::nand`]), [`ftl`]; then [`workload`] (fio's job runner,
//! generators and replay), [`trace`] (block-trace readers), [`tenant`], [`stats`] (the
//! observer, metric registry, time series), [`cmd`] (the command table), [`sim`] (time, event
//! queue, timelines, rng), [`simulation`], [`emulate`] (the drive served in real time), [`config`], [`schema`] and [`units`] (reading
//! configs), [`ids`], [`io`], [`error`] and [`mod@bench`].
//!
//! Blocks never schedule each other's events: each writes typed outputs, and the router in
//! [`simulation`] turns each into the next event or block call. A 4 KiB read, hop by hop, is
//! told there.
//!
//! Every I/O's latency is split into [`stats::Component`]s that add up to it exactly.
//!
//! ## Layers
//!
//! Each top-level module uses only the modules listed before it, so no import circle can
//! form (`tests/integration/layers.rs` checks every `crate::` path of every file):
//!
//! | layer | modules |
//! |---|---|
//! | time, names and reading configs | `sim`, `units`, `error`, `cancel`, `ids`, `io`, `schema` |
//! | the observer blocks publish into | `stats` |
//! | the command table | `cmd` |
//! | blocks, each owning its config type | `trace`, `nvme`, `pcie`, `ctrl`, `media`, `ftl`, `ats`, `host`, `workload`, `tenant` |
//! | assembly and validation of a whole config | `config` |
//! | the simulation and studies over it | `simulation`, `bench`, `emulate` |

pub mod ats;
pub mod bench;
pub mod cancel;
pub mod cmd;
pub mod config;
pub mod ctrl;
pub mod emulate;
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
pub use simulation::{run, Simulation, Summary};

/// The version reported in results.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
