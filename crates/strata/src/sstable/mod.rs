//! Sorted string tables. (To be written.)
