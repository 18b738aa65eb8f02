//! contextfold core: plain Rust, no PyO3 types outside `python/`.
//!
//! One concept per module; the Python bindings live in `python/` behind the `python` feature.

// The wire readers' field names (`wire::input::keys!`) are declared by a macro that recurses once
// per name: past 128 names it needs more than the default limit.
#![recursion_limit = "256"]
#![deny(clippy::undocumented_unsafe_blocks)]

mod alnum_run;
pub mod bpe_count;
pub mod bpe_merge;
pub mod breakdown;
pub mod call_pairs;
pub mod changing_call;
pub mod char_cut;
pub mod client_tools;
pub mod compaction;
pub mod degrade;
pub mod digest;
pub mod edit_pricing;
pub mod encoding;
pub mod estimate;
pub mod exact;
pub mod fixed_needle;
pub mod helper_thread;
pub mod identifier_index;
pub mod image;
pub mod image_tokens;
pub mod json_string;
pub mod ledger;
pub mod mask_edit;
pub mod mask_plan;
pub mod media_header;
pub mod media_tokens;
pub mod message;
pub mod model_info;
pub mod pretokenize;
pub mod priced_request;
pub mod profile;
pub mod provider;
pub mod prune;
pub mod read_call;
pub mod recall;
pub mod repair;
pub mod request_extras;
pub mod request_settings;
pub mod server_call_span;
pub mod session_state;
pub mod shell_line;
pub mod shrink_json;
pub mod standing_rules;
pub mod summary_marker;
pub mod summary_placement;
pub mod summary_trust;
pub mod tail_walk;
pub mod text_stats;
pub mod tool_outcome;
pub mod tool_render;
pub mod transcript;
pub mod turn;
pub mod wire;

#[cfg(feature = "python")]
mod python;
