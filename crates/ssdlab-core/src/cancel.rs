//! Cooperative cancellation of long loops that run outside the event loop: drive ageing, ATC
//! studies, stream synthesis.
//!
//! A caller that can be interrupted (the Python binding, for Ctrl-C) installs a check for the
//! duration of one call with [`with_check`]; the long loops call [`checkpoint`] every few
//! thousand iterations. A checkpoint calls the check at most once per [`EVERY`] of wall time and
//! returns [`Error::Cancelled`] when it says to stop. A loop that knows how far it is passes the
//! fraction done ([`checkpoint_at`]), which the check may report as progress. Without a check (Rust callers, tests) a
//! checkpoint does nothing, and either way results do not depend on it. The check belongs to
//! the thread that installed it: loops call checkpoints on their caller's thread.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Wall time between two calls of the check.
pub const EVERY: Duration = Duration::from_millis(50);

struct Check {
    stop: Box<dyn FnMut(Option<f64>) -> bool>,
    last: Instant,
}

thread_local! {
    static CHECK: RefCell<Option<Check>> = const { RefCell::new(None) };
}

/// Runs `f` with `stop` as this thread's check: checkpoints within `f` stop it with
/// [`Error::Cancelled`] once `stop` returns true. `stop` gets the fraction of its work the loop
/// has done, when the loop knows it.
pub fn with_check<T>(stop: impl FnMut(Option<f64>) -> bool + 'static, f: impl FnOnce() -> T) -> T {
    /// Puts the previous check back, also when `f` unwinds.
    struct Restore(Option<Check>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CHECK.with(|c| *c.borrow_mut() = previous);
        }
    }
    let previous = CHECK.with(|c| c.replace(Some(Check { stop: Box::new(stop), last: Instant::now() })));
    let _restore = Restore(previous);
    f()
}

/// `Err(Error::Cancelled)` if this thread's check, when its turn has come, says to stop.
pub fn checkpoint() -> Result<()> {
    check(None)
}

/// [`checkpoint`] from a loop `fraction` (0 to 1) of the way through its work.
pub fn checkpoint_at(fraction: f64) -> Result<()> {
    check(Some(fraction.clamp(0.0, 1.0)))
}

fn check(fraction: Option<f64>) -> Result<()> {
    CHECK.with(|c| {
        let Ok(mut c) = c.try_borrow_mut() else { return Ok(()) };
        match c.as_mut() {
            Some(check) if check.last.elapsed() >= EVERY => {
                check.last = Instant::now();
                if (check.stop)(fraction) {
                    Err(Error::Cancelled)
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_stops_only_the_call_it_was_installed_for() {
        assert!(checkpoint().is_ok());
        let r = with_check(
            |_| true,
            || loop {
                if let Err(e) = checkpoint() {
                    break e;
                }
            },
        );
        assert!(matches!(r, Error::Cancelled));
        assert!(checkpoint().is_ok());
    }
}
