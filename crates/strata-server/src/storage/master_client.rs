//! Whether this thread runs its master's commands: a replica applying its master's stream or
//! loading its master's dataset runs them as the master's client ([`as_master`]).
//!
//! Two rules hang on it: lookups find keys whose time is up as live (`types::keyspace::past`:
//! the master's commands apply to the keys the master has, whatever the replica's clock says,
//! and the master deletes such a key with a DEL of its own: Redis's rule for a replica's
//! master client); and a record with an expiry written on a replica by any other client (a
//! writable replica's own write) is noted for the replica's own expiry
//! (`Engine::own_due`), as Redis remembers such keys for `expireSlaveKeys`.

use std::cell::Cell;

thread_local! {
    /// Set on this thread while [`as_master`] runs.
    static AS_MASTER: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` as the master's client (module doc); nested calls keep the flag, and it is put
/// back when `f` ends or unwinds.
pub fn as_master<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            AS_MASTER.with(|m| m.set(self.0));
        }
    }
    let _restore = Restore(AS_MASTER.with(|m| m.replace(true)));
    f()
}

/// Whether this thread runs inside [`as_master`].
pub fn as_master_now() -> bool {
    AS_MASTER.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_holds_inside_only_and_survives_an_unwind() {
        assert!(!as_master_now());
        as_master(|| {
            assert!(as_master_now());
            as_master(|| assert!(as_master_now()));
            assert!(as_master_now());
        });
        assert!(!as_master_now());
        let r = std::panic::catch_unwind(|| as_master(|| panic!("inside")));
        assert!(r.is_err());
        assert!(!as_master_now());
    }
}
