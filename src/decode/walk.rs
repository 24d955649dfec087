//! The schema walk (being written).
