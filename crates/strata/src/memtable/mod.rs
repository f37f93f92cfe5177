//! The memtable: an arena-backed concurrent skiplist of internal keys. (To be written.)
