//! Integration tests, compiled into one binary to keep link time down.

mod article_behaviours;
mod browser;
mod charts;
mod contention;
mod controls;
mod decide_command;
mod decision_properties;
mod deploy_examples;
mod determinism;
mod examples;
mod fuzzing;
mod hedging;
mod imports;
mod incidents;
mod lessons;
mod output_folders;
mod overload;
mod queueing;
mod run_command;
mod scenario_errors;
mod support;
mod sweep_command;
mod tier_policies;
mod topologies;
mod topology_errors;
mod upstream_behaviours;
