//! Typed identifiers. Each names one kind of thing, so that a tenant can never be passed where a
//! job is expected, nor a block where a die is. They are plain integers underneath (`.0`), used
//! as indices into the owning block's tables.

macro_rules! id {
    ($(#[$m:meta])* $name:ident($t:ty)) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        pub struct $name(pub $t);

        impl $name {
            /// The index this id stands for.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

id!(
    /// A tenant: a user of the drive with its own workload (a run without tenants has one).
    TenantId(u16)
);
id!(
    /// An NVMe namespace.
    NamespaceId(u32)
);
id!(
    /// A host job (one thread with its own queue pair).
    JobId(u32)
);
id!(
    /// A logical page: a mapping unit of the FTL, `offset / ftl.mapping_unit`.
    Lpn(u64)
);
id!(
    /// A flash block, over the whole array (`plane * blocks_per_plane + block`).
    BlockId(u32)
);
id!(
    /// A NAND die, over the whole array.
    DieId(u32)
);
id!(
    /// An NVMe I/O queue pair.
    QueueId(u16)
);
id!(
    /// A command in flight: its slot in the command table.
    CmdId(u32)
);
