//! What this kernel can enforce, asked before anything is started: the bridge refuses to start
//! under a policy it could not hold (SPEC §15, fail-closed), and `collie doctor` shows the same.

use landlock::{
    Access, AccessFs, CompatLevel, Compatible, LandlockStatus, Ruleset, RulesetAttr,
    RulesetCreatedAttr, ABI,
};

use crate::cgroup::{self, ProcessLimit};
use crate::policy::Policy;

/// Why a policy cannot be enforced here; each names what is missing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unenforceable {
    /// No Landlock at all.
    #[error(
        "the sandbox needs Landlock, and this kernel has none (not built in, or not enabled at \
         boot: add `landlock` to the `lsm=` kernel parameter); set `[sandbox] profile = \"off\"` \
         to run without it"
    )]
    NoLandlock,
    /// Landlock, but older than the policy needs.
    #[error(
        "the sandbox's network rule `{network}` needs Landlock ABI {need} (TCP rules, Linux 6.7); \
         this kernel has ABI {have}; use `network = \"any\"`, or a newer kernel"
    )]
    OldAbi {
        /// The kernel's ABI.
        have: u8,
        /// The policy's.
        need: u8,
        /// The rule that needs it.
        network: &'static str,
    },
    /// The process limit cannot be held.
    #[error("the sandbox's process limit cannot be enforced here: {0}")]
    Processes(String),
}

/// The kernel's Landlock ABI (0: none). Asked by restricting a thread of its own that then ends,
/// so nothing else of the process is touched.
///
/// With the test-only `fault-injection` feature, `COLLIE_TEST_LANDLOCK_ABI` overrides the answer
/// (the tests of the refusal of an older kernel; shipped builds never read it).
pub fn landlock_abi() -> u8 {
    #[cfg(feature = "fault-injection")]
    if let Some(abi) = std::env::var("COLLIE_TEST_LANDLOCK_ABI")
        .ok()
        .and_then(|v| v.parse::<u8>().ok())
    {
        return abi;
    }
    std::thread::spawn(probe).join().unwrap_or(0)
}

fn probe() -> u8 {
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(|r| r.create())
        .and_then(|r| r.no_new_privs(false).restrict_self());
    match status {
        Ok(s) => match s.landlock {
            LandlockStatus::Available { effective_abi, .. } => effective_abi as u8,
            _ => 0,
        },
        Err(_) => 0,
    }
}

/// Whether `policy` can be enforced on this machine, with the kernel's Landlock ABI `abi`.
pub fn check(policy: &Policy, abi: u8) -> Result<ProcessLimit, Unenforceable> {
    if abi == 0 {
        return Err(Unenforceable::NoLandlock);
    }
    let need = policy.abi_needed();
    if abi < need {
        return Err(Unenforceable::OldAbi {
            have: abi,
            need,
            network: policy.network.as_str(),
        });
    }
    cgroup::process_limit().map_err(Unenforceable::Processes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Network, Preset};

    fn policy(network: Network) -> Policy {
        Policy {
            paths: Vec::new(),
            network,
            limits: Preset::Normal.limits(),
        }
    }

    #[test]
    fn an_old_kernel_is_named_with_what_it_lacks() {
        let e = check(&policy(Network::None), 3).expect_err("ABI 3 has no TCP rules");
        assert_eq!(
            e,
            Unenforceable::OldAbi {
                have: 3,
                need: 4,
                network: "none"
            }
        );
        assert!(e.to_string().contains("needs Landlock ABI 4"), "{e}");
        assert_eq!(
            check(&policy(Network::Any), 0).expect_err("none"),
            Unenforceable::NoLandlock
        );
    }

    #[test]
    fn the_probe_leaves_the_calling_thread_free() {
        // The probe restricts a thread of its own; this one can still read what it could.
        let abi = landlock_abi();
        assert!(std::fs::read_dir("/").is_ok());
        // The machines this project is tested on have Landlock (this one ABI 7).
        assert!(abi >= 1, "no Landlock found");
    }
}
