//! The sandbox around what Collie starts for a phone (SPEC §15; decision 0071).
//!
//! [`policy`] is the effective policy `collie apply` resolves from `[sandbox]`; [`kernel`] says
//! whether this kernel can enforce it (the bridge refuses to start otherwise); [`launch`] is the
//! small program every confined command starts through (`collie __sandbox`): it keeps the time
//! limit and kills the whole tree at it, and its child confines itself (`collie __sandbox-inner`:
//! cgroup, rlimits, capabilities, `no_new_privs`, seccomp, Landlock) and then becomes the command.

pub mod cgroup;
pub mod confine;
pub mod kernel;
pub mod launch;
pub mod policy;
mod seccomp;

pub use policy::{Limits, Network, PathAccess, PathRule, Policy, Preset};
