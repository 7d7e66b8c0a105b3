//! How much scrollback tmux mirrors may keep under the global pane-buffer cap (SPEC §5 "Caps").
//!
//! A pure policy, no I/O and no clock: the Panes actor measures the bytes allocated by every pane
//! and what one line of mirror scrollback costs, calls [`tmux_scrollback_limit`] on its timer and
//! after hosted panes come or go, and hands a changed answer to the tmux backend. Hosted panes are
//! never shrunk here: past the cap they are refused instead (see `actor.rs`).
//!
//! Levels step down as total use grows — the full amount below 75% of the cap, then 500, 100 and 0
//! lines from 75%, 85% and 95% — and step back up only when the use *after* the step, estimated
//! as if every mirror filled the extra lines, stays 10% of the cap below the threshold that would
//! take it down again. That margin is the hysteresis: shrinking frees bytes, so a rule that only
//! looked at current use would grow again at once and flap.

/// Scrollback levels below the full amount, in lines, from most to least.
const LOWER_LEVELS: [usize; 3] = [500, 100, 0];

/// Use of the cap, in permille, from which each of [`LOWER_LEVELS`] applies.
const DOWN_AT_PERMILLE: [u128; 3] = [750, 850, 950];

/// How far below a level's down threshold the estimated use must stay to step up to it.
const HYSTERESIS_PERMILLE: u128 = 100;

/// What the policy looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetInput {
    /// The cap on the buffers of all panes, in bytes.
    pub cap: usize,
    /// Bytes allocated now by every pane (hosted rings, screens and scrollback, tmux mirrors).
    pub allocated: usize,
    /// Bytes one more line of scrollback costs across all tmux mirrors together (the sum of
    /// their widths times the size of a cell); 0 without mirrors.
    pub mirror_line_bytes: usize,
    /// The configured full scrollback of a mirror (2,000 lines by default).
    pub full: usize,
    /// The limit mirrors keep now.
    pub current: usize,
}

/// The scrollback lines a tmux mirror may keep: one of the full amount, 500, 100 or 0 (never more
/// than the full amount). See the module doc for the thresholds and the hysteresis.
pub fn tmux_scrollback_limit(input: BudgetInput) -> usize {
    let current = input.current.min(input.full);
    let cap = input.cap as u128;
    let used = input.allocated as u128;
    let at = |permille: u128| cap * permille / 1000;
    // Level 0 is the full amount; level i + 1 is LOWER_LEVELS[i].
    let level = |i: usize| {
        if i == 0 {
            input.full
        } else {
            LOWER_LEVELS[i - 1].min(input.full)
        }
    };
    // Step down at once to the level the current use calls for.
    let wanted = level(DOWN_AT_PERMILLE.iter().filter(|p| used >= at(**p)).count());
    if wanted < current {
        return wanted;
    }
    // Step up to the most generous level whose estimated use stays clear of its down threshold.
    for (i, down_at) in DOWN_AT_PERMILLE.iter().enumerate() {
        let lines = level(i);
        if lines <= current {
            break;
        }
        let extra = ((lines - current) as u128) * input.mirror_line_bytes as u128;
        if used + extra + at(HYSTERESIS_PERMILLE) < at(*down_at) {
            return lines;
        }
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1024 * 1024;
    const CAP: usize = 128 * MIB;
    /// Ten 80-column mirrors with 32-byte cells.
    const LINE: usize = 10 * 80 * 32;

    fn limit(allocated: usize, current: usize) -> usize {
        tmux_scrollback_limit(BudgetInput {
            cap: CAP,
            allocated,
            mirror_line_bytes: LINE,
            full: 2000,
            current,
        })
    }

    fn percent(p: usize) -> usize {
        CAP * p / 100
    }

    #[test]
    fn full_scrollback_while_use_is_low() {
        assert_eq!(limit(0, 2000), 2000);
        assert_eq!(limit(percent(74), 2000), 2000);
    }

    #[test]
    fn steps_down_as_use_grows() {
        assert_eq!(limit(percent(75), 2000), 500);
        assert_eq!(limit(percent(84), 2000), 500);
        assert_eq!(limit(percent(86), 2000), 100);
        assert_eq!(limit(percent(86), 500), 100);
        assert_eq!(limit(percent(96), 2000), 0);
        assert_eq!(limit(percent(96), 100), 0);
        assert_eq!(limit(CAP * 2, 2000), 0);
        assert_eq!(limit(usize::MAX, 2000), 0);
    }

    #[test]
    fn holds_inside_the_hysteresis_band() {
        // Down to 500 at 75%; at 70% it stays there (back up only below 65% minus the growth).
        assert_eq!(limit(percent(70), 500), 500);
        assert_eq!(limit(percent(80), 100), 100);
        assert_eq!(limit(percent(90), 0), 0);
    }

    #[test]
    fn recovers_when_use_drops_well_below() {
        assert_eq!(limit(percent(10), 0), 2000);
        assert_eq!(limit(percent(30), 500), 2000);
        assert_eq!(limit(percent(50), 500), 500);
        // 1,500 more lines across the mirrors would cross 65%: only part of the way back.
        let near = CAP * 750 / 1000 - CAP * 100 / 1000 - 1500 * LINE;
        assert_eq!(limit(near, 500), 500);
        assert_eq!(limit(percent(70), 0), 100);
    }

    #[test]
    fn never_flaps_between_two_evaluations() {
        // Whatever the use, stepping up and then re-evaluating with the estimated use (every
        // mirror filling the new lines) never steps down again.
        for p in 0..=110 {
            let used = CAP / 100 * p;
            for current in [2000, 500, 100, 0] {
                let next = limit(used, current);
                if next > current {
                    let after = used + (next - current) * LINE;
                    assert_eq!(limit(after, next), next, "flap at {p}% from {current}");
                }
            }
        }
    }

    #[test]
    fn respects_a_small_full_amount_and_no_mirrors() {
        let input = BudgetInput {
            cap: CAP,
            allocated: percent(80),
            mirror_line_bytes: 0,
            full: 300,
            current: 300,
        };
        // The 500-line level is capped at the full amount.
        assert_eq!(tmux_scrollback_limit(input), 300);
        assert_eq!(
            tmux_scrollback_limit(BudgetInput {
                allocated: percent(86),
                ..input
            }),
            100
        );
        assert_eq!(
            tmux_scrollback_limit(BudgetInput {
                allocated: 0,
                current: 100,
                ..input
            }),
            300
        );
        assert_eq!(
            tmux_scrollback_limit(BudgetInput {
                full: 0,
                current: 0,
                ..input
            }),
            0
        );
        // A current limit above the full amount is treated as the full amount.
        assert_eq!(
            tmux_scrollback_limit(BudgetInput {
                allocated: 0,
                current: 5000,
                ..input
            }),
            300
        );
    }
}
