//! The network side: the listener and connection loop ([`listener`]) and background tasks
//! ([`tasks`]). The state they share with the commands is in [`crate::state`].

pub mod listener;
pub mod tasks;
