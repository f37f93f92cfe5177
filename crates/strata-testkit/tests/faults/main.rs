//! The fault harnesses that may share a process: the kill -9 loop (its writer is a child
//! process), the I/O error loop (faults through its own `FaultFs`), the corruption matrix and
//! the fuzz corpora. The power-loss loop and the operations' crash loop set the process-global
//! kill points and keep test binaries of their own (`docs/reliability.md`).

mod corruption_matrix;
mod crash_loop;
mod fuzz_corpus;
mod io_error_loop;
