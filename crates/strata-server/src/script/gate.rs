//! The gate between a script taking every key-lock stripe and the commands of connections.
//!
//! A connection's command looks whether a script runs and whether its keys' stripes are busy
//! before it runs (`server::listener`), and waits for either as a task, so that its thread
//! keeps serving its other connections (one of them may SCRIPT KILL the script). Between
//! that look and the command's taking of its stripes, a script starting on another thread
//! could take every stripe, and the command would then wait for the whole script on its
//! thread. The gate closes that window:
//! - a command that may take stripes holds a pass ([`Gate::enter`]) from its look to the end
//!   of its run;
//! - a script first takes its turn ([`Gate::take_turn`]): it waits for the script before
//!   it, then shuts the gate and waits until every pass is given back. It takes the stripes
//!   with the gate shut ([`Gate::hold_stripes`]), marks them held ([`Gate::holding`]) and
//!   opens the gate again; the marks go when the stripes are released, the turn after.
//!
//! So a command with a pass sees either no script holding the stripes (and none takes them
//! before it has run) or one holding them, which it then waits for as a task. A script
//! waiting for its turn waits with the gate open: commands keep entering, waiting for the
//! running script as tasks and getting BUSY past its threshold.
//!
//! Lock order: a pass or a turn comes before the database pin (`storage::databases`) and the
//! stripes: a connection's script takes its turn before its command is dispatched
//! (`server::listener`'s offload), so a SWAPDB, which pins every database holding a pass,
//! never waits for a script that waits for its pass.
//!
//! Cluster mode's commands (`listener`'s replicated path) take no pass: there a script takes
//! its turn with its stripes, and a command racing it may wait for the script on a runtime
//! worker, as before this gate.
//!
//! Contract: a pass is taken without waiting: `None` while the gate is shut, and the command
//! waits as a task ([`Gate::until_open`]), never on its thread. A thread holding a pass
//! never takes a turn (a script runs outside any pass: on a blocking thread of its own, or
//! inside EXEC, where it takes no stripes).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};
use tokio::sync::Notify;

/// How often a command waiting for the gate to open looks again. The gate is shut only
/// while a script waits for the passes out and takes the stripes.
const REOPEN_POLL: Duration = Duration::from_millis(1);

#[derive(Default)]
struct State {
    /// Passes out.
    passes: usize,
    /// No pass is given.
    shut: bool,
    /// A script has its turn.
    turn: bool,
}

/// The gate (module doc).
#[derive(Default)]
pub struct Gate {
    state: Mutex<State>,
    /// Signalled when the last pass is given back, the gate opens or a turn ends.
    changed: Condvar,
    /// A script holds every stripe.
    holding: AtomicBool,
}

thread_local! {
    /// This thread's script has its turn ([`Gate::take_turn`]).
    static HAS_TURN: Cell<bool> = const { Cell::new(false) };
}

/// A command's pass: the gate cannot shut until it is dropped.
pub struct Pass<'a>(&'a Gate);

/// A script's turn: ends when dropped (after its stripes are released), opening the gate if
/// it is still shut.
pub struct Turn<'a>(&'a Gate);

/// The stripes a script took through the gate: released when this drops, and then no longer
/// marked held; `ended` is notified after, for the commands waiting for the script.
pub struct Held<'a, G> {
    stripes: Option<G>,
    gate: &'a Gate,
    ended: &'a Notify,
    /// The turn, when it was taken with the stripes (not before, by the caller).
    _turn: Option<Turn<'a>>,
}

impl Gate {
    /// A pass, unless the gate is shut (then `None`, at once).
    pub fn enter(&self) -> Option<Pass<'_>> {
        let mut s = self.state.lock();
        if s.shut {
            return None;
        }
        s.passes += 1;
        Some(Pass(self))
    }

    /// A pass, waiting while the gate is shut (a thread of its own, not a runtime worker: the
    /// replication link's, `replicaof::stream`).
    pub fn enter_waiting(&self) -> Pass<'_> {
        let mut s = self.state.lock();
        while s.shut {
            self.changed.wait(&mut s);
        }
        s.passes += 1;
        Pass(self)
    }

    /// Whether a script holds the stripes (from before it counts as running to after).
    pub fn holding(&self) -> bool {
        self.holding.load(Ordering::Acquire)
    }

    /// Waits for the script before (if any) to end its turn, then shuts the gate and waits
    /// until every pass is given back. This thread's next [`Gate::hold_stripes`] takes the
    /// stripes within this turn.
    pub fn take_turn(&self) -> Turn<'_> {
        let mut s = self.state.lock();
        while s.turn {
            self.changed.wait(&mut s);
        }
        self.begin_turn(s)
    }

    /// [`Gate::take_turn`], unless the script before still has its turn at `deadline`.
    pub fn take_turn_until(&self, deadline: Instant) -> Option<Turn<'_>> {
        let mut s = self.state.lock();
        while s.turn {
            if self.changed.wait_until(&mut s, deadline).timed_out() && s.turn {
                return None;
            }
        }
        Some(self.begin_turn(s))
    }

    /// With no turn taken (`s`): takes it, shuts the gate and waits for the passes out.
    fn begin_turn(&self, mut s: MutexGuard<'_, State>) -> Turn<'_> {
        s.turn = true;
        s.shut = true;
        while s.passes > 0 {
            self.changed.wait(&mut s);
        }
        HAS_TURN.with(|t| t.set(true));
        Turn(self)
    }

    /// Takes the stripes with `lock` in this thread's turn (taking one first if it has
    /// none), marks them held and opens the gate.
    pub fn hold_stripes<'a, G>(
        &'a self,
        ended: &'a Notify,
        lock: impl FnOnce() -> G,
    ) -> Held<'a, G> {
        let turn = (!HAS_TURN.with(Cell::get)).then(|| self.take_turn());
        let stripes = lock();
        self.holding.store(true, Ordering::Release);
        self.open();
        Held { stripes: Some(stripes), gate: self, ended, _turn: turn }
    }

    fn open(&self) {
        let mut s = self.state.lock();
        if s.shut {
            s.shut = false;
            self.changed.notify_all();
        }
    }

    /// Returns once the gate is open, without holding a thread.
    pub async fn until_open(&self) {
        while self.state.lock().shut {
            tokio::time::sleep(REOPEN_POLL).await;
        }
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        let mut s = self.0.state.lock();
        s.passes -= 1;
        if s.passes == 0 && s.shut {
            self.0.changed.notify_all();
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        HAS_TURN.with(|t| t.set(false));
        let mut s = self.0.state.lock();
        s.turn = false;
        s.shut = false;
        self.0.changed.notify_all();
    }
}

impl<G> Drop for Held<'_, G> {
    fn drop(&mut self) {
        drop(self.stripes.take());
        self.gate.holding.store(false, Ordering::Release);
        self.ended.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Waits up to ten seconds for `cond`.
    fn eventually(what: &str, cond: impl Fn() -> bool) {
        let start = Instant::now();
        while !cond() {
            assert!(start.elapsed() < Duration::from_secs(10), "{what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_script_takes_the_stripes_only_after_the_commands_holding_passes_have_run() {
        let gate = Arc::new(Gate::default());
        let ended = Arc::new(Notify::new());
        let stripe = Arc::new(std::sync::Mutex::new(()));
        // A command has looked (no script) and is about to take its stripe.
        let pass = gate.enter().expect("the gate is open");
        let script = {
            let (gate, ended, stripe) = (gate.clone(), ended.clone(), stripe.clone());
            std::thread::spawn(move || {
                let held = gate.hold_stripes(&ended, || stripe.lock().unwrap());
                assert!(gate.holding());
                drop(held);
                assert!(!gate.holding(), "released");
            })
        };
        // The script waits at the shut gate: no new pass, and the stripe stays the command's.
        eventually("the script shuts the gate", || gate.enter().is_none());
        std::thread::sleep(Duration::from_millis(50));
        assert!(!gate.holding());
        let taken = stripe.try_lock().expect("the command takes its stripe without waiting");
        drop(taken);
        drop(pass);
        script.join().unwrap();
        assert!(gate.enter().is_some(), "open again");
    }

    #[test]
    fn a_command_entering_while_a_script_holds_the_stripes_sees_them_held() {
        let gate = Gate::default();
        let ended = Notify::new();
        let stripe = std::sync::Mutex::new(());
        let held = gate.hold_stripes(&ended, || stripe.lock().unwrap());
        // The gate is open while the script runs: commands enter, see the stripes held, and
        // wait as tasks instead of taking them.
        let pass = gate.enter().expect("open while the script runs");
        assert!(gate.holding());
        drop(pass);
        drop(held);
        assert!(!gate.holding());
        assert!(stripe.try_lock().is_ok(), "released");
    }

    #[test]
    fn a_turn_taken_before_the_stripes_keeps_the_gate_shut_until_they_are_held() {
        let gate = Gate::default();
        let ended = Notify::new();
        // The offload takes the turn before the command is dispatched...
        let turn = gate.take_turn();
        assert!(gate.enter().is_none(), "shut");
        // ...and the script takes the stripes in it: the gate opens with them held.
        let held = gate.hold_stripes(&ended, || ());
        assert!(gate.holding());
        assert!(gate.enter().is_some(), "open while the script runs");
        drop(held);
        assert!(!gate.holding());
        drop(turn);
        // A script that failed before taking the stripes opens the gate with its turn.
        let turn = gate.take_turn();
        drop(turn);
        assert!(gate.enter().is_some());
    }

    #[test]
    fn a_turn_waited_for_until_a_deadline_is_refused_while_the_script_before_runs() {
        let gate = Gate::default();
        let ended = Notify::new();
        let first = gate.hold_stripes(&ended, || ());
        let other = std::thread::scope(|s| {
            s.spawn(|| gate.take_turn_until(Instant::now() + Duration::from_millis(20)).is_some())
                .join()
                .unwrap()
        });
        assert!(!other, "the first script has the turn");
        drop(first);
        let turn = gate.take_turn_until(Instant::now() + Duration::from_millis(20));
        assert!(turn.is_some(), "free once the first ended");
    }

    #[test]
    fn a_second_script_waits_for_the_first_with_the_gate_open() {
        let gate = Arc::new(Gate::default());
        let ended = Arc::new(Notify::new());
        let stripe = Arc::new(std::sync::Mutex::new(()));
        let first = gate.hold_stripes(&ended, || stripe.lock().unwrap());
        let second = {
            let (gate, ended, stripe) = (gate.clone(), ended.clone(), stripe.clone());
            std::thread::spawn(move || {
                let held = gate.hold_stripes(&ended, || stripe.lock().unwrap());
                assert!(gate.holding());
                drop(held);
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!second.is_finished(), "its turn comes after the first");
        assert!(gate.enter().is_some(), "commands still enter while the second waits");
        drop(first);
        second.join().unwrap();
        assert!(!gate.holding());
        assert!(gate.enter().is_some());
    }

    #[test]
    fn a_waiting_pass_comes_once_the_gate_opens() {
        let gate = Arc::new(Gate::default());
        let turn = gate.take_turn();
        let waiter = {
            let gate = gate.clone();
            std::thread::spawn(move || drop(gate.enter_waiting()))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "the gate is shut");
        drop(turn);
        waiter.join().unwrap();
        assert!(gate.enter().is_some());
    }

    #[test]
    fn until_open_returns_once_the_script_has_taken_the_stripes() {
        let gate = Arc::new(Gate::default());
        let ended = Arc::new(Notify::new());
        let pass = gate.enter().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let script = {
            let (gate, ended) = (gate.clone(), ended.clone());
            std::thread::spawn(move || {
                let held = gate.hold_stripes(&ended, || ());
                // Holds the stripes until the test has seen the gate open.
                rx.recv().unwrap();
                drop(held);
            })
        };
        eventually("the script shuts the gate", || gate.enter().is_none());
        let waiter = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                let rt =
                    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                rt.block_on(gate.until_open());
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        assert!(!waiter.is_finished(), "the gate is shut while a pass is out");
        drop(pass);
        waiter.join().unwrap();
        assert!(gate.holding());
        tx.send(()).unwrap();
        script.join().unwrap();
        assert!(!gate.holding());
    }
}
