//! kernel model
