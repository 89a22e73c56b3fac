//! Integration tests, compiled into one binary to keep link time down.

mod decide_command;
mod decision_properties;
