//! The sockets Landlock does not cover, closed with a seccomp filter:
//!
//! - **UNIX sockets** (`socket(AF_UNIX, …)`): a confined process could otherwise connect to the
//!   tmux server of the very pane it runs in (`tmux new-window`, and the new window runs outside
//!   the sandbox), to the Docker daemon, to the session bus or to an SSH agent. Landlock in this
//!   kernel's ABI does not govern connecting to a named socket. `socketpair` stays open: it makes
//!   an unnamed pair between a process and its own children, which reaches nothing outside.
//! - **UDP and raw sockets** unless the network rule is `any`: Landlock's network rules are TCP
//!   only.
//! - **io_uring**: its `IORING_OP_SOCKET` makes a socket without the `socket` system call, past
//!   this filter. Programs fall back to ordinary system calls when `io_uring_setup` fails.
//!
//! A refused call fails with `EPERM`, which programs report as "Operation not permitted".

use std::collections::BTreeMap;

use nix::libc;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::policy::Network;

/// The filter could not be built or installed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SeccompError(String);

/// The low bits of `socket`'s type argument (the rest are `SOCK_NONBLOCK`/`SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u64 = 0xf;

/// Installs the filter on the calling thread (inherited by everything it starts).
pub(crate) fn install(network: &Network) -> Result<(), SeccompError> {
    let program = program(network).map_err(|e| SeccompError(e.to_string()))?;
    seccompiler::apply_filter(&program).map_err(|e| SeccompError(e.to_string()))
}

fn program(network: &Network) -> Result<BpfProgram, seccompiler::Error> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let domain = |d: i32| {
        SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            u64::from(d.unsigned_abs()),
        )
    };
    let kind = |t: i32| {
        SeccompCondition::new(
            1,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
            u64::from(t.unsigned_abs()),
        )
    };
    let mut socket = vec![SeccompRule::new(vec![domain(libc::AF_UNIX)?])?];
    if *network != Network::Any {
        for family in [libc::AF_INET, libc::AF_INET6] {
            for t in [libc::SOCK_DGRAM, libc::SOCK_RAW] {
                socket.push(SeccompRule::new(vec![domain(family)?, kind(t)?])?);
            }
        }
        // Packet sockets need CAP_NET_RAW, which a confined root has given up; refused anyway.
        socket.push(SeccompRule::new(vec![domain(libc::AF_PACKET)?])?);
    }
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, socket);
    rules.insert(libc::SYS_io_uring_setup, Vec::new());
    SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM.unsigned_abs()),
        arch,
    )?
    .try_into()
    .map_err(seccompiler::Error::Backend)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_for_every_network_rule() {
        for network in [
            Network::None,
            Network::Local { ports: vec![5432] },
            Network::Any,
        ] {
            let p = program(&network).expect("compiles");
            assert!(!p.is_empty());
        }
        // More to refuse without the network than with it.
        assert!(
            program(&Network::None).expect("none").len()
                > program(&Network::Any).expect("any").len()
        );
    }
}
