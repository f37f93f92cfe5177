//! The write-ahead log. (To be written.)
