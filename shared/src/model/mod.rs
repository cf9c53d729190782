//! The model the runtime modules are written against, and that the drivers (src/render/,
//! src/profile.rs, src/registry.rs) read: a job and its delivery ([`job`]), a runtime's record
//! ([`meta`]), its sandbox needs ([`needs`]) and what moot-doctor needs of it ([`doctor`]).
//!
//! It depends on no driver and no runtime, so `runtime/* → model ← drivers` has no cycle
//! (`shared/tests/architecture.rs` checks the whole module graph).

pub mod doctor;
pub mod job;
pub mod meta;
pub mod needs;

pub use doctor::{Certify, FakeHome};
pub use job::{
    nonblank, selector_problem, Action, Argv, Builder, Built, Declared, Delivery, Host, Job, Plan,
    Policy, Refusal, Selector, Staged,
};
pub use meta::{
    EffortRule, EnvAllowlist, Matrix, Meta, OnUnknown, Oversize, PromptRules, ROUTED_PROVIDER_KEYS,
};
pub use needs::{Access, Needs, Place, PROXY_VARS};
