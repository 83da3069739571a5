//! The nouns every stage shares: what a scenario says, what one request's record holds, which
//! metric a name means, what a run's result and a comparison contain, and the OpenAI wire
//! format. Data with its serde shape and small accessors only: the stages that make or read
//! these live in their own folders, and this one imports nothing of ours but `error`.

pub mod baseline;
pub mod comparison;
pub mod dataset;
pub mod diagnosis;
pub mod dist;
pub mod environment;
pub mod escape;
pub mod hist;
pub mod history;
pub mod metric;
pub mod quality;
pub mod readable;
pub mod record;
pub mod request_id;
pub mod result;
pub mod scenario;
pub mod selftest;
pub mod server;
pub mod shard;
pub mod stack;
pub mod summary;
pub mod sweep;
pub mod text;
pub mod trace;
pub mod values;
pub mod windows;
pub mod wire;
