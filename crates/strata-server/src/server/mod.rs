//! The network side: the listener and connection loop ([`listener`]), the threads that serve
//! connections outside cluster mode ([`conn_threads`]) and background tasks ([`tasks`]). The
//! state they share with the commands is in [`crate::state`].

pub mod conn_threads;
pub mod listener;
pub mod tasks;
