#![doc = include_str!("../README.md")]

mod accounting;
mod cluster;
mod config;
mod container_exit;
mod container_status;
mod cronjobs;
mod defaults;
mod discovery;
mod error;
mod eviction;
mod faults;
mod fit;
#[cfg(test)]
mod fixtures;
mod gc;
mod heartbeats;
mod jobs;
mod kubelet;
mod memory;
mod nodes;
mod object;
mod openapi;
mod ops;
mod patch;
mod quota;
mod resources;
mod reviews;
mod scale;
mod scheduler;
mod selector;
mod server;
mod status;
mod store;
mod table;
pub mod testing;
mod validation;
mod watch;

pub use accounting::RequestAccounting;
pub use cluster::SimCluster;
pub use config::{
    AllowRule, AuthConfig, AuthRuleError, FaultConfig, KubeletConfig, NodeConfigError,
    NodeOverrides, NodeTaint, NodesConfig, SimConfig, SimUser, WatchLag, parse_labels,
    parse_taints,
};
pub use error::SimError;
pub use kubelet::{FAIL_AFTER_MS, NEVER_READY, READY_AFTER_MS, SUCCEED_AFTER_MS};
pub use memory::rss_bytes;
pub use quota::POD_QUOTA;
