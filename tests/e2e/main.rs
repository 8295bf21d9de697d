//! End-to-end tests: the real `verbgate` binary, real signed components
//! built from `plugins/`, real subprocesses. One test binary (fast to link),
//! one module per area.

mod argv;
mod audit_fails_closed;
mod authoring;
mod bounds;
mod cache;
mod cargo;
mod check;
mod display;
mod envelope;
mod eslint;
mod exec_read;
mod git;
mod git_remote;
mod git_write;
mod go;
mod golden;
mod guests;
mod help_gate;
mod home;
mod hostile;
mod hostile_repo;
mod http;
mod http_bounds;
mod install;
mod jest;
mod jobs;
mod jobs_bounds;
mod jobs_kill;
mod just;
mod load;
mod mcp;
mod mrtr;
mod npm;
mod policy;
mod pytest;
mod python_sdk;
mod rg;
mod ruff;
mod sandbox;
mod tasks;
mod trust;
mod tsc;
mod turns;
mod vitest;
